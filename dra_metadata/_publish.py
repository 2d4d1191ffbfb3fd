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
* crash-safe file writing, which the testing kit uses too.

The bytes of a file are :func:`~dra_metadata.encode`'s; names are checked as the
readers check them, plus the rules CDI has for its names.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from ._encode import DEFAULT_VERSIONS, _go_escape, encode
from ._errors import (
    DecodeError,
    DRAMetadataError,
    InvalidNameError,
    MetadataNotFoundError,
    PublishError,
    go_quote,
    os_reason,
)
from ._model import (
    Device,
    DeviceAttribute,
    DeviceMetadata,
    DeviceMetadataRequest,
    NetworkDeviceData,
    ObjectMeta,
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
from ._read import decode_file, read_bytes
from ._versions import API_VERSIONS, NEWEST

__all__ = [
    "DEFAULT_CDI_DIR",
    "DEFAULT_PLUGINS_DIR",
    "POD_CLAIM_NAME_ANNOTATION",
    "ClaimRef",
    "MetadataPublisher",
    "UpdateMode",
    "make_dirs",
    "replace_file",
    "rewrite_in_place",
]

#: Where the kubelet plugin library writes CDI specs unless told otherwise.
DEFAULT_CDI_DIR: Final = "/var/run/cdi"
#: The directory whose ``<driver>`` subdirectory is a driver's default plugin data directory.
DEFAULT_PLUGINS_DIR: Final = "/var/lib/kubelet/plugins"
#: The ResourceClaim annotation naming the pod's claim, set on claims made from a template.
POD_CLAIM_NAME_ANNOTATION: Final = "resource.kubernetes.io/pod-claim-name"

#: How :meth:`MetadataPublisher.update` rewrites a file: ``"replace"`` writes a temporary
#: file and renames it over the old one (Go v1.37: atomic, a new inode); ``"in-place"``
#: truncates and writes the same inode (Go v1.36: running containers see it).
UpdateMode: TypeAlias = Literal["replace", "in-place"]

_UPDATE_MODES: Final = ("replace", "in-place")
_FILE_MODE: Final = 0o644
_DIR_MODE: Final = 0o755
_CDI_CLASS: Final = "metadata"
_CDI_SUFFIX: Final = ".json"


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """The identity of a ResourceClaim, as the publisher needs it.

    ``pod_claim_name`` is the value of the claim's
    ``resource.kubernetes.io/pod-claim-name`` annotation (the claim's name in the
    pod spec), set when the claim was made from a ResourceClaimTemplate; ``None``
    when the annotation is absent. Every name is checked as the readers check
    names (:class:`~dra_metadata.InvalidNameError`).

    >>> claim = ClaimRef(name="pod-gpu-x7k2p", namespace="ml", uid="c7e7", pod_claim_name="gpu")
    >>> claim.directory, claim.from_template
    ('ml_pod-gpu-x7k2p', True)
    """

    name: str
    namespace: str
    uid: str
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


class MetadataPublisher:
    """Writes a driver's device metadata on the node as the Go kubelet plugin does (v1.37).

    ``plugin_data_dir`` defaults to ``/var/lib/kubelet/plugins/<driver>``,
    ``cdi_dir`` to ``/var/run/cdi`` (both made absolute: a CDI mount needs an
    absolute host path). ``versions`` are the API versions every file holds, in
    that order; as in Go, they must be named, be ones this library writes, and
    include ``v1beta1`` (:class:`~dra_metadata.PublishError` otherwise).

    Call :meth:`prepare` for each request of a claim that got devices (at
    ``NodePrepareResources``) and hand the CDI device name it returns to the
    kubelet; :meth:`update` when data known only later (network) is there;
    :meth:`unprepare` at ``NodeUnprepareResources``.

    >>> import tempfile, dra_metadata as dm
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     pub = dm.MetadataPublisher("gpu.example.com", plugin_data_dir=f"{tmp}/plugin",
    ...                                cdi_dir=f"{tmp}/cdi")
    ...     claim = dm.ClaimRef(name="pod0-gpu-x", namespace="ml", uid="c7e7",
    ...                         pod_claim_name="gpu")
    ...     uuid = dm.DeviceAttribute(string="GPU-1")
    ...     gpu = pub.device("worker-0", "gpu-0", attributes={"uuid": uuid})
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
    ) -> None:
        check_name("driver", driver)
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

    def cdi_spec_path(self, claim: ClaimRef, request: str) -> str:
        """The CDI spec file of ``request``: ``<cdi dir>/<driver>_metadata_<uid>_<base>.json``."""
        name = f"{self.driver}_{_CDI_CLASS}_{self.cdi_device_name(claim, request)}{_CDI_SUFFIX}"
        return os.path.join(self.cdi_dir, name)

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
        attributes: Mapping[str, DeviceAttribute] | None = None,
        network_data: NetworkDeviceData | None = None,
    ) -> Device:
        """A :class:`~dra_metadata.Device` of this driver, to pass to :meth:`prepare`.

        >>> MetadataPublisher("gpu.example.com").device("worker-0", "gpu-0")
        Device(driver='gpu.example.com', pool='worker-0', name='gpu-0')
        """
        return Device(
            self.driver,
            pool,
            name,
            attributes=dict(attributes or {}),
            network_data=network_data,
        )

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

    # --- the three calls ------------------------------------------------------------------

    def prepare(self, claim: ClaimRef, request: str, devices: Iterable[Device]) -> str:
        """Write ``request``'s metadata file (generation 1) and its CDI spec; return the CDI device.

        ``request`` is the request's full name (``gpu`` or ``gpu/high-memory``);
        the file is the base request's. Both files are replaced atomically, so a
        second prepare of the same request starts again at generation 1, as in Go.
        A request needs at least one device: the Go library writes no file for a
        request without devices.

        Returns ``<driver>/metadata=<claim uid>_<base request>``, the name to add
        to the CDI device IDs the driver returns to the kubelet.
        """
        claim = _claim(claim)
        cdi_device = self.cdi_device(claim, request)
        listed = self._devices(devices)
        if not listed:
            raise PublishError(
                f"request {go_quote(request)} of claim {claim.namespace}/{claim.name} has no "
                "devices: the kubelet plugin writes no metadata for such a request"
            )
        data = self._encode(self.metadata(claim, request, listed))
        self._write_metadata(claim, request, data, "replace")
        self._write_cdi_spec(claim, request)
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

        ``mode="replace"`` (the default, as Go v1.37) renames a new file over the
        old: atomic, but a container already running keeps seeing the old file.
        ``mode="in-place"`` (as Go v1.36) truncates and writes the same inode:
        running containers see it, and a reader can catch it half written.

        Raises :class:`~dra_metadata.MetadataNotFoundError` when the request was
        not prepared, :class:`~dra_metadata.DecodeError` when its file does not decode.
        """
        if mode not in _UPDATE_MODES:
            raise PublishError(f"mode must be one of {', '.join(_UPDATE_MODES)}, not {mode!r}")
        claim = _claim(claim)
        listed = self._devices(devices)
        path = self.metadata_path(claim, request)
        try:
            existing = read_bytes(path)
        except MetadataNotFoundError:
            raise MetadataNotFoundError(
                f"request {go_quote(request)} not found in prepared claim "
                f"{claim.namespace}/{claim.name}",
                path=path,
            ) from None
        except DRAMetadataError as err:
            raise PublishError(f"read metadata file: {err}", path=path) from err
        try:
            previous = decode_file(path, existing)
        except DecodeError as err:
            raise DecodeError(f"decode existing metadata: {err}", path=path) from None
        md = self.metadata(
            claim,
            request,
            listed,
            generation=previous.metadata.generation + 1,
            pod_claim_name=previous.pod_claim_name,
        )
        self._write_metadata(claim, request, self._encode(md), mode)
        return md

    def unprepare(self, claim: ClaimRef) -> None:
        """Remove every metadata file of ``claim``, their directories, and their CDI specs.

        Removing what is not there is no error, so calling it twice is fine.
        """
        claim = _claim(claim)
        directory = self.claim_dir(claim)
        try:
            _remove_tree(directory)
        except OSError as err:
            raise PublishError(
                f"clean up device metadata: remove {directory}: {os_reason(err)}", path=directory
            ) from err
        prefix = f"{self.driver}_{_CDI_CLASS}_{claim.uid}_"
        try:
            names = os.listdir(self.cdi_dir)
        except FileNotFoundError:
            names = []
        except OSError as err:
            raise PublishError(
                f"clean up device metadata: list {self.cdi_dir}: {os_reason(err)}",
                path=self.cdi_dir,
            ) from err
        for name in sorted(names):
            # Go removes what the pattern <driver>_metadata_<uid>_*.json matches.
            if name.startswith(prefix) and name.endswith(_CDI_SUFFIX):
                _remove_file(os.path.join(self.cdi_dir, name), "clean up device metadata")

    # --- writing (also used by the testing kit) -------------------------------------------------

    def _write_metadata(self, claim: ClaimRef, request: str, data: bytes, mode: UpdateMode) -> str:
        """Write the bytes of ``request``'s node file, directories first (internal)."""
        path = self.metadata_path(claim, request)
        _make_dirs_for(path, "create metadata directory")
        try:
            if mode == "in-place":
                rewrite_in_place(path, data)
            else:
                replace_file(path, data)
        except OSError as err:
            raise PublishError(f"write metadata file: {_describe(err, path)}", path=path) from err
        return path

    def _write_cdi_spec(self, claim: ClaimRef, request: str) -> str:
        """Write the CDI spec of ``request`` (internal)."""
        import json

        spec = self.cdi_spec(claim, request)
        path = self.cdi_spec_path(claim, request)
        data = _go_escape(json.dumps(spec, indent=2, ensure_ascii=False)).encode("utf-8")
        _make_dirs_for(path, "create CDI directory")
        try:
            replace_file(path, data)
        except OSError as err:
            raise PublishError(f"write CDI spec file: {_describe(err, path)}", path=path) from err
        return path

    def _remove_request(self, claim: ClaimRef, request: str) -> None:
        """Remove one request's file, directory and CDI spec; the claim's directory if empty."""
        path = self.metadata_path(claim, request)
        try:
            _remove_tree(os.path.dirname(path))
        except OSError as err:
            raise PublishError(
                f"clean up device metadata: remove {path}: {os_reason(err)}", path=path
            ) from err
        _remove_file(self.cdi_spec_path(claim, request), "clean up device metadata")
        with contextlib.suppress(OSError):  # other requests are still there, or it is gone
            os.rmdir(self.claim_dir(claim))


# --- checks -----------------------------------------------------------------------------------


def _claim(claim: object) -> ClaimRef:
    if not isinstance(claim, ClaimRef):
        raise PublishError(f"claim must be a ClaimRef, not {claim!r}")
    return claim


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
        raise InvalidNameError(
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


# --- files ------------------------------------------------------------------------------------


def _describe(err: OSError, path: str) -> str:
    """``<path>: <reason>``, naming the target even when a temporary file failed."""
    return f"{path}: {os_reason(err)}"


def make_dirs(directory: str | os.PathLike[str]) -> None:
    """Create ``directory`` and its missing parents, each mode 0755 whatever the umask."""
    missing = []
    current = os.fspath(directory)
    while not os.path.lexists(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for path in reversed(missing):
        try:
            os.mkdir(path, _DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(path, _DIR_MODE)


def _make_dirs_for(path: str, what: str) -> None:
    directory = os.path.dirname(path)
    try:
        make_dirs(directory)
    except OSError as err:
        raise PublishError(f"{what}: {_describe(err, directory)}", path=directory) from err


def replace_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a reader sees the old file or the new, whole.

    A temporary file in the same directory (``.<name>.<random>.tmp``) gets the
    data, mode 0644, and an fsync; it is renamed over ``path``; the directory is
    fsynced so the rename survives a crash. On any failure the temporary file is
    removed and the old file is untouched.
    """
    import tempfile

    target = os.fspath(path)
    directory, name = os.path.split(target)
    fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory or ".")
    try:
        try:
            _write_all(fd, data)
            os.fchmod(fd, _FILE_MODE)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    _fsync_directory(directory or ".")


def rewrite_in_place(path: str | os.PathLike[str], data: bytes) -> None:
    """Truncate ``path`` (created if missing, mode 0644) and write ``data`` into the same inode.

    What Go's ``os.WriteFile`` does: a bind mount of the file shows the new
    content at once, and a reader racing the write can see it empty or half
    written. A symbolic link is not followed.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(os.fspath(path), flags, _FILE_MODE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        os.fchmod(fd, _FILE_MODE)
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_tree(path: str) -> None:
    """Go's ``os.RemoveAll``: gone afterwards, a link removed rather than followed."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        import shutil

        shutil.rmtree(path)
    else:
        os.unlink(path)


def _remove_file(path: str, what: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as err:
        raise PublishError(f"{what}: remove {path}: {os_reason(err)}", path=path) from err
