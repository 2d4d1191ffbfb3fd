"""Fake metadata trees for tests, written exactly as the Go kubelet plugin writes them.

Build claims, requests and devices in code, then :meth:`MetadataTree.write` them:
each (claim, request, driver) becomes one ``<driver>-metadata.json`` file in the
container layout, encoded with :func:`dra_metadata.encode` (byte for byte what
the Go writer produces), in the chosen API versions (``v1beta1`` then
``v1alpha1`` by default), files ``0644`` and directories ``0755``.

>>> import tempfile
>>> import dra_metadata as dm
>>> from dra_metadata.testing import MetadataTree
>>> with tempfile.TemporaryDirectory() as root:
...     tree = MetadataTree(root)
...     _ = tree.template_claim("gpu").request("gpu").device(
...         "gpu.example.com", "worker-0", "gpu-0", uuid="gpu-1234", index=0)
...     _ = tree.write()
...     md = dm.read_resource_claim_template("gpu", "gpu", root=root)
...     print(md.requests[0].devices[0].attribute("uuid"), md.sources[0].generation)
gpu-1234 1

What a test can do with a tree:

* :meth:`~MetadataTree.update` rewrites changed files with the generation bumped,
  in place (``mode="in-place"``: truncate and write the same inode, as Go v1.36
  does) or by rename (``mode="rename"``: a temporary file renamed over the old
  one, a new inode, as Go v1.37 does);
* :meth:`~MetadataTree.tear` leaves a file empty or half written, as a reader
  racing an in-place writer sees it;
* :meth:`~MetadataTree.remove` deletes a claim's files, as the plugin does at
  unprepare;
* :class:`MountedMetadataTree` writes the files where a kubelet plugin keeps them
  on the node, with their CDI specs, through :class:`~dra_metadata.MetadataPublisher`
  (the one implementation of the node layout), and applies each spec's mount in a
  container root, as a container engine does: a real read-only single-file bind
  mount (needs root; raises :class:`MountUnavailableError` where mounting is refused).

Keyword attributes are converted by kind: ``uuid="x"`` is a string, ``index=0``
an int, ``True`` a bool, a :class:`~dra_metadata.VersionValue` (or
:func:`version`) a version, a list the list form of its items' kind. Qualified
names go in ``attributes={"resource.kubernetes.io/pciBusID": "0000:3b:00.0"}``.

The pytest plugin (:mod:`dra_metadata.pytest_plugin`) hands a fresh tree to a test
as the ``dra_metadata_tree`` fixture, with ``DRA_METADATA_ROOT`` pointing at it.
"""

from __future__ import annotations

from typing import Final

from ._model import AttributeInput, to_attribute
from ._paths import NODE_METADATA_FILE, NODE_METADATA_SUBDIR
from ._testing_mounted import MountedMetadataTree, MountUnavailableError, check_mounts_possible
from ._testing_tree import (
    ClaimBuilder,
    DeviceBuilder,
    MetadataTree,
    RequestBuilder,
    WriteMode,
    make_dirs,
    version,
    write_file,
)

__all__ = [
    "HOST_METADATA_FILE",
    "HOST_METADATA_SUBDIR",
    "AttributeInput",
    "ClaimBuilder",
    "DeviceBuilder",
    "MetadataTree",
    "MountUnavailableError",
    "MountedMetadataTree",
    "RequestBuilder",
    "WriteMode",
    "check_mounts_possible",
    "make_dirs",
    "to_attribute",
    "version",
    "write_file",
]

#: Where a kubelet plugin keeps a claim's metadata files, below its plugin data directory.
HOST_METADATA_SUBDIR: Final = NODE_METADATA_SUBDIR
#: The name of a metadata file on the node (the container sees ``<driver>-metadata.json``).
HOST_METADATA_FILE: Final = NODE_METADATA_FILE
