"""The driver's side: publishing device metadata on the node, with the CDI spec that mounts it.

This package owns what the Go kubelet plugin library
(``k8s.io/dynamic-resource-allocation/kubeletplugin``, Kubernetes v1.37) does for
a driver that enables device metadata, for drivers written in Python: the node
layout under the driver's plugin data directory (one file per claim and base
request), one CDI spec per file, the generations, the two ways an update reaches
a file, and the cleanup at unprepare; all of it as root, on a node whose inputs
come from whoever creates claims.

It is built in layers, each a module, each using only those above it here:

``_names``
    A claim's identity (:class:`ClaimRef`), the names of its files (lock, state,
    CDI spec, CDI device, CDI lock) and the checks of every name a call is given:
    what Kubernetes cannot give is refused before anything is opened.
``_call``
    One call: its label (the start of every error it raises, made once), its
    deadline, and its signals held back until its locks are let go.
``_lock`` and ``_state``
    The claim's lock (a ``flock`` on a file of its own) and its state (the
    highest generation of each request, kept across crashes), read under it.
``_node``
    The claim's files under the plugin data directory, each directory opened
    once per call through the link-safe directory layer (:mod:`.._safedir`).
``_cdi``
    The claim's CDI specs, under the claim's CDI lock in the shared CDI directory.
``_content``
    The object a file holds, encoded once and checked once as the readers read it.
``_publisher``
    :class:`MetadataPublisher`, the front that composes them.
"""

from ._lock import DEFAULT_LOCK_TIMEOUT
from ._names import POD_CLAIM_NAME_ANNOTATION, PUBLISHER_STATE_SUBDIR, ClaimRef
from ._publisher import DEFAULT_CDI_DIR, DEFAULT_PLUGINS_DIR, MetadataPublisher, UpdateMode

__all__ = [
    "DEFAULT_CDI_DIR",
    "DEFAULT_LOCK_TIMEOUT",
    "DEFAULT_PLUGINS_DIR",
    "POD_CLAIM_NAME_ANNOTATION",
    "PUBLISHER_STATE_SUBDIR",
    "ClaimRef",
    "MetadataPublisher",
    "UpdateMode",
]
