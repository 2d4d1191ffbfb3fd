"""The driver's side: publishing device metadata on the node, with the CDI spec that mounts it.

This module owns what the Go kubelet plugin library
(``k8s.io/dynamic-resource-allocation/kubeletplugin``, Kubernetes v1.37) does for
a driver that enables device metadata, for drivers written in Python:

* the node layout under the driver's plugin data directory, one file per claim
  and base request::

      <plugin data dir>/dra-device-metadata/<namespace>_<claim>/<base request>/metadata.json

* one CDI spec per file, ``<cdi dir>/<driver>_metadata_<claim uid>_<base request>.json``:
  kind ``<driver>/metadata``, device ``<claim uid>_<base request>``, one read-only
  bind mount of that file onto the container path the readers use
  (:mod:`._paths` owns that layout), and the lowest ``cdiVersion`` its content needs;
* generations (1 at prepare, one more at every update), the two ways an update
  reaches the file (an atomic replace, as v1.37 writes; a rewrite of the same
  inode, as v1.36 did), and the cleanup at unprepare;
* running as root on a node whose inputs come from whoever creates claims:
  every directory below the two configured roots is opened, made, re-moded and
  removed relative to a directory descriptor, never through a link, and every
  file written crash-safely (:mod:`._safedir`, which the testing kit uses too);
  calls on one claim are serialised by a lock file, waited for no longer than
  ``lock_timeout`` (:mod:`._lockfile`), and a state file keeps the generations
  growing across crashes (both in ``<plugin data dir>/dra-metadata-publisher``,
  named within ``NAME_MAX`` for any claim); the CDI specs of a claim are written
  under a second lock, in the CDI directory, and a spec another publisher wrote
  (its mount names another plugin data directory) is refused, never overwritten
  or removed; no call lists the node-wide directories, so its cost does not grow
  with the number of claims; what a call accepts is what the readers accept,
  checked by the readers' own code.

The bytes of a file are :func:`~dra_metadata.encode`'s; names are checked as the
readers check them, as Kubernetes makes them, plus the rules CDI has for its names.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from ._encode import DEFAULT_VERSIONS, _go_escape, encode
from ._errors import (
    DecodeError,
    DRAMetadataError,
    InvalidNameError,
    MetadataNotFoundError,
    PublishError,
    os_reason,
)
from ._field_error import go_quote
from ._formats import (
    MAX_DRIVER_CHARACTERS,
    dns1123_label_messages,
    dns1123_subdomain_messages,
)
from ._lockfile import DEFAULT_LOCK_TIMEOUT, ClaimLock
from ._model import (
    AttributeInput,
    Device,
    DeviceAttribute,
    DeviceMetadata,
    DeviceMetadataRequest,
    NetworkDeviceData,
    ObjectMeta,
    to_attribute,
)
from ._paths import (
    CONTAINER_DIR,
    NODE_METADATA_FILE,
    NODE_METADATA_SUBDIR,
    check_name,
    request_base,
    resource_claim_file_path,
    resource_claim_template_file_path,
)
from ._read import DEFAULT_MAX_SIZE, decode_file
from ._safedir import TEMP_SUFFIX, SafeDir, made
from ._versions import API_VERSIONS, NEWEST

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

#: Where the kubelet plugin library writes CDI specs unless told otherwise.
DEFAULT_CDI_DIR: Final = "/var/run/cdi"
#: The directory whose ``<driver>`` subdirectory is a driver's default plugin data directory.
DEFAULT_PLUGINS_DIR: Final = "/var/lib/kubelet/plugins"
#: The ResourceClaim annotation naming the pod's claim, set on claims made from a template.
POD_CLAIM_NAME_ANNOTATION: Final = "resource.kubernetes.io/pod-claim-name"

#: The subdirectory of the plugin data directory where the publisher keeps, per claim,
#: its lock file (``<namespace>_<claim>.lock``) and state file (``<namespace>_<claim>.state``):
#: a sibling of ``dra-device-metadata``, where no reader and no CDI spec looks. A
#: ``<namespace>_<claim>`` too long for those names is shortened, see
#: :meth:`MetadataPublisher.lock_path`.
PUBLISHER_STATE_SUBDIR: Final = "dra-metadata-publisher"

#: How :meth:`MetadataPublisher.update` rewrites a file: ``"replace"`` writes a temporary
#: file and renames it over the old one (Go v1.37: atomic, a new inode); ``"in-place"``
#: truncates and writes the same inode (Go v1.36: running containers see it).
UpdateMode: TypeAlias = Literal["replace", "in-place"]

_UPDATE_MODES: Final = ("replace", "in-place")
_CDI_CLASS: Final = "metadata"
_CDI_SUFFIX: Final = ".json"
_LOCK_SUFFIX: Final = ".lock"
_STATE_SUFFIX: Final = ".state"
_INT64_MAX: Final = 2**63 - 1
_NAME_MAX: Final = 255
#: The longest ``<namespace>_<claim>`` the lock and state names keep whole: with the
#: state's temporary (``.<stem>.state.tmp``) it is NAME_MAX.
_STEM_MAX: Final = _NAME_MAX - len(f".{_STATE_SUFFIX}{TEMP_SUFFIX}")
#: What a shortened stem keeps of ``<namespace>_<claim>``, before ``_<40 hex digits>``.
_STEM_KEEP: Final = 200
#: A state file holds a few lines per request; a larger one is not the publisher's.
_STATE_LIMIT: Final = 1 << 20
#: A CDI spec the publisher writes is about 1 KiB; a larger one is no publisher's.
_SPEC_LIMIT: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """The identity of a ResourceClaim, as the publisher needs it.

    ``pod_claim_name`` is the value of the claim's
    ``resource.kubernetes.io/pod-claim-name`` annotation (the claim's name in the
    pod spec), set when the claim was made from a ResourceClaimTemplate; ``None``
    when the annotation is absent. Every name is checked as the readers check
    names (:class:`~dra_metadata.InvalidNameError`); the publisher's calls also
    refuse names Kubernetes cannot give (DNS labels and subdomains, no ``_``).

    >>> claim = ClaimRef(name="pod-gpu-x7k2p", namespace="ml", uid="c7e7", pod_claim_name="gpu")
    >>> claim.directory, claim.from_template
    ('ml_pod-gpu-x7k2p', True)
    """

    #: The ResourceClaim's name.
    name: str
    #: The ResourceClaim's namespace.
    namespace: str
    #: The ResourceClaim's UID.
    uid: str
    #: The claim's name in the pod spec (its ``resource.kubernetes.io/pod-claim-name``
    #: annotation) when it was made from a template; ``None`` otherwise.
    pod_claim_name: str | None = None

    def __post_init__(self) -> None:
        check_name("claim", self.name)
        check_name("namespace", self.namespace)
        check_name("claim UID", self.uid)
        if self.pod_claim_name is not None and self.pod_claim_name != "":
            # An empty annotation is kept in the file but places it under resourceclaims/.
            check_name("pod claim", self.pod_claim_name)

    @classmethod
    def from_resource_claim(cls, claim: Mapping[str, Any]) -> ClaimRef:
        """The reference to a ResourceClaim given in its wire form (a dict of its JSON).

        >>> ClaimRef.from_resource_claim({"metadata": {
        ...     "name": "pod-gpu-x", "namespace": "ml", "uid": "u-1",
        ...     "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"}}})
        ClaimRef(name='pod-gpu-x', namespace='ml', uid='u-1', pod_claim_name='gpu')
        """
        meta = claim.get("metadata") if isinstance(claim, Mapping) else None
        if not isinstance(meta, Mapping):
            raise InvalidNameError("a ResourceClaim needs a metadata object")
        annotations = meta.get("annotations") or {}
        pod_claim_name = (
            annotations.get(POD_CLAIM_NAME_ANNOTATION) if isinstance(annotations, Mapping) else None
        )
        return cls(
            name=meta.get("name", ""),
            namespace=meta.get("namespace", ""),
            uid=meta.get("uid", ""),
            pod_claim_name=pod_claim_name,
        )

    @property
    def directory(self) -> str:
        """The claim's directory on the node: ``<namespace>_<name>``."""
        return f"{self.namespace}_{self.name}"

    @property
    def from_template(self) -> bool:
        """Whether containers find the claim under ``resourceclaimtemplates/``."""
        return bool(self.pod_claim_name)


class _NameRefused(InvalidNameError, PublishError):
    """A name no Kubernetes object can have, refused by the publisher (both error kinds)."""


class _NotPrepared(MetadataNotFoundError, PublishError):
    """An update of a request that is not prepared (both error kinds)."""


class _Undecodable(DecodeError, PublishError):
    """A metadata file whose generation is needed and that does not decode (both error kinds)."""


class MetadataPublisher:
    """Writes a driver's device metadata on the node as the Go kubelet plugin does (v1.37).

    ``plugin_data_dir`` defaults to ``/var/lib/kubelet/plugins/<driver>``,
    ``cdi_dir`` to ``/var/run/cdi`` (both made absolute: a CDI mount needs an
    absolute host path). ``driver`` must be a lower-case DNS subdomain of at most
    63 characters that is also a valid CDI vendor. ``versions`` are the API
    versions every file holds, in that order; as in Go, they must be named, be
    ones this library writes, and include ``v1beta1``
    (:class:`~dra_metadata.PublishError` otherwise). ``lock_timeout`` bounds, in
    seconds, every wait for a claim's locks (30 by default); past it the call
    raises a :class:`~dra_metadata.PublishError` that names the lock file and the
    process holding it.

    Call :meth:`prepare` for each request of a claim that got devices (at
    ``NodePrepareResources``) and hand the CDI device name it returns to the
    kubelet; :meth:`update` when data known only later (network) is there;
    :meth:`unprepare` at ``NodeUnprepareResources``. Calls on one claim are
    serialised across threads and processes by a lock file, and what a call
    accepts is what every reader accepts (see docs/driver.md). Every failure of
    a call is a :class:`~dra_metadata.PublishError`.

    >>> import tempfile, dra_metadata as dm
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     pub = dm.MetadataPublisher("gpu.example.com", plugin_data_dir=f"{tmp}/plugin",
    ...                                cdi_dir=f"{tmp}/cdi")
    ...     claim = dm.ClaimRef(name="pod0-gpu-x", namespace="ml", uid="c7e7",
    ...                         pod_claim_name="gpu")
    ...     gpu = pub.device("worker-0", "gpu-0", attributes={"uuid": "GPU-1", "index": 0})
    ...     print(pub.prepare(claim, "gpu", [gpu]))
    ...     print(pub.update(claim, "gpu", [gpu], mode="in-place").metadata.generation)
    ...     pub.unprepare(claim)
    gpu.example.com/metadata=c7e7_gpu
    2
    """

    def __init__(
        self,
        driver: str,
        *,
        plugin_data_dir: str | os.PathLike[str] | None = None,
        cdi_dir: str | os.PathLike[str] = DEFAULT_CDI_DIR,
        versions: Iterable[str] = DEFAULT_VERSIONS,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        check_name("driver", driver)
        _check_dns("driver", driver, subdomain=True, limit=MAX_DRIVER_CHARACTERS)
        _check_cdi_vendor(driver)
        self.driver: Final = driver
        if plugin_data_dir is None:
            plugin_data_dir = os.path.join(DEFAULT_PLUGINS_DIR, driver)
        #: The driver's data directory on the node (absolute).
        self.plugin_data_dir: Final = os.path.abspath(os.fspath(plugin_data_dir))
        #: The directory the container runtime reads CDI specs from (absolute).
        self.cdi_dir: Final = os.path.abspath(os.fspath(cdi_dir))
        #: The API versions every file holds, in order.
        self.versions: Final = _check_versions(versions)
        #: How long, in seconds, a call waits for a claim's lock before it fails.
        self.lock_timeout: Final = _check_timeout(lock_timeout)

    def __repr__(self) -> str:
        return (
            f"MetadataPublisher({self.driver!r}, plugin_data_dir={self.plugin_data_dir!r}, "
            f"cdi_dir={self.cdi_dir!r})"
        )

    # --- where things are ---------------------------------------------------------------

    def claim_dir(self, claim: ClaimRef) -> str:
        """The node directory of all of ``claim``'s files (what :meth:`unprepare` removes)."""
        return os.path.join(self.plugin_data_dir, NODE_METADATA_SUBDIR, _claim(claim).directory)

    def metadata_path(self, claim: ClaimRef, request: str) -> str:
        """The node-side file of ``request`` (``req`` or ``req/sub``: the file of ``req``).

        >>> pub = MetadataPublisher("gpu.example.com")
        >>> pub.metadata_path(ClaimRef(name="c", namespace="ns", uid="u"), "gpu/high-memory")
        '/var/lib/kubelet/plugins/gpu.example.com/dra-device-metadata/ns_c/gpu/metadata.json'
        """
        return os.path.join(self.claim_dir(claim), request_base(request), NODE_METADATA_FILE)

    def lock_path(self, claim: ClaimRef) -> str:
        """The lock file that serialises calls on ``claim``: ``<state dir>/<ns>_<claim>.lock``.

        It sits in ``dra-metadata-publisher`` in the plugin data directory,
        where neither readers nor container engines look, and exists while a call
        runs or the claim is prepared. When ``<ns>_<claim>`` is longer than 244
        characters (a name and its temporary must fit in 255), the lock and state
        names keep its first 200 and add ``_`` and 40 hex digits of its SHA-256
        (a second ``_``: no whole name looks like that).

        >>> pub = MetadataPublisher("gpu.example.com", plugin_data_dir="/p")
        >>> pub.lock_path(ClaimRef(name="c", namespace="ns", uid="u"))
        '/p/dra-metadata-publisher/ns_c.lock'
        >>> long = ClaimRef(name="c" * 253, namespace="ns", uid="u")
        >>> name = os.path.basename(pub.lock_path(long))
        >>> len(name), name.count("_")
        (246, 2)
        """
        name = f"{_file_stem(_claim(claim))}{_LOCK_SUFFIX}"
        return os.path.join(self.plugin_data_dir, PUBLISHER_STATE_SUBDIR, name)

    def state_path(self, claim: ClaimRef) -> str:
        """The file that keeps ``claim``'s highest generations: ``<state dir>/<ns>_<claim>.state``.

        Written atomically before each metadata file, removed by :meth:`unprepare`
        (whatever it holds: no call needs it to remove a claim's files). Named as
        :meth:`lock_path` says.
        """
        name = f"{_file_stem(_claim(claim))}{_STATE_SUFFIX}"
        return os.path.join(self.plugin_data_dir, PUBLISHER_STATE_SUBDIR, name)

    def cdi_lock_path(self, claim: ClaimRef) -> str:
        """The lock over ``claim``'s CDI specs: ``<cdi dir>/.<driver>_metadata_<uid>.lock``.

        Every publisher of the driver that writes to this CDI directory takes it
        (after :meth:`lock_path`), whatever its plugin data directory. Hidden, and
        not a ``.json`` or ``.yaml`` file, the only ones CDI reads. The first call on
        the claim makes it; an :meth:`unprepare` that leaves no spec of the claim
        removes it.
        """
        return os.path.join(self.cdi_dir, self._cdi_lock_name(_claim(claim)))

    def _cdi_lock_name(self, claim: ClaimRef) -> str:
        return f".{self.driver}_{_CDI_CLASS}_{claim.uid}{_LOCK_SUFFIX}"

    def container_path(self, claim: ClaimRef, request: str) -> str:
        """Where containers read the file: the CDI mount's ``containerPath``.

        >>> claim = ClaimRef(name="c", namespace="ns", uid="u", pod_claim_name="gpu")
        >>> print(MetadataPublisher("gpu.example.com").container_path(claim, "gpu"))
        /var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/gpu/gpu/gpu.example.com-metadata.json
        """
        claim = _claim(claim)
        if claim.pod_claim_name:
            return resource_claim_template_file_path(
                self.driver, claim.pod_claim_name, request, root=CONTAINER_DIR
            )
        return resource_claim_file_path(self.driver, claim.name, request, root=CONTAINER_DIR)

    def cdi_device_name(self, claim: ClaimRef, request: str) -> str:
        """The device's name in the CDI spec: ``<claim uid>_<base request>``."""
        name = f"{_claim(claim).uid}_{request_base(request)}"
        _check_cdi_device_name(name)
        return name

    def cdi_device(self, claim: ClaimRef, request: str) -> str:
        """The fully qualified CDI device name: ``<driver>/metadata=<claim uid>_<base request>``.

        >>> MetadataPublisher("gpu.example.com").cdi_device(
        ...     ClaimRef(name="c", namespace="ns", uid="c7e7"), "gpu")
        'gpu.example.com/metadata=c7e7_gpu'
        """
        return f"{self.driver}/{_CDI_CLASS}={self.cdi_device_name(claim, request)}"

    def _cdi_spec_name(self, claim: ClaimRef, request: str) -> str:
        return f"{self.driver}_{_CDI_CLASS}_{self.cdi_device_name(claim, request)}{_CDI_SUFFIX}"

    def cdi_spec_path(self, claim: ClaimRef, request: str) -> str:
        """The CDI spec file of ``request``: ``<cdi dir>/<driver>_metadata_<uid>_<base>.json``."""
        return os.path.join(self.cdi_dir, self._cdi_spec_name(claim, request))

    def cdi_spec(self, claim: ClaimRef, request: str) -> dict[str, Any]:
        """The CDI spec :meth:`prepare` writes for ``request``, as a dict.

        One device, one read-only bind mount of the node file, and the lowest
        ``cdiVersion`` that content needs (``0.5.0`` when the device name starts
        with a digit, as claim UIDs often do; else ``0.3.0``).

        >>> spec = MetadataPublisher("gpu.example.com", plugin_data_dir="/p").cdi_spec(
        ...     ClaimRef(name="c", namespace="ns", uid="7e57"), "gpu")
        >>> spec["cdiVersion"], spec["kind"], spec["devices"][0]["name"]
        ('0.5.0', 'gpu.example.com/metadata', '7e57_gpu')
        >>> spec["devices"][0]["containerEdits"]["mounts"][0]["options"]
        ['ro', 'bind']
        """
        name = self.cdi_device_name(claim, request)
        mount = {
            "hostPath": self.metadata_path(claim, request),
            "containerPath": self.container_path(claim, request),
            "options": ["ro", "bind"],
        }
        return {
            "cdiVersion": _cdi_version(name),
            "kind": f"{self.driver}/{_CDI_CLASS}",
            "devices": [{"name": name, "containerEdits": {"mounts": [mount]}}],
            # Go writes the CDI library's Spec type, whose top-level containerEdits is a
            # struct: omitempty never drops it, so every Go spec ends with it, empty.
            "containerEdits": {},
        }

    # --- building -----------------------------------------------------------------------

    def device(
        self,
        pool: str,
        name: str,
        *,
        attributes: Mapping[str, AttributeInput] | None = None,
        network_data: NetworkDeviceData | None = None,
    ) -> Device:
        """A :class:`~dra_metadata.Device` of this driver, to pass to :meth:`prepare`.

        Attributes may be plain values, converted as the testing kit converts them
        (:func:`~dra_metadata.testing.to_attribute`: ``"GPU-1"`` a string, ``0`` an
        int, ``True`` a bool), or :class:`~dra_metadata.DeviceAttribute`. What no
        reader would accept is refused here: ``TypeError`` for a value of no
        attribute kind, :class:`~dra_metadata.PublishError` for the rest (an int
        outside int64, a device that does not validate or lint clean).

        >>> pub = MetadataPublisher("gpu.example.com")
        >>> pub.device("worker-0", "gpu-0", attributes={"n": 1}).attributes
        {'n': DeviceAttribute(int=1)}
        """
        converted: dict[str, DeviceAttribute] = {}
        if attributes is not None and not isinstance(attributes, Mapping):
            raise TypeError(f"attributes must be a mapping, not {type(attributes).__name__}")
        for key, value in (attributes or {}).items():
            if not isinstance(key, str):
                raise TypeError(f"attribute names must be strings, not {type(key).__name__}")
            try:
                converted[key] = to_attribute(value)
            except ValueError as err:
                raise PublishError(f"attribute {key!r} of device {pool}/{name}: {err}") from None
        if network_data is not None and not isinstance(network_data, NetworkDeviceData):
            raise TypeError(
                f"network_data must be a NetworkDeviceData, not {type(network_data).__name__}"
            )
        device = Device(self.driver, pool, name, attributes=converted, network_data=network_data)
        probe = DeviceMetadata(
            metadata=ObjectMeta(name="probe", namespace="probe", uid="probe", generation=1),
            requests=(DeviceMetadataRequest("probe", (device,)),),
        )
        self._accept(probe, f"device {pool!r}/{name!r}")
        return device

    def metadata(
        self,
        claim: ClaimRef,
        request: str,
        devices: Iterable[Device],
        *,
        generation: int = 1,
        pod_claim_name: str | None = None,
    ) -> DeviceMetadata:
        """The object a file of ``request`` holds, as the kubelet plugin builds it.

        The claim's name, namespace, UID and ``generation``; ``podClaimName``
        (``pod_claim_name``, default the claim's); one request with its full name
        (``req/sub`` included) and ``devices`` in the order given.
        """
        claim = _claim(claim)
        request_base(request)
        listed = self._devices(devices)
        return DeviceMetadata(
            metadata=ObjectMeta(
                name=claim.name, namespace=claim.namespace, uid=claim.uid, generation=generation
            ),
            pod_claim_name=claim.pod_claim_name if pod_claim_name is None else pod_claim_name,
            requests=(DeviceMetadataRequest(request, listed),),
        )

    def _devices(self, devices: Iterable[Device]) -> tuple[Device, ...]:
        if isinstance(devices, Device) or not isinstance(devices, Iterable):
            raise PublishError(f"devices must be a list of Device objects, not {devices!r}")
        listed = tuple(devices)
        for device in listed:
            if not isinstance(device, Device):
                raise PublishError(f"devices must be Device objects, not {device!r}")
            if device.driver != self.driver:
                raise PublishError(
                    f"device {device.pool}/{device.name} is from driver {device.driver!r}; "
                    f"this publisher writes the metadata of {self.driver!r} only"
                )
        return listed

    def _encode(self, md: DeviceMetadata) -> bytes:
        try:
            return encode(md, self.versions)
        except (TypeError, ValueError) as err:
            raise PublishError(f"encode metadata: {err}") from err

    def _accept(self, md: DeviceMetadata, what: str) -> bytes:
        """The bytes of ``md``, if every reader takes them as they are; else PublishError.

        The readers' own answers: the size limit of :func:`~dra_metadata.read_file`,
        :func:`~dra_metadata.decode` (which must give back ``md``, and
        :func:`~dra_metadata.encode` of that the same bytes),
        :func:`~dra_metadata.validate` and :func:`~dra_metadata.lint`.
        """
        from ._lint import lint
        from ._read import decode
        from ._validate import validate

        data = self._encode(md)
        if len(data) > DEFAULT_MAX_SIZE:
            raise PublishError(
                f"{what}: the file would be {len(data)} bytes; readers refuse files over "
                f"{DEFAULT_MAX_SIZE} bytes"
            )
        try:
            decoded = decode(data)
        except DecodeError as err:
            raise PublishError(f"{what}: readers could not decode the file: {err}") from None
        if decoded.wire_body() != md.wire_body() or self._encode(decoded) != data:
            raise PublishError(
                f"{what}: the file would not read back as given (a string that is not valid "
                "UTF-8, such as a lone surrogate, or a value of the wrong kind)"
            )
        errors = validate(decoded)
        if errors:
            raise PublishError(f"{what}: readers would refuse the file: {errors[0]}")
        problems = lint(data)
        if problems:
            first = problems[0]
            raise PublishError(f"{what}: lint finds {first.code} at {first.field}: {first.message}")
        return data

    def _checked(self, claim: ClaimRef, request: str | None = None) -> tuple[ClaimRef, str]:
        """``claim`` and ``request``'s base, if Kubernetes could have made them; else refused."""
        claim = _claim(claim)
        _check_dns("claim", claim.name, subdomain=True)
        _check_dns("namespace", claim.namespace)
        _check_dns("claim UID", claim.uid)
        if claim.pod_claim_name:
            _check_dns("pod claim", claim.pod_claim_name)
        if request is None:
            return claim, ""
        base = request_base(request)
        _check_dns("request", base)
        if "/" in request:
            _check_dns("subrequest", request.partition("/")[2])
        return claim, base

    # --- the three calls ------------------------------------------------------------------

    def prepare(self, claim: ClaimRef, request: str, devices: Iterable[Device]) -> str:
        """Write ``request``'s metadata file and its CDI spec; return the CDI device.

        ``request`` is the request's full name (``gpu`` or ``gpu/high-memory``);
        the file is the base request's. Both files are replaced atomically. The
        generation is 1, or, when the claim is still prepared (a second prepare
        after a kubelet restart, or after a failed update), one more than any it
        has had (the state's, or the file's when the state cannot be read). A
        request needs at least one device: the Go library writes no file for a
        request without devices.

        Returns ``<driver>/metadata=<claim uid>_<base request>``, the name to add
        to the CDI device IDs the driver returns to the kubelet. A CDI spec of that
        name that another publisher wrote (its mount is not this publisher's file)
        is refused: nothing is written.
        """
        claim, base = self._checked(claim, request)
        cdi_device = self.cdi_device(claim, request)
        listed = self._devices(devices)
        if not listed:
            raise PublishError(
                f"request {go_quote(request)} of claim {claim.namespace}/{claim.name} has no "
                "devices: the kubelet plugin writes no metadata for such a request"
            )
        what = f"prepare {claim.namespace}/{claim.name} request {go_quote(request)}"
        _check_fits(claim, self.claim_dir(claim), what)
        data = self._accept(self.metadata(claim, request, listed), what)
        with (
            _publish_errors("prepare"),
            self._locked(claim, "prepare") as held,
            self._cdi_locked(claim, "prepare", held.deadline, create=True) as cdi,
        ):
            assert cdi is not None  # created
            self._refuse_foreign_spec(cdi.dir, claim, request, what)
            state = held.state(what)
            last, _, _ = self._last_generation(state, claim, request)
            generation = _next(last + 1, what)
            if generation != 1:
                md = self.metadata(claim, request, listed, generation=generation)
                data = self._accept(md, what)
            state.record(base, generation, claim.pod_claim_name)
            self._write_metadata(claim, request, data, "replace")
            self._write_cdi_spec(claim, request, cdi.dir)
        return cdi_device

    def update(
        self,
        claim: ClaimRef,
        request: str,
        devices: Iterable[Device],
        *,
        mode: UpdateMode = "replace",
    ) -> DeviceMetadata:
        """Write ``request``'s file again with ``devices``, the generation one more; return it.

        For data known only after prepare, typically network data at the NRI
        ``RunPodSandbox`` hook. The whole stream is written again (the device list
        is replaced, not merged); ``podClaimName`` stays what the file had, as in Go.
        The generation is one more than the highest the request has had since it
        was prepared (kept in :meth:`state_path`), so an update after a crash that
        left the file empty still goes up. A state that cannot be read is left
        aside (and logged): the file's generation counts.

        ``mode="replace"`` (the default, as Go v1.37) renames a new file over the
        old: atomic, but a container already running keeps seeing the old file.
        ``mode="in-place"`` (as Go v1.36) truncates and writes the same inode:
        running containers see it, and a reader can catch it half written.

        Raises :class:`~dra_metadata.MetadataNotFoundError` when the request is
        not prepared (also when :meth:`unprepare` won the race), and
        :class:`~dra_metadata.DecodeError` when the file does not decode and no
        state says its generation; both are also
        :class:`~dra_metadata.PublishError`, as every other failure is.
        """
        if mode not in _UPDATE_MODES:
            raise PublishError(f"mode must be one of {', '.join(_UPDATE_MODES)}, not {mode!r}")
        claim, base = self._checked(claim, request)
        listed = self._devices(devices)
        what = f"update {claim.namespace}/{claim.name} request {go_quote(request)}"
        self._accept(self.metadata(claim, request, listed), what)
        path = self.metadata_path(claim, request)
        with _publish_errors("update"), self._locked(claim, "update") as held:
            state = held.state(what)
            last, pod_claim_name, found = self._last_generation(state, claim, request)
            if not found:  # before the CDI lock: a call that fails leaves no trace there
                raise _NotPrepared(
                    f"request {go_quote(request)} not found in prepared claim "
                    f"{claim.namespace}/{claim.name}",
                    path=path,
                )
            with self._cdi_locked(claim, "update", held.deadline, create=False) as cdi:
                if cdi is not None:  # what a prepare killed midway left there
                    for name in self._prepared_bases(claim):
                        cdi.dir.remove_temporary(self._cdi_spec_name(claim, name))
            md = self.metadata(
                claim,
                request,
                listed,
                generation=_next(last + 1, what),
                pod_claim_name=pod_claim_name,
            )
            data = self._accept(md, what)
            state.record(base, last + 1, pod_claim_name)
            self._write_metadata(claim, request, data, mode)
        return md

    def unprepare(self, claim: ClaimRef) -> None:
        """Remove every metadata file of ``claim``, their directories, and their CDI specs.

        Only what this publisher writes is removed: ``<request>/metadata.json``
        files, their directories, the claim's directory, the CDI specs
        ``<driver>_metadata_<uid>_<request>.json`` of the requests found there
        (or named by the state) whose mount is this publisher's file, temporaries
        of interrupted writes, and the claim's state, whatever it holds. Anything
        else found in the claim's directory is left and named in a
        :class:`~dra_metadata.PublishError`. Removing what is not there is no error,
        so calling it twice is fine.
        """
        claim, _ = self._checked(claim)
        what = "clean up device metadata"
        with _publish_errors(what), self._locked(claim, "unprepare", create=False) as held:
            if held.own is None:  # nothing was ever written here
                return
            bases = sorted(set(self._prepared_bases(claim)) | held.recorded_bases())
            with self._cdi_locked(claim, what, held.deadline, create=False) as cdi:
                if cdi is not None:
                    cdi.remove_lock = self._remove_specs(cdi.dir, claim, bases)
            left = self._remove_claim_files(claim)
            held.forget()
        if left:
            raise PublishError(
                f"clean up device metadata: left {', '.join(left)}: not written by this publisher",
                path=left[0],
            )

    # --- the locks and the state ------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, claim: ClaimRef, what: str, *, create: bool = True) -> Iterator[_Held]:
        """Hold ``claim``'s lock (created if needed); clean temporaries; remove it when unused.

        The lock file goes at the end of the call when the claim has no state (the
        claim is not prepared): the next call makes it again.
        """
        deadline = time.monotonic() + self.lock_timeout
        root = SafeDir.open_root(self.plugin_data_dir, what, create=create)
        if root is None:  # nothing was ever written here (unprepare only)
            yield _Held(None, claim, deadline)
            return
        with root, made(root.child(PUBLISHER_STATE_SUBDIR, create=True)) as own:
            lock = ClaimLock(own, f"{_file_stem(claim)}{_LOCK_SUFFIX}")
            lock.acquire(deadline=deadline, timeout=self.lock_timeout)
            held = _Held(own, claim, deadline)
            try:
                own.remove_temporary(held.state_name)
                self._clean_requests(claim, what)
                yield held
            finally:
                try:
                    unused = own.lstat(held.state_name) is None
                finally:
                    lock.release(remove=unused)

    @contextlib.contextmanager
    def _cdi_locked(
        self, claim: ClaimRef, what: str, deadline: float, *, create: bool
    ) -> Iterator[_CdiHeld | None]:
        """Hold ``claim``'s lock in the CDI directory (None: no CDI directory, not ``create``)."""
        cdi = SafeDir.open_root(self.cdi_dir, what, create=create)
        if cdi is None:
            yield None
            return
        with cdi:
            lock = ClaimLock(cdi, self._cdi_lock_name(claim))
            lock.acquire(deadline=deadline, timeout=self.lock_timeout)
            held = _CdiHeld(cdi)
            try:
                yield held
            except BaseException:
                # A failed call: the lock goes if the claim has no spec (known requests).
                with contextlib.suppress(PublishError):
                    held.remove_lock = not any(
                        cdi.lstat(self._cdi_spec_name(claim, base)) is not None
                        for base in self._prepared_bases(claim)
                    )
                raise
            finally:
                lock.release(remove=held.remove_lock)

    def _last_generation(
        self, state: _State, claim: ClaimRef, request: str
    ) -> tuple[int, str | None, bool]:
        """The highest generation ``request`` has had, the podClaimName to keep, and whether
        its file exists.

        The highest of the state's (when it could be read) and the file's (when it
        decodes); a file that does not decode with no generation in the state is a
        :class:`DecodeError` (also a :class:`PublishError`) that says how to go on.
        """
        base = request_base(request)
        path = self.metadata_path(claim, request)
        recorded = state.requests.get(base)
        found = self._existing(claim, base)
        previous: DeviceMetadata | None = None
        if found is not None:
            try:
                previous = decode_file(path, found)
            except DecodeError as err:
                if recorded is None:  # nothing says where it was
                    why = state.problem or "and the publisher's state has no generation for it"
                    raise _Undecodable(
                        f"decode existing metadata: {err}; {why}: the next generation is "
                        "unknown; unprepare the claim (or remove the file) to start again "
                        "at generation 1",
                        path=path,
                    ) from None
        generation = recorded[0] if recorded is not None else 0
        if previous is not None:  # another writer may have gone further: go on above it
            generation = max(generation, previous.metadata.generation)
        if recorded is not None:
            pod_claim_name = recorded[1]
        elif previous is not None:
            pod_claim_name = previous.pod_claim_name
        else:
            pod_claim_name = claim.pod_claim_name
        return generation, pod_claim_name, found is not None

    def _existing(self, claim: ClaimRef, base: str) -> bytes | None:
        """The bytes of ``base``'s file (None when it or a directory is missing)."""
        found = self._request_dir(claim, base, "read metadata file", create=False)
        if found is None:
            return None
        with found:
            return found.read(NODE_METADATA_FILE)

    def _request_dir(
        self, claim: ClaimRef, base: str, what: str, *, create: bool
    ) -> SafeDir | None:
        claim_dir = self._claim_dir(claim, what, create=create)
        if claim_dir is None:
            return None
        with claim_dir:
            return claim_dir.child(base, create=create)

    def _claim_dir(self, claim: ClaimRef, what: str, *, create: bool) -> SafeDir | None:
        root = SafeDir.open_root(self.plugin_data_dir, what, create=create)
        if root is None:
            return None
        with root:
            top = root.child(NODE_METADATA_SUBDIR, create=create)
        if top is None:
            return None
        with top:
            return top.child(claim.directory, create=create)

    def _prepared_bases(self, claim: ClaimRef) -> list[str]:
        """The base requests with a directory in the claim's directory (no other listing)."""
        claim_dir = self._claim_dir(claim, "clean up device metadata", create=False)
        if claim_dir is None:
            return []
        with claim_dir:
            return [name for name in claim_dir.names() if _is_label(name)]

    def _clean_requests(self, claim: ClaimRef, what: str) -> None:
        """Remove temporaries of interrupted writes in the claim's request directories."""
        claim_dir = self._claim_dir(claim, what, create=False)
        if claim_dir is None:
            return
        with claim_dir:
            for name in claim_dir.names():
                if not _is_label(name):
                    continue
                request_dir = claim_dir.child(name, create=False, strict=False)
                if request_dir is not None:
                    with request_dir:
                        request_dir.remove_temporaries(NODE_METADATA_FILE)

    def _spec_owner(self, cdi: SafeDir, name: str) -> str | None:
        """The file the spec ``name`` mounts (None: no spec, or not one a publisher wrote)."""
        info = cdi.lstat(name)
        if info is None or not stat.S_ISREG(info.st_mode) or info.st_size > _SPEC_LIMIT:
            return None
        data = cdi.read(name, limit=_SPEC_LIMIT)
        return None if data is None else _spec_host_path(data)

    def _is_mine(self, host_path: str, claim: ClaimRef, base: str) -> bool:
        """Whether a spec mounting ``host_path`` is this publisher's spec of ``base``."""
        mine = self.metadata_path(claim, base)
        if os.path.normpath(host_path) == mine:
            return True
        try:  # the same directory reached by another spelling (a link in the configured root)
            return os.path.samefile(os.path.dirname(host_path), os.path.dirname(mine))
        except (OSError, ValueError):
            return False

    def _refuse_foreign_spec(self, cdi: SafeDir, claim: ClaimRef, request: str, what: str) -> None:
        """Refuse to write a spec that another publisher of the driver wrote."""
        base = request_base(request)
        name = self._cdi_spec_name(claim, request)
        host_path = self._spec_owner(cdi, name)
        if host_path is None or self._is_mine(host_path, claim, base):
            return
        path = os.path.join(cdi.path, name)
        theirs = host_path.partition(f"{os.sep}{NODE_METADATA_SUBDIR}{os.sep}")[0]
        raise PublishError(
            f"{what}: {path}: written by another publisher of {self.driver}: it mounts "
            f"{host_path}, not {self.metadata_path(claim, base)}; two publishers of one driver "
            f"(plugin data directories {theirs} and {self.plugin_data_dir}) share the CDI "
            f"directory {self.cdi_dir}: give them one plugin data directory, or each its own "
            "CDI directory",
            path=path,
        )

    def _remove_specs(self, cdi: SafeDir, claim: ClaimRef, bases: Iterable[str]) -> bool:
        """Remove the claim's specs of ``bases`` that are this publisher's; True if none is left.

        A directory or link with a spec's name was not written here and stays, as
        does another publisher's spec (its mount is not this publisher's file).
        """
        none_left = True
        for base in bases:
            name = self._cdi_spec_name(claim, base)
            cdi.remove_temporary(name)
            host_path = self._spec_owner(cdi, name)
            if host_path is not None and not self._is_mine(host_path, claim, base):
                none_left = False
                _log_kept(os.path.join(cdi.path, name), host_path)
                continue
            cdi.unlink_regular(name)
        return none_left

    def _remove_claim_files(self, claim: ClaimRef) -> list[str]:
        """Remove the claim's metadata files and directories; return what else was there."""
        what = "clean up device metadata"
        left: list[str] = []
        claim_dir = self._claim_dir(claim, what, create=False)
        if claim_dir is None:
            return left
        with claim_dir:
            for name in claim_dir.names():
                request_dir = claim_dir.child(name, create=False, strict=False)
                if request_dir is None or not _is_label(name):
                    if request_dir is not None:
                        request_dir.close()
                    left.append(os.path.join(claim_dir.path, name))
                    continue
                with request_dir:
                    request_dir.remove_temporaries(NODE_METADATA_FILE)
                    request_dir.unlink_regular(NODE_METADATA_FILE)
                    others = [os.path.join(request_dir.path, n) for n in request_dir.names()]
                if others:
                    left.extend(others)
                else:
                    claim_dir.rmdir(name)
            if not left:
                claim_dir.remove_self()
        return left

    # --- writing (also used by the testing kit) -------------------------------------------------

    def _write_metadata(self, claim: ClaimRef, request: str, data: bytes, mode: UpdateMode) -> str:
        """Write the bytes of ``request``'s node file, directories first (internal)."""
        path = self.metadata_path(claim, request)
        claim = _claim(claim)
        request_dir = self._request_dir(
            claim, request_base(request), "create metadata directory", create=True
        )
        assert request_dir is not None  # created
        with request_dir:
            request_dir.what = "write metadata file"
            if mode == "in-place":
                request_dir.rewrite(NODE_METADATA_FILE, data)
            else:
                request_dir.replace(NODE_METADATA_FILE, data, locked=True)
        return path

    def _write_cdi_spec(self, claim: ClaimRef, request: str, cdi: SafeDir | None = None) -> str:
        """Write the CDI spec of ``request`` (internal); ``cdi``: the CDI directory, open."""
        import json

        spec = self.cdi_spec(claim, request)
        path = self.cdi_spec_path(claim, request)
        data = _go_escape(json.dumps(spec, indent=2, ensure_ascii=False)).encode("utf-8")
        if cdi is None:
            with made(SafeDir.open_root(self.cdi_dir, "create CDI directory", create=True)) as own:
                return self._write_cdi_spec(claim, request, own)
        what, cdi.what = cdi.what, "write CDI spec file"
        try:
            cdi.replace(self._cdi_spec_name(claim, request), data, locked=True)
        finally:
            cdi.what = what
        return path

    def _remove_request(self, claim: ClaimRef, request: str) -> None:
        """Remove one request's CDI spec, file and directory; the claim's directory if empty."""
        what = "clean up device metadata"
        claim = _claim(claim)
        cdi = SafeDir.open_root(self.cdi_dir, what, create=False)
        if cdi is not None:
            with cdi:
                cdi.unlink_regular(self._cdi_spec_name(claim, request))
        claim_dir = self._claim_dir(claim, what, create=False)
        if claim_dir is not None:
            with claim_dir:
                base = request_base(request)
                request_dir = claim_dir.child(base, create=False)
                if request_dir is not None:
                    with request_dir:
                        request_dir.unlink_regular(NODE_METADATA_FILE)
                    claim_dir.rmdir(base)
                if not claim_dir.names():
                    claim_dir.remove_self()


@dataclass
class _CdiHeld:
    """The CDI directory while the claim's CDI lock is held; ``remove_lock``: no spec is left."""

    dir: SafeDir
    remove_lock: bool = False


class _Held:
    """A call's hold on a claim: the publisher's own directory (None: nothing was ever
    written), the call's deadline, and the claim's state, read when first asked for."""

    def __init__(self, own: SafeDir | None, claim: ClaimRef, deadline: float) -> None:
        self.own = own
        self.deadline = deadline
        self.state_name = f"{_file_stem(claim)}{_STATE_SUFFIX}"
        self._state: _State | None = None

    def state(self, what: str) -> _State:
        """The claim's state (one that cannot be read is logged and left aside)."""
        if self._state is None:
            assert self.own is not None
            self._state = _State(self.own, self.state_name, what)
            if self._state.problem is not None:
                from ._log import logger

                logger().warning(
                    "%s: %s: %s; the generations are taken from the metadata files",
                    what,
                    self._state.path,
                    self._state.problem,
                )
        return self._state

    def recorded_bases(self) -> set[str]:
        """The base requests the state names, if it can be read (unprepare needs none)."""
        if self.own is None:
            return set()
        return set(_State(self.own, self.state_name, "clean up device metadata").requests)

    def forget(self) -> None:
        """Remove the state, whatever it holds (a directory there is not ours, and stays)."""
        if self.own is None:
            return
        info = self.own.lstat(self.state_name)
        if info is not None and not stat.S_ISDIR(info.st_mode):
            self.own.unlink(self.state_name)
        elif info is not None:
            from ._log import logger

            logger().warning(
                "clean up device metadata: %s: a directory where the claim's state belongs: "
                "left; remove it before the claim is prepared again",
                os.path.join(self.own.path, self.state_name),
            )
        self.own.remove_temporary(self.state_name)


class _State:
    """A claim's state file, read under its lock: the highest generation of each request.

    One that cannot be used (missing is fine: empty) is empty, with ``problem``
    saying why: unreadable, not JSON, not the publisher's schema, or a generation
    outside 1..int64. It is replaced at the next :meth:`record`.
    """

    def __init__(self, own: SafeDir, name: str, what: str) -> None:
        self._own = own
        self._name = name
        self._what = what
        self.path = os.path.join(own.path, name)
        #: base request -> (highest generation written or about to be, podClaimName written)
        self.requests: dict[str, tuple[int, str | None]] = {}
        #: Why the state on disk was left aside (None: read, or there was none).
        self.problem: str | None = None
        try:
            data = own.read(name, limit=_STATE_LIMIT)
        except PublishError as err:
            self.problem = f"the publisher's state cannot be read ({err})"
            return
        if data is not None:
            try:
                self.requests = _parse_state(data)
            except ValueError as err:
                self.problem = f"the publisher's state is not one it wrote ({err})"

    def record(self, base: str, generation: int, pod_claim_name: str | None) -> None:
        """Keep ``generation`` as ``base``'s highest, crash-safely, before its file is written."""
        import json

        info = self._own.lstat(self._name)
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise PublishError(
                f"{self._what}: {self.path}: a directory where the publisher keeps the claim's "
                "state: remove it, then prepare the claim again",
                path=self.path,
            )
        if info is not None and (not stat.S_ISREG(info.st_mode) or info.st_nlink > 1):
            # A link, or a second name of another file: the name is replaced, nothing
            # is written through it.
            self._own.unlink(self._name)
        self.requests[base] = (generation, pod_claim_name)
        body = {
            "requests": {
                name: {"generation": gen, "podClaimName": pcn}
                for name, (gen, pcn) in sorted(self.requests.items())
            }
        }
        self._own.replace(
            self._name, (json.dumps(body) + "\n").encode("utf-8"), mode=0o600, locked=True
        )
        self.problem = None


def _parse_state(data: bytes) -> dict[str, tuple[int, str | None]]:
    """The requests of a state file; ``ValueError`` saying what is wrong with one."""
    import json

    try:
        loaded = json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as err:  # also what is not UTF-8, and integers of too many digits
        raise ValueError(f"not JSON: {err}") from None
    requests = loaded.get("requests") if isinstance(loaded, dict) else None
    if not isinstance(requests, dict):
        raise ValueError('no "requests" object')
    parsed: dict[str, tuple[int, str | None]] = {}
    for base, entry in requests.items():
        generation = entry.get("generation") if isinstance(entry, dict) else None
        pod_claim_name = entry.get("podClaimName") if isinstance(entry, dict) else None
        if not _is_label(base):
            raise ValueError(f"{base!r} is not a request name")
        if type(generation) is not int or not 1 <= generation <= _INT64_MAX:
            raise ValueError(f"request {base!r}: generation {generation!r} is not in 1..int64")
        if pod_claim_name is not None and not isinstance(pod_claim_name, str):
            raise ValueError(f"request {base!r}: podClaimName {pod_claim_name!r} is not a string")
        parsed[base] = (generation, pod_claim_name)
    return parsed


def _spec_host_path(data: bytes) -> str | None:
    """The ``hostPath`` of a metadata CDI spec's one mount (None: not such a spec)."""
    import json

    try:
        spec = json.loads(data)
        mount = spec["devices"][0]["containerEdits"]["mounts"][0]
        host_path = mount["hostPath"]
    except (ValueError, RecursionError, LookupError, TypeError):
        return None
    return host_path if isinstance(host_path, str) else None


def _log_kept(path: str, host_path: str) -> None:
    from ._log import logger

    logger().warning(
        "clean up device metadata: %s: kept: another publisher wrote it (it mounts %s)",
        path,
        host_path,
    )


@contextlib.contextmanager
def _publish_errors(what: str) -> Iterator[None]:
    """Let no ``OSError`` of a call escape as anything but a :class:`PublishError`."""
    try:
        yield
    except DRAMetadataError:
        raise
    except OSError as err:
        path = err.filename if isinstance(err.filename, str) else None
        where = f"{path}: " if path else ""
        raise PublishError(f"{what}: {where}{os_reason(err)}", path=path) from err


def _file_stem(claim: ClaimRef) -> str:
    """``<namespace>_<claim>``, shortened to fit NAME_MAX with the lock and state suffixes.

    Longer than :data:`_STEM_MAX` bytes: its first 200 bytes, ``_`` and 40 hex digits
    of its SHA-256. Kubernetes names hold no ``_``, so a shortened stem (two) is
    never a whole one (one).
    """
    directory = claim.directory
    raw = directory.encode("utf-8", "surrogatepass")
    if len(raw) <= _STEM_MAX:
        return directory
    import hashlib

    keep = raw[:_STEM_KEEP].decode("utf-8", "ignore")
    return f"{keep}_{hashlib.sha256(raw).hexdigest()[:40]}"


def _check_fits(claim: ClaimRef, claim_dir: str, what: str) -> None:
    """Refuse a claim whose directory ``<namespace>_<claim>`` no file system can name (as Go's
    layout cannot hold it), before anything is written."""
    size = len(claim.directory.encode("utf-8", "surrogatepass"))
    if size > _NAME_MAX:
        raise PublishError(
            f"{what}: {claim_dir}: {os.strerror(errno.ENAMETOOLONG).lower()}: the claim's "
            f"directory <namespace>_<claim> is {size} bytes, and a file name can have "
            f"{_NAME_MAX}",
            path=claim_dir,
        )


def _next(generation: int, what: str) -> int:
    if generation > _INT64_MAX:
        raise PublishError(
            f"{what}: the generation would pass the int64 limit ({_INT64_MAX}); "
            "unprepare the claim to start again at 1"
        )
    return generation


def _check_timeout(timeout: object) -> float:
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 <= timeout < math.inf
    ):
        raise PublishError(f"lock_timeout must be a number of seconds, 0 or more, not {timeout!r}")
    return float(timeout)


# --- checks -----------------------------------------------------------------------------------


def _claim(claim: object) -> ClaimRef:
    if not isinstance(claim, ClaimRef):
        raise PublishError(f"claim must be a ClaimRef, not {claim!r}")
    return claim


def _check_dns(kind: str, name: str, *, subdomain: bool = False, limit: int | None = None) -> None:
    """Refuse a name Kubernetes cannot give: a DNS-1123 label, or subdomain, lower case."""
    check_name(kind, name)
    messages = dns1123_subdomain_messages(name) if subdomain else dns1123_label_messages(name)
    if limit is not None and len(name) > limit:
        messages.insert(0, f"must be no more than {limit} characters")
    if messages:
        form = "a lower-case DNS subdomain" if subdomain else "a lower-case DNS label"
        raise _NameRefused(
            f"{kind} name {name!r} is not one Kubernetes gives ({form}): {'; '.join(messages)}"
        )


def _is_label(name: str) -> bool:
    return not dns1123_label_messages(name)


def _is_spec_name(name: str, prefix: str) -> bool:
    """Whether ``name`` is ``<prefix><request>.json``, a spec this publisher writes."""
    if not (name.startswith(prefix) and name.endswith(_CDI_SUFFIX)):
        return False
    return _is_label(name[len(prefix) : -len(_CDI_SUFFIX)])


def _check_versions(versions: Iterable[str]) -> tuple[str, ...]:
    if isinstance(versions, str) or not isinstance(versions, Iterable):
        raise PublishError(f"versions must be a list of API versions, not {versions!r}")
    chosen = tuple(versions)
    if not chosen:
        raise PublishError("metadata versions must be explicitly selected, none chosen")
    for version in chosen:
        if version not in API_VERSIONS:
            raise PublishError(
                f"metadata version {go_quote(str(version))} is not supported "
                f"(supported: {', '.join(API_VERSIONS)})"
            )
    if NEWEST not in chosen:
        raise PublishError(
            f"the latest metadata version is {NEWEST} and must be enabled explicitly"
        )
    if list(chosen) != sorted(chosen, key=API_VERSIONS.index):
        raise PublishError(
            f"metadata versions must be listed newest first ({', '.join(API_VERSIONS)}): "
            "readers take the first version they know, and lint (DRA105) refuses another order"
        )
    return chosen


def _is_letter(char: str) -> bool:
    return char.isascii() and char.isalpha()


def _is_alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _check_cdi_vendor(driver: str) -> None:
    """The driver is the vendor of the CDI kind ``<driver>/metadata``: CDI's rules apply."""
    if (
        not _is_letter(driver[0])
        or not _is_alnum(driver[-1])
        or not all(_is_alnum(c) or c in "-_." for c in driver)
    ):
        raise _NameRefused(
            f"driver name {driver!r} cannot be the vendor of a CDI kind: it must start with a "
            "letter, end with a letter or digit, and hold only letters, digits, '-', '_' and '.'"
        )


def _check_cdi_device_name(name: str) -> None:
    if (
        not _is_alnum(name[0])
        or not _is_alnum(name[-1])
        or not all(_is_alnum(c) or c in "-_.:" for c in name)
    ):
        raise InvalidNameError(
            f"CDI device name {name!r} (<claim uid>_<request>) is not valid in CDI: it must "
            "start and end with a letter or digit and hold only letters, digits, '-', '_', "
            "'.' and ':'"
        )


def _cdi_version(device_name: str) -> str:
    """The lowest CDI spec version a metadata spec needs.

    Of what a metadata spec holds (a kind whose class has no dot, one device,
    one mount without a type, no annotations) only a device name that starts
    with something other than a letter needs more than 0.3.0: 0.5.0.
    """
    return "0.3.0" if _is_letter(device_name[0]) else "0.5.0"
