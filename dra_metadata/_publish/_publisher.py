"""The front of the publisher: :class:`MetadataPublisher`, composing the layers below it."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias

from .._encode import DEFAULT_VERSIONS
from .._errors import MetadataNotFoundError, PublishError
from .._field_error import go_quote
from .._model import (
    AttributeInput,
    Device,
    DeviceAttribute,
    DeviceMetadata,
    NetworkDeviceData,
    to_attribute,
)
from .._paths import (
    CONTAINER_DIR,
    NODE_METADATA_FILE,
    NODE_METADATA_SUBDIR,
    resource_claim_file_path,
    resource_claim_template_file_path,
)
from ._call import Call
from ._cdi import CdiSpecs, spec_of
from ._content import build, checked, devices_of
from ._lock import DEFAULT_LOCK_TIMEOUT
from ._names import (
    CDI_CLASS,
    INT64_MAX,
    PUBLISHER_STATE_SUBDIR,
    ClaimRef,
    WrongArgument,
    base_of,
    cdi_device_name,
    cdi_lock_name,
    cdi_spec_name,
    check_driver,
    check_fits,
    check_timeout,
    check_versions,
    claim_of,
    lock_name,
    request_of,
    state_name,
)
from ._node import NodeFiles
from ._state import ClaimState, LockedClaim

__all__ = ["DEFAULT_CDI_DIR", "DEFAULT_PLUGINS_DIR", "MetadataPublisher", "UpdateMode"]

#: Where the kubelet plugin library writes CDI specs unless told otherwise.
DEFAULT_CDI_DIR: Final = "/var/run/cdi"
#: The directory whose ``<driver>`` subdirectory is a driver's default plugin data directory.
DEFAULT_PLUGINS_DIR: Final = "/var/lib/kubelet/plugins"

#: How :meth:`MetadataPublisher.update` rewrites a file: ``"replace"`` writes a temporary
#: file and renames it over the old one (Go v1.37: atomic, a new inode); ``"in-place"``
#: truncates and writes the same inode (Go v1.36: running containers see it).
UpdateMode: TypeAlias = Literal["replace", "in-place"]

_UPDATE_MODES: Final = ("replace", "in-place")


class _NotPrepared(MetadataNotFoundError, PublishError):
    """An update of a request that is not prepared (both error kinds)."""


class MetadataPublisher:
    """Writes a driver's device metadata on the node as the Go kubelet plugin does (v1.37).

    ``plugin_data_dir`` defaults to ``/var/lib/kubelet/plugins/<driver>``,
    ``cdi_dir`` to ``/var/run/cdi`` (both made absolute: a CDI mount needs an
    absolute host path). ``driver`` must be a lower-case DNS subdomain of at most
    63 characters that is also a valid CDI vendor. ``versions`` are the API
    versions every file holds, in that order; as in Go, they must be named, be
    ones this library writes, and include ``v1beta1``. ``lock_timeout`` bounds,
    in seconds, every wait for a claim's locks (30 by default); past it the call
    raises a :class:`~dra_metadata.PublishError` that names the lock file and the
    process holding it.

    Call :meth:`prepare` for each request of a claim that got devices (at
    ``NodePrepareResources``) and hand the CDI device name it returns to the
    kubelet; :meth:`update` when data known only later (network) is there;
    :meth:`unprepare` at ``NodeUnprepareResources``. Calls on one claim are
    serialised across threads and processes by a lock file; a signal that lands
    during a call (Ctrl-C) is handled when the call has ended, its locks let go;
    what a call accepts is what every reader accepts (see docs/driver.md). Every
    failure of a call, bad arguments included, is a
    :class:`~dra_metadata.PublishError`.

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
        #: The driver whose metadata this publisher writes.
        self.driver: Final = check_driver(driver)
        if plugin_data_dir is None:
            plugin_data_dir = os.path.join(DEFAULT_PLUGINS_DIR, driver)
        #: The driver's data directory on the node (absolute).
        self.plugin_data_dir: Final = os.path.abspath(os.fspath(plugin_data_dir))
        #: The directory the container runtime reads CDI specs from (absolute).
        self.cdi_dir: Final = os.path.abspath(os.fspath(cdi_dir))
        #: The API versions every file holds, in order.
        self.versions: Final = check_versions(versions)
        #: How long, in seconds, a call waits for a claim's lock before it fails.
        self.lock_timeout: Final = check_timeout(lock_timeout)

    def __repr__(self) -> str:
        return (
            f"MetadataPublisher({self.driver!r}, plugin_data_dir={self.plugin_data_dir!r}, "
            f"cdi_dir={self.cdi_dir!r})"
        )

    # --- where things are ---------------------------------------------------------------

    def claim_dir(self, claim: ClaimRef) -> str:
        """The node directory of all of ``claim``'s files (what :meth:`unprepare` removes)."""
        return os.path.join(self.plugin_data_dir, NODE_METADATA_SUBDIR, _ref(claim).directory)

    def metadata_path(self, claim: ClaimRef, request: str) -> str:
        """The node-side file of ``request`` (``req`` or ``req/sub``: the file of ``req``).

        >>> pub = MetadataPublisher("gpu.example.com")
        >>> pub.metadata_path(ClaimRef(name="c", namespace="ns", uid="u"), "gpu/high-memory")
        '/var/lib/kubelet/plugins/gpu.example.com/dra-device-metadata/ns_c/gpu/metadata.json'
        """
        return os.path.join(self.claim_dir(claim), base_of(request), NODE_METADATA_FILE)

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
        return os.path.join(self.plugin_data_dir, PUBLISHER_STATE_SUBDIR, lock_name(_ref(claim)))

    def state_path(self, claim: ClaimRef) -> str:
        """The file that keeps ``claim``'s highest generations: ``<state dir>/<ns>_<claim>.state``.

        Written atomically before each metadata file, removed by :meth:`unprepare`
        (whatever it holds: no call needs it to remove a claim's files). Named as
        :meth:`lock_path` says.
        """
        return os.path.join(self.plugin_data_dir, PUBLISHER_STATE_SUBDIR, state_name(_ref(claim)))

    def cdi_lock_path(self, claim: ClaimRef) -> str:
        """The lock over ``claim``'s CDI specs: ``<cdi dir>/.<driver>_metadata_<uid>.lock``.

        Every publisher of the driver that writes to this CDI directory takes it
        (after :meth:`lock_path`), whatever its plugin data directory. Hidden, and
        not a ``.json`` or ``.yaml`` file, the only ones CDI reads. The first call on
        the claim makes it; an :meth:`unprepare` that leaves no spec of the claim
        removes it.
        """
        return os.path.join(self.cdi_dir, cdi_lock_name(self.driver, _ref(claim)))

    def container_path(self, claim: ClaimRef, request: str) -> str:
        """Where containers read the file: the CDI mount's ``containerPath``.

        >>> claim = ClaimRef(name="c", namespace="ns", uid="u", pod_claim_name="gpu")
        >>> print(MetadataPublisher("gpu.example.com").container_path(claim, "gpu"))
        /var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/gpu/gpu/gpu.example.com-metadata.json
        """
        claim = _ref(claim)
        base_of(request)
        if claim.pod_claim_name:
            return resource_claim_template_file_path(
                self.driver, claim.pod_claim_name, request, root=CONTAINER_DIR
            )
        return resource_claim_file_path(self.driver, claim.name, request, root=CONTAINER_DIR)

    def cdi_device_name(self, claim: ClaimRef, request: str) -> str:
        """The device's name in the CDI spec: ``<claim uid>_<base request>``."""
        return cdi_device_name(_ref(claim), base_of(request))

    def cdi_device(self, claim: ClaimRef, request: str) -> str:
        """The fully qualified CDI device name: ``<driver>/metadata=<claim uid>_<base request>``.

        >>> MetadataPublisher("gpu.example.com").cdi_device(
        ...     ClaimRef(name="c", namespace="ns", uid="c7e7"), "gpu")
        'gpu.example.com/metadata=c7e7_gpu'
        """
        return f"{self.driver}/{CDI_CLASS}={self.cdi_device_name(claim, request)}"

    def cdi_spec_path(self, claim: ClaimRef, request: str) -> str:
        """The CDI spec file of ``request``: ``<cdi dir>/<driver>_metadata_<uid>_<base>.json``."""
        return os.path.join(self.cdi_dir, cdi_spec_name(self.driver, _ref(claim), base_of(request)))

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
        return spec_of(
            self.driver,
            self.cdi_device_name(claim, request),
            self.metadata_path(claim, request),
            self.container_path(claim, request),
        )

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
        reader would accept is refused with a :class:`~dra_metadata.PublishError`
        (also a ``TypeError`` for an argument of the wrong type: a value of no
        attribute kind, say).

        >>> pub = MetadataPublisher("gpu.example.com")
        >>> pub.device("worker-0", "gpu-0", attributes={"n": 1}).attributes
        {'n': DeviceAttribute(int=1)}
        """
        converted: dict[str, DeviceAttribute] = {}
        if attributes is not None and not isinstance(attributes, Mapping):
            raise WrongArgument(f"attributes must be a mapping, not {type(attributes).__name__}")
        for key, value in (attributes or {}).items():
            if not isinstance(key, str):
                raise WrongArgument(f"attribute names must be strings, not {type(key).__name__}")
            try:
                converted[key] = to_attribute(value)
            except TypeError as err:
                raise WrongArgument(f"attribute {key!r} of device {pool}/{name}: {err}") from None
            except ValueError as err:
                raise PublishError(f"attribute {key!r} of device {pool}/{name}: {err}") from None
        if network_data is not None and not isinstance(network_data, NetworkDeviceData):
            raise WrongArgument(
                f"network_data must be a NetworkDeviceData, not {type(network_data).__name__}"
            )
        try:
            device = Device(
                self.driver, pool, name, attributes=converted, network_data=network_data
            )
        except TypeError as err:
            raise WrongArgument(f"device {pool!r}/{name!r}: {err}") from None
        probe = ClaimRef(name="probe", namespace="probe", uid="probe")
        checked(
            build(probe, "probe", (device,), 1, None), self.versions, f"device {pool!r}/{name!r}"
        )
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
        claim = _ref(claim)
        request_of(request)
        listed = devices_of(devices, self.driver)
        chosen = claim.pod_claim_name if pod_claim_name is None else pod_claim_name
        return build(claim, request, listed, generation, chosen)

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
        claim, base = claim_of(claim), request_of(request)
        listed = devices_of(devices, self.driver)
        cdi_device = self.cdi_device(claim, request)
        if not listed:
            raise PublishError(
                f"request {go_quote(request)} of claim {claim.namespace}/{claim.name} has no "
                "devices: the kubelet plugin writes no metadata for such a request"
            )
        with (
            Call("prepare", claim, request, self.lock_timeout) as call,
            NodeFiles(self.plugin_data_dir, claim, call) as node,
        ):
            check_fits(claim, self.claim_dir(claim), call.label)
            first: bytes | None = None
            if node.root is None:  # nothing published on this node yet: generation 1
                md = build(claim, request, listed, 1, claim.pod_claim_name)
                first = checked(md, self.versions, call.label)
            node.make_root()
            with LockedClaim(node.own_dir(create=True), claim, call) as locked:
                state = locked.take(create=True)
                assert state is not None  # created
                path = self.metadata_path(claim, base)
                last, _ = node.highest_generation(base, state, path, claim.pod_claim_name)
                generation = _next(last, call)
                data = first
                if data is None or generation != 1:  # else checked before anything was made
                    md = build(claim, request, listed, generation, claim.pod_claim_name)
                    data = checked(md, self.versions, call.label)
                self._publish(node, state, claim, request, base, data, generation)
        return cdi_device

    def _publish(
        self,
        node: NodeFiles,
        state: ClaimState,
        claim: ClaimRef,
        request: str,
        base: str,
        data: bytes,
        generation: int,
    ) -> None:
        """Prepare's writes under the claim's lock: the state, the file, the CDI spec."""
        call = node.call
        with CdiSpecs(self.cdi_dir, self.driver, claim, call, create=True) as cdi:
            cdi.locked(create=True)
            try:
                cdi.refuse_foreign(base, self.metadata_path(claim, base), self.plugin_data_dir)
                state.record(base, generation, claim.pod_claim_name)
                node.write(base, data, "replace")
                cdi.write(base, self.cdi_spec(claim, request))
            except BaseException:
                cdi.forget_lock_if_unused(node.bases())
                raise

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
        claim, base = claim_of(claim), request_of(request)
        listed = devices_of(devices, self.driver)
        with (
            Call("update", claim, request, self.lock_timeout) as call,
            NodeFiles(self.plugin_data_dir, claim, call) as node,
        ):
            if node.root is None or not node.has_file(base):
                raise self._not_prepared(claim, request)
            with LockedClaim(node.own_dir(create=True), claim, call) as locked:
                state = locked.take(create=True)
                assert state is not None  # created
                if not node.has_file(base):  # unprepare won the race
                    raise self._not_prepared(claim, request)
                path = self.metadata_path(claim, base)
                last, pod_claim_name = node.highest_generation(
                    base, state, path, claim.pod_claim_name
                )
                generation = _next(last, call)
                md = build(claim, request, listed, generation, pod_claim_name)
                data = checked(md, self.versions, call.label)
                state.record(base, generation, pod_claim_name)
                node.write(base, data, mode)
        return md

    def unprepare(self, claim: ClaimRef) -> None:
        """Remove every metadata file of ``claim``, their directories, and their CDI specs.

        Only what this publisher writes is removed: ``<request>/metadata.json``
        files (whatever kind of file sits there), their directories, the claim's
        directory, the CDI specs ``<driver>_metadata_<uid>_<request>.json`` of the
        requests found there (or named by the state) whose mount is this
        publisher's file, temporaries of interrupted writes, the claim's state and
        its locks. What cannot be removed (a file it did not write, a directory
        where a file of its own belongs, an immutable file) is left and named in a
        :class:`~dra_metadata.PublishError` with the command that removes it; the
        rest is removed all the same. Removing what is not there is no error, so
        calling it twice is fine; a claim never prepared makes no file, even on
        read-only directories.
        """
        claim = claim_of(claim)
        left: list[PublishError] = []
        with (
            Call("unprepare", claim, None, self.lock_timeout) as call,
            NodeFiles(self.plugin_data_dir, claim, call) as node,
        ):
            if node.root is None:
                return
            with LockedClaim(node.own_dir(create=False), claim, call) as locked:
                state = locked.take(create=False, or_go_on=True)
                if state is not None:
                    self._remove_all(node, locked, claim, call, left)
            if state is None and (
                node.claim_dir(create=False) is not None or node.has_own(state_name(claim))
            ):
                # Files and no lock (someone removed it, or the publisher's directory): make it.
                with LockedClaim(node.own_dir(create=True), claim, call) as locked:
                    locked.take(create=True, or_go_on=True)
                    self._remove_all(node, locked, claim, call, left)
            left.extend(locked.left())
        if left:
            raise _left_behind(call, left)

    # --- the seam of the testing kit ------------------------------------------------------------

    def write_bytes(
        self, claim: ClaimRef, request: str, data: bytes, *, mode: UpdateMode = "replace"
    ) -> str:
        """Write ``data`` as ``request``'s file, unchecked, and its CDI spec; return the file.

        For test trees (:class:`~dra_metadata.testing.MountedMetadataTree`) that need files
        no reader accepts: nothing is decoded or validated, no generation is kept.
        The directories, the link safety and the claim's locks are as in
        :meth:`prepare`; ``mode`` as in :meth:`update`.
        """
        claim, base = claim_of(claim), request_of(request)
        with (
            Call("write", claim, request, self.lock_timeout) as call,
            NodeFiles(self.plugin_data_dir, claim, call) as node,
            LockedClaim(node.make_root() and node.own_dir(create=True), claim, call) as locked,
        ):
            locked.take(create=True)
            with CdiSpecs(self.cdi_dir, self.driver, claim, call, create=True) as cdi:
                cdi.locked(create=True)
                node.write(base, bytes(data), mode)
                cdi.write(base, self.cdi_spec(claim, request))
        return self.metadata_path(claim, request)

    def remove_request(self, claim: ClaimRef, request: str) -> None:
        """Remove ``request``'s file, directory and CDI spec; the claim's directory when empty.

        What a test tree does when one request goes and the claim stays; a
        driver removes a claim with :meth:`unprepare`.
        """
        claim, base = claim_of(claim), request_of(request)
        with (
            Call("remove", claim, request, self.lock_timeout) as call,
            NodeFiles(self.plugin_data_dir, claim, call) as node,
            LockedClaim(node.own_dir(create=False), claim, call) as locked,
        ):
            state = locked.take(create=True) if node.root is not None else None
            with CdiSpecs(self.cdi_dir, self.driver, claim, call, create=False) as cdi:
                if cdi.locked(create=False):
                    cdi.remove_one(base)
                    cdi.lock.remove = cdi.none_left(node.bases())  # type: ignore[union-attr]
            node.remove_request(base)
            if state is not None:
                state.forget(base)

    # --- inside the calls ---------------------------------------------------------------------

    def _remove_all(
        self,
        node: NodeFiles,
        locked: LockedClaim,
        claim: ClaimRef,
        call: Call,
        left: list[PublishError],
    ) -> None:
        """Unprepare's work under the claim's lock: the specs, the files, the state.

        What cannot be removed goes to ``left``, and the rest is removed all the same.
        """
        state = locked.state
        recorded = set(state.requests) if state is not None else set()
        bases = sorted(set(node.bases()) | recorded)
        with CdiSpecs(self.cdi_dir, self.driver, claim, call, create=False) as cdi:
            if cdi.locked(create=True, or_go_on=True):
                mine = {base: self.metadata_path(claim, base) for base in bases}
                left.extend(cdi.remove(bases, mine))
        left.extend(cdi.left())
        left.extend(node.remove_claim())
        if state is not None:
            try:
                state.remove()
            except PublishError as err:
                left.append(err)
        locked.unprepared = True

    def _not_prepared(self, claim: ClaimRef, request: str) -> _NotPrepared:
        # Go's words (the kubelet plugin's UpdateRequestMetadata).
        return _NotPrepared(
            f"request {go_quote(request)} not found in prepared claim "
            f"{claim.namespace}/{claim.name}",
            path=self.metadata_path(claim, request),
        )


def _ref(claim: object) -> ClaimRef:
    if not isinstance(claim, ClaimRef):
        raise WrongArgument(f"claim must be a ClaimRef, not {claim!r}")
    return claim


def _next(last: int, call: Call) -> int:
    if last + 1 > INT64_MAX:
        raise call.error(
            f"the generation would pass the int64 limit ({INT64_MAX}); "
            "unprepare the claim to start again at 1"
        )
    return last + 1


def _left_behind(call: Call, left: list[PublishError]) -> PublishError:
    """One error naming everything unprepare could not remove, each with its fix."""
    prefix = f"{call.label}: "
    reasons = [str(err).removeprefix(prefix) for err in left]
    return PublishError(
        f"{call.label}: the rest is removed; left {len(left)} "
        f"{'path' if len(left) == 1 else 'paths'}: {'; '.join(reasons)}",
        path=left[0].path,
    )
