"""The testing kit's tree: claims, requests and devices built in code, written as Go writes them.

:class:`MetadataTree` holds its claims (:class:`ClaimBuilder`), their requests
(:class:`RequestBuilder`) and devices (:class:`DeviceBuilder`), and writes one
file per claim, base request and driver in the container layout: first writes,
updates with the generation bumped, torn files and removal, through
:func:`write_file`. The builders ask their tree for paths, generations and the
object a file holds, and the tree makes and tells apart the builders, so they
live together.

The same tree written on a node and seen through bind mounts is in
:mod:`._testing_mounted`; the public face of both is :mod:`dra_metadata.testing`.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, Self, TypeAlias

from ._encode import DEFAULT_VERSIONS, encode
from ._model import (
    AttributeInput,
    Device,
    DeviceAttribute,
    DeviceMetadata,
    DeviceMetadataRequest,
    NetworkDeviceData,
    ObjectMeta,
    VersionValue,
    to_attribute,
)
from ._paths import (
    METADATA_FILE_SUFFIX,
    RESOURCE_CLAIM_TEMPLATES_SUBDIR,
    RESOURCE_CLAIMS_SUBDIR,
    check_name,
    request_base,
)
from ._safedir import make_dirs as _make_dirs
from ._safedir import replace_file, rewrite_in_place

__all__ = [
    "ClaimBuilder",
    "DeviceBuilder",
    "MetadataTree",
    "RequestBuilder",
    "WriteMode",
    "make_dirs",
    "version",
    "write_file",
]

#: How a file is (re)written: ``"in-place"`` truncates and writes the same inode (Go
#: v1.36); ``"rename"`` writes a temporary file and renames it over the target (Go v1.37).
WriteMode: TypeAlias = Literal["in-place", "rename"]

_MODES: Final = ("in-place", "rename")
# Namespace for the claim UIDs a tree makes up: the same claim gets the same UID in every run.
_UID_NAMESPACE: Final = uuid.UUID("6f1e2d3c-4b5a-4978-8e6f-5d4c3b2a1908")
# The characters Kubernetes uses for the random suffix of a generated name.
_NAME_SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


def version(text: str) -> VersionValue:
    """Mark ``text`` as a semantic version, so that it becomes a ``version`` attribute.

    >>> to_attribute(version("1.2.3"))
    DeviceAttribute(version='1.2.3')
    """
    return VersionValue(text)


def _attributes(
    given: Mapping[str, AttributeInput] | None, keywords: Mapping[str, AttributeInput]
) -> dict[str, DeviceAttribute]:
    merged: dict[str, DeviceAttribute] = {}
    for source in (given or {}, keywords):
        for name, value in source.items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"attribute name must be a non-empty string, not {name!r}")
            merged[name] = to_attribute(value)
    return merged


class DeviceBuilder:
    """One device of a request: identity, attributes and network data, all changeable.

    Made by :meth:`RequestBuilder.device`. Changes reach the files at the next
    :meth:`MetadataTree.write` or :meth:`MetadataTree.update`.
    """

    def __init__(
        self,
        request: RequestBuilder,
        driver: str,
        pool: str,
        name: str,
        attributes: dict[str, DeviceAttribute],
        network_data: NetworkDeviceData | None,
    ) -> None:
        self._request = request
        self.driver: Final = driver
        self.pool: Final = pool
        self.name: Final = name
        self._attributes = attributes
        self._network_data = network_data

    def __repr__(self) -> str:
        return f"DeviceBuilder({self.driver!r}, {self.pool!r}, {self.name!r})"

    @property
    def request(self) -> RequestBuilder:
        """The request this device belongs to."""
        return self._request

    def set(
        self, attributes: Mapping[str, AttributeInput] | None = None, /, **values: AttributeInput
    ) -> DeviceBuilder:
        """Add or replace attributes (as :meth:`RequestBuilder.device` takes them); returns self."""
        self._attributes.update(_attributes(attributes, values))
        return self

    def unset(self, *names: str) -> DeviceBuilder:
        """Remove attributes by their exact key; returns self."""
        for name in names:
            if name not in self._attributes:
                raise KeyError(f"{self!r} has no attribute {name!r}")
            del self._attributes[name]
        return self

    def network(
        self,
        *,
        interface_name: str = "",
        ips: Iterable[str] = (),
        hardware_address: str = "",
    ) -> DeviceBuilder:
        """Set the device's network data (replacing any earlier); returns self.

        >>> dev = MetadataTree("/nowhere").claim("nic").request("eth").device("n.x", "p", "vf-0")
        >>> dev.network(interface_name="net1", ips=["10.0.0.5/24"]).build().network_data
        NetworkDeviceData(interface_name='net1', ips=('10.0.0.5/24',))
        """
        if isinstance(ips, str):
            raise TypeError("ips must be a list of strings, not one string")
        self._network_data = NetworkDeviceData(
            interface_name=interface_name, ips=tuple(ips), hardware_address=hardware_address
        )
        return self

    def without_network(self) -> DeviceBuilder:
        """Drop the device's network data; returns self."""
        self._network_data = None
        return self

    def build(self) -> Device:
        """The :class:`~dra_metadata.Device` as it will be written."""
        return Device(
            self.driver,
            self.pool,
            self.name,
            attributes=dict(self._attributes),
            network_data=self._network_data,
        )

    @property
    def path(self) -> Path:
        """The file a container reads this device from."""
        return self._request.path(self.driver)

    @property
    def host_path(self) -> Path:
        """The file the tree writes this device to (the same as :attr:`path` unless mounted)."""
        return self._request.host_path(self.driver)


class RequestBuilder:
    """One request of a claim (``gpu`` or a subrequest ``gpu/high-memory``).

    Made by :meth:`ClaimBuilder.request`. Each driver serving it gets its own file.
    """

    def __init__(self, claim: ClaimBuilder, name: str) -> None:
        self._claim = claim
        self.name: Final = name
        self.base_name: Final = request_base(name)
        self._devices: list[DeviceBuilder] = []
        self._drivers: list[str] = []

    def __repr__(self) -> str:
        return f"RequestBuilder({self._claim!r}, {self.name!r})"

    @property
    def claim(self) -> ClaimBuilder:
        """The claim this request belongs to."""
        return self._claim

    @property
    def devices(self) -> tuple[DeviceBuilder, ...]:
        """The devices, in the order they were added."""
        return tuple(self._devices)

    @property
    def drivers(self) -> tuple[str, ...]:
        """The drivers that serve this request (one file each), in the order first seen."""
        return tuple(self._drivers)

    def device(
        self,
        driver: str,
        pool: str,
        name: str,
        *,
        attributes: Mapping[str, AttributeInput] | None = None,
        network: NetworkDeviceData | None = None,
        **values: AttributeInput,
    ) -> DeviceBuilder:
        """Add a device; keyword arguments become attributes by kind (see :func:`to_attribute`).

        ``attributes`` takes names a keyword cannot hold (qualified ones with a ``/``).
        A device's identity (driver, pool, name) must be new in the request.

        >>> req = MetadataTree("/nowhere").claim("c").request("gpu")
        >>> dev = req.device("gpu.example.com", "node-a", "gpu-0", index=0,
        ...                  attributes={"resource.kubernetes.io/pciBusID": "0000:3b:00.0"})
        >>> dev.build().pci_bus_id, dev.build().attribute("index")
        ('0000:3b:00.0', 0)
        """
        check_name("driver", driver)
        for other in self._devices:
            if (other.driver, other.pool, other.name) == (driver, pool, name):
                raise ValueError(f"request {self.name!r} already has device {other!r}")
        device = DeviceBuilder(self, driver, pool, name, _attributes(attributes, values), network)
        self._devices.append(device)
        if driver not in self._drivers:
            self._drivers.append(driver)
        return device

    def add_driver(self, driver: str) -> RequestBuilder:
        """Have ``driver`` serve this request, devices or not: its file may list none; returns self.

        A request's drivers otherwise come from its devices; this gives a file
        whose device list is empty (as :meth:`remove_device` of the last device
        leaves it). Devices of ``driver`` may still be added. Adding a driver the
        request already has changes nothing.

        >>> req = MetadataTree("/nowhere").claim("c").request("r").add_driver("d.example.com")
        >>> req.drivers, req.metadata().requests[0].devices
        (('d.example.com',), ())
        """
        check_name("driver", driver)
        if driver not in self._drivers:
            self._drivers.append(driver)
        return self

    def remove_device(self, device: DeviceBuilder) -> None:
        """Take a device out of the request; its driver's file stays, maybe with no devices."""
        self._devices.remove(device)

    def _driver(self, driver: str | None) -> str:
        if driver is not None:
            if driver not in self._drivers:
                raise ValueError(f"request {self.name!r} has no device from driver {driver!r}")
            return driver
        if len(self._drivers) != 1:
            raise ValueError(
                f"request {self.name!r} is served by {len(self._drivers)} drivers: name one"
            )
        return self._drivers[0]

    def path(self, driver: str | None = None) -> Path:
        """The file a container reads for ``driver`` (optional when only one driver serves it)."""
        return self._claim._tree._path_of(
            _FileKey(self._claim, self.base_name, self._driver(driver))
        )

    def host_path(self, driver: str | None = None) -> Path:
        """The file the tree writes for ``driver`` (:meth:`path` unless the tree is mounted)."""
        key = _FileKey(self._claim, self.base_name, self._driver(driver))
        return self._claim._tree._host_path_of(key)

    def metadata(
        self, driver: str | None = None, *, generation: int | None = None
    ) -> DeviceMetadata:
        """The object ``driver``'s file holds, at ``generation`` (default: its current one).

        A file not written yet is shown at the generation its first write will have.
        """
        name = self._driver(driver)
        tree = self._claim._tree
        key = _FileKey(self._claim, self.base_name, name)
        if generation is None:
            generation = tree.generation(key) or self._claim.initial_generation
        return tree._object(key, generation)

    def encode(
        self,
        driver: str | None = None,
        *,
        generation: int | None = None,
        versions: Iterable[str] | None = None,
    ) -> bytes:
        """The bytes of ``driver``'s file, without writing it (for hand-made variants)."""
        name = self._driver(driver)
        chosen = self._claim._tree.versions_for(name) if versions is None else tuple(versions)
        return encode(self.metadata(name, generation=generation), chosen)


class ClaimBuilder:
    """A ResourceClaim as the kubelet plugin sees it: identity and requests.

    Made by :meth:`MetadataTree.claim` (a claim referenced by name) or
    :meth:`MetadataTree.template_claim` (a claim made from a template).
    """

    def __init__(
        self,
        tree: MetadataTree,
        *,
        name: str,
        namespace: str,
        uid: str,
        generation: int,
        pod_claim_name: str | None,
    ) -> None:
        self._tree = tree
        self.name: Final = name
        self.namespace: Final = namespace
        self.uid: Final = uid
        self.initial_generation: Final = generation
        self.pod_claim_name: Final = pod_claim_name
        self._requests: dict[str, RequestBuilder] = {}

    def __repr__(self) -> str:
        if self.pod_claim_name is not None:
            return f"ClaimBuilder(template {self.pod_claim_name!r}: {self.namespace}/{self.name})"
        return f"ClaimBuilder({self.namespace}/{self.name})"

    @property
    def subdir(self) -> str:
        """``resourceclaims`` or ``resourceclaimtemplates``: where a container finds it."""
        if self.pod_claim_name is None:
            return RESOURCE_CLAIMS_SUBDIR
        return RESOURCE_CLAIM_TEMPLATES_SUBDIR

    @property
    def directory_name(self) -> str:
        """The claim's directory in the container: its name, or its pod-spec claim name."""
        return self.name if self.pod_claim_name is None else self.pod_claim_name

    @property
    def requests(self) -> tuple[RequestBuilder, ...]:
        """The requests, in the order they were added."""
        return tuple(self._requests.values())

    def request(self, name: str) -> RequestBuilder:
        """The request named ``name`` (``req`` or ``req/sub``), added on first use.

        Go writes one file per base request, so ``gpu`` and ``gpu/sub`` cannot both
        be in one claim.
        """
        found = self._requests.get(name)
        if found is not None:
            return found
        request = RequestBuilder(self, name)
        for other in self._requests.values():
            if other.base_name == request.base_name:
                raise ValueError(
                    f"requests {other.name!r} and {name!r} would share the directory "
                    f"{request.base_name!r}"
                )
        self._requests[name] = request
        return request


@dataclass(frozen=True, eq=False)
class _FileKey:
    """One file: a claim's base request as written by one driver."""

    claim: ClaimBuilder
    base: str
    driver: str

    def ident(self) -> tuple[str, str, str, str]:
        return (self.claim.subdir, self.claim.directory_name, self.base, self.driver)

    def __hash__(self) -> int:
        return hash(self.ident())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _FileKey) and self.ident() == other.ident()


@dataclass
class _FileState:
    generation: int  # of the last complete write
    data: bytes | None  # the bytes of the last complete write; None while torn
    torn_generation: int | None = None  # the generation an interrupted write was writing


_Target: TypeAlias = ClaimBuilder | RequestBuilder | DeviceBuilder


class MetadataTree:
    """A metadata tree in the container layout under ``root``, built and written in code.

    ``versions`` are the API versions every file holds, in order (the Go writer
    lists the newest first); :meth:`set_versions` changes them for one driver.
    ``mode`` is the default for :meth:`write` and :meth:`update`.

    Usable as a context manager; :meth:`close` releases what the tree holds
    (mounts, for :class:`MountedMetadataTree`).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        versions: Iterable[str] = DEFAULT_VERSIONS,
        mode: WriteMode = "rename",
    ) -> None:
        self.root: Final = Path(root)
        self._versions = _check_versions(versions)
        self._driver_versions: dict[str, tuple[str, ...]] = {}
        self.mode: WriteMode = _check_mode(mode)
        self._claims: dict[tuple[str, str], ClaimBuilder] = {}
        self._files: dict[_FileKey, _FileState] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.root)!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release what the tree holds; the files stay. Safe to call more than once."""

    # --- building ---------------------------------------------------------------------

    def claim(
        self,
        name: str,
        *,
        namespace: str | None = None,
        uid: str | None = None,
        generation: int | None = None,
    ) -> ClaimBuilder:
        """The claim referenced by name ``name`` (``resourceclaims/<name>``), added on first use.

        ``namespace`` defaults to ``default``; ``uid`` to one derived from namespace
        and name (the same in every run); ``generation`` is what files get at their
        first write (1, as the kubelet plugin writes).
        """
        check_name("claim", name)
        return self._claim(
            (RESOURCE_CLAIMS_SUBDIR, name),
            name=name,
            namespace=namespace,
            uid=uid,
            generation=generation,
            pod_claim_name=None,
        )

    def template_claim(
        self,
        pod_claim_name: str,
        *,
        pod: str | None = None,
        claim_name: str | None = None,
        namespace: str | None = None,
        uid: str | None = None,
        generation: int | None = None,
    ) -> ClaimBuilder:
        """A claim made from a ResourceClaimTemplate, found under ``resourceclaimtemplates/``.

        ``pod_claim_name`` is the claim's name in the pod spec. The claim's own name
        defaults to what Kubernetes generates, ``<pod>-<pod_claim_name>-<5 chars>``
        (``pod`` defaults to ``my-pod``; the suffix is derived from namespace, pod
        and claim, so it is the same in every run). Naming an existing template
        claim again without ``pod`` or ``claim_name`` returns it.

        >>> claim = MetadataTree("/nowhere").template_claim("gpu", pod="trainer-0")
        >>> claim.name, claim.pod_claim_name, claim.namespace
        ('trainer-0-gpu-zbftz', 'gpu', 'default')
        """
        check_name("pod claim", pod_claim_name)
        ns = "default" if namespace is None else namespace
        existing = self._claims.get((RESOURCE_CLAIM_TEMPLATES_SUBDIR, pod_claim_name))
        if claim_name is None and (pod is not None or existing is None):
            pod = "my-pod" if pod is None else pod
            claim_name = f"{pod}-{pod_claim_name}-{_name_suffix(ns, pod, pod_claim_name)}"
        if claim_name is not None:
            check_name("claim", claim_name)
        return self._claim(
            (RESOURCE_CLAIM_TEMPLATES_SUBDIR, pod_claim_name),
            name=claim_name,
            namespace=namespace,
            uid=uid,
            generation=generation,
            pod_claim_name=pod_claim_name,
        )

    def _claim(
        self,
        key: tuple[str, str],
        *,
        name: str | None,
        namespace: str | None,
        uid: str | None,
        generation: int | None,
        pod_claim_name: str | None,
    ) -> ClaimBuilder:
        found = self._claims.get(key)
        if found is not None:
            given = {"name": name, "namespace": namespace, "uid": uid, "generation": generation}
            have = {
                "name": found.name,
                "namespace": found.namespace,
                "uid": found.uid,
                "generation": found.initial_generation,
            }
            for field, value in given.items():
                if value is not None and value != have[field]:
                    raise ValueError(f"{found!r} already exists with {field}={have[field]!r}")
            return found
        ns = "default" if namespace is None else namespace
        if name is None:  # pragma: no cover - callers always name a new claim
            raise ValueError("a new claim needs a name")
        if generation is not None and generation < 0:
            raise ValueError(f"generation must not be negative, got {generation}")
        claim = ClaimBuilder(
            self,
            name=name,
            namespace=ns,
            uid=_uid(ns, name) if uid is None else uid,
            generation=1 if generation is None else generation,
            pod_claim_name=pod_claim_name,
        )
        self._claims[key] = claim
        return claim

    @property
    def claims(self) -> tuple[ClaimBuilder, ...]:
        """The claims, in the order they were added."""
        return tuple(self._claims.values())

    def set_versions(self, versions: Iterable[str], *, driver: str | None = None) -> None:
        """The API versions (in order) of every file, or of ``driver``'s files only.

        Any ``group/version`` string is accepted, so a test can put entries of
        versions no reader knows in front.
        """
        chosen = _check_versions(versions)
        if driver is None:
            self._versions = chosen
        else:
            self._driver_versions[check_name("driver", driver)] = chosen

    def versions_for(self, driver: str) -> tuple[str, ...]:
        """The API versions ``driver``'s files are written in."""
        return self._driver_versions.get(driver, self._versions)

    # --- paths --------------------------------------------------------------------------

    def _path_of(self, key: _FileKey) -> Path:
        """Where a container reads the file ``key`` (internal; use the builders' ``path``)."""
        claim = key.claim
        return (
            self.root
            / claim.subdir
            / claim.directory_name
            / key.base
            / (key.driver + METADATA_FILE_SUFFIX)
        )

    def _host_path_of(self, key: _FileKey) -> Path:
        """Where the tree writes the file ``key`` (internal)."""
        return self._path_of(key)

    # --- what the files hold --------------------------------------------------------------

    def _object(self, key: _FileKey, generation: int) -> DeviceMetadata:
        claim = key.claim
        request = next(r for r in claim.requests if r.base_name == key.base)
        return DeviceMetadata(
            metadata=ObjectMeta(
                name=claim.name,
                namespace=claim.namespace,
                uid=claim.uid,
                generation=generation,
            ),
            pod_claim_name=claim.pod_claim_name,
            requests=(
                DeviceMetadataRequest(
                    request.name,
                    tuple(d.build() for d in request.devices if d.driver == key.driver),
                ),
            ),
        )

    def _render(self, key: _FileKey, generation: int) -> bytes:
        return encode(self._object(key, generation), self.versions_for(key.driver))

    def _model_keys(self) -> list[_FileKey]:
        return [
            _FileKey(claim, request.base_name, driver)
            for claim in self._claims.values()
            for request in claim.requests
            for driver in request.drivers
        ]

    def _keys_of(self, what: _Target, driver: str | None = None) -> list[_FileKey]:
        if isinstance(what, DeviceBuilder):
            if driver is not None and driver != what.driver:
                raise ValueError(f"{what!r} is not from driver {driver!r}")
            keys = [_FileKey(what.request.claim, what.request.base_name, what.driver)]
        elif isinstance(what, RequestBuilder):
            keys = [_FileKey(what.claim, what.base_name, d) for d in what.drivers]
        elif isinstance(what, ClaimBuilder):
            keys = [_FileKey(what, r.base_name, d) for r in what.requests for d in r.drivers]
        else:
            raise TypeError(f"expected a claim, request or device builder, not {what!r}")
        if driver is not None:
            keys = [key for key in keys if key.driver == driver]
        if not keys:
            raise ValueError(f"{what!r} has no file yet: add a device first")
        for key in keys:
            if self._claims.get((key.claim.subdir, key.claim.directory_name)) is not key.claim:
                raise ValueError(f"{key.claim!r} is not (or no longer) part of {self!r}")
        return keys

    def generation(self, what: _Target | _FileKey, driver: str | None = None) -> int:
        """The generation of the last complete write of ``what``'s file (0 if never written)."""
        keys = [what] if isinstance(what, _FileKey) else self._keys_of(what, driver)
        if len(keys) != 1:
            raise ValueError(f"{what!r} has {len(keys)} files: name a driver or a device")
        state = self._files.get(keys[0])
        return 0 if state is None else state.generation

    # --- writing ------------------------------------------------------------------------

    def write(self, *, mode: WriteMode | None = None) -> list[Path]:
        """Make the files match the tree, generations unchanged; returns the files written.

        A file written for the first time gets its claim's initial generation (1);
        a file whose content changed is rewritten at the same generation (use
        :meth:`update` to bump it); a torn file is completed.
        """
        chosen = self.mode if mode is None else _check_mode(mode)
        written = []
        for key in self._model_keys():
            state = self._files.get(key)
            if state is None:
                generation = key.claim.initial_generation
            elif state.torn_generation is not None:
                generation = state.torn_generation
            else:
                generation = state.generation
            data = self._render(key, generation)
            if state is not None and state.torn_generation is None and state.data == data:
                continue
            self._put(key, data, chosen)
            self._files[key] = _FileState(generation, data)
            written.append(self._host_path_of(key))
        return written

    def update(self, *what: _Target, mode: WriteMode | None = None) -> list[Path]:
        """Rewrite files with the generation bumped, as the plugin's metadata update does.

        With no arguments: every file whose content changed since it was written
        (new files get their first generation, torn ones are completed). With
        claims, requests or devices: their files, changed or not. Raises
        ``ValueError`` when nothing changed and nothing was named.

        ``mode="in-place"`` truncates and writes the same inode (Go v1.36: a
        bind-mounted container sees it); ``mode="rename"`` renames a new file over
        the old one (Go v1.37: a container that mounted the old file keeps it).
        """
        chosen = self.mode if mode is None else _check_mode(mode)
        if what:
            keys = list(dict.fromkeys(key for target in what for key in self._keys_of(target)))
        else:
            keys = [key for key in self._model_keys() if self._changed(key)]
            if not keys:
                raise ValueError("nothing changed since the last write: name what to update")
        written = []
        for key in keys:
            state = self._files.get(key)
            if state is None:
                generation = key.claim.initial_generation
            elif state.torn_generation is not None:
                generation = state.torn_generation
            else:
                generation = state.generation + 1
            data = self._render(key, generation)
            self._put(key, data, chosen)
            self._files[key] = _FileState(generation, data)
            written.append(self._host_path_of(key))
        return written

    def _changed(self, key: _FileKey) -> bool:
        state = self._files.get(key)
        if state is None or state.torn_generation is not None:
            return True
        return state.data != self._render(key, state.generation)

    def tear(
        self, what: _Target, *, size: int | None = None, driver: str | None = None
    ) -> list[Path]:
        """Leave ``what``'s files as a reader sees them in the middle of an in-place write.

        Each file gets the first ``size`` bytes of its next generation's content,
        written in place; ``size=0`` leaves it empty. The default is half of the
        stream's first entry, which no reader can decode (a prefix that holds the
        whole first entry still decodes: readers never look past it). The next
        :meth:`write` or :meth:`update` completes that generation.
        """
        if size is not None and size < 0:
            raise ValueError(f"size must not be negative, got {size}")
        written = []
        for key in self._keys_of(what, driver):
            state = self._files.get(key)
            if state is None:
                generation = key.claim.initial_generation
            elif state.torn_generation is not None:
                generation = state.torn_generation
            else:
                generation = state.generation + 1
            data = self._render(key, generation)
            keep = _first_entry_size(data) // 2 if size is None else size
            if keep >= len(data):
                raise ValueError(f"size {keep} would not tear a file of {len(data)} bytes")
            self._put(key, data[:keep], "in-place")
            if state is None:
                self._files[key] = _FileState(0, None, generation)
            else:
                state.torn_generation = generation
            written.append(self._host_path_of(key))
        return written

    def remove(self, what: ClaimBuilder | RequestBuilder) -> list[Path]:
        """Delete a claim's (or one request's) files and empty directories, as at unprepare.

        The claim or request leaves the tree; returns the files removed.
        """
        keys = [key for key in self._keys_of_any(what) if key in self._files]
        removed = []
        for key in keys:
            self._delete(key)
            del self._files[key]
            removed.append(self._host_path_of(key))
        if isinstance(what, ClaimBuilder):
            del self._claims[(what.subdir, what.directory_name)]
        else:
            del what.claim._requests[what.name]
        return removed

    def _keys_of_any(self, what: ClaimBuilder | RequestBuilder) -> list[_FileKey]:
        claim = what if isinstance(what, ClaimBuilder) else what.claim
        if self._claims.get((claim.subdir, claim.directory_name)) is not claim:
            raise ValueError(f"{claim!r} is not (or no longer) part of {self!r}")
        if isinstance(what, RequestBuilder):
            return [_FileKey(claim, what.base_name, d) for d in what.drivers]
        return [_FileKey(claim, r.base_name, d) for r in claim.requests for d in r.drivers]

    # --- file operations (overridden by MountedMetadataTree) ------------------------------

    def _put(self, key: _FileKey, data: bytes, mode: WriteMode) -> None:
        write_file(self._host_path_of(key), data, mode)

    def _delete(self, key: _FileKey) -> None:
        path = self._host_path_of(key)
        path.unlink(missing_ok=True)
        _prune(path.parent, self.root)


def _first_entry_size(data: bytes) -> int:
    """The size of the first object of a stream as :func:`~dra_metadata.encode` writes it."""
    end = data.find(b"\n}\n")
    return len(data) if end < 0 else end + 2


def _check_versions(versions: Iterable[str]) -> tuple[str, ...]:
    if isinstance(versions, str):
        raise TypeError("versions must be a sequence of apiVersion strings, not one string")
    chosen = tuple(versions)
    if not chosen:
        raise ValueError("a metadata file needs at least one API version")
    return chosen


def _check_mode(mode: str) -> WriteMode:
    if mode == "in-place":
        return "in-place"
    if mode == "rename":
        return "rename"
    raise ValueError(f"mode must be one of {', '.join(_MODES)}, not {mode!r}")


def _uid(namespace: str, name: str) -> str:
    """A claim's UID from its namespace and name: ``uuid5``, for file-system names too.

    Names read from a directory may hold undecodable bytes (surrogate escapes);
    they hash as those bytes, where :func:`uuid.uuid5` would fail to encode them.
    """
    data = _UID_NAMESPACE.bytes + f"{namespace}/{name}".encode("utf-8", "surrogateescape")
    return str(uuid.UUID(bytes=hashlib.sha1(data).digest()[:16], version=5))


def _name_suffix(*parts: str) -> str:
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogateescape")).digest()
    return "".join(_NAME_SUFFIX_ALPHABET[b % len(_NAME_SUFFIX_ALPHABET)] for b in digest[:5])


def make_dirs(directory: Path) -> None:
    """Create ``directory`` and missing parents with mode 0755 whatever the umask."""
    _make_dirs(directory)


def write_file(path: Path, data: bytes, mode: WriteMode) -> None:
    """Write ``data`` to ``path`` as the Go writer does: in place, or temp file + rename.

    The file ends up with mode 0644 whatever the umask. ``"in-place"`` keeps the
    inode of an existing file (Go v1.36); ``"rename"`` always gives a new one, a
    crash-safe replace (Go v1.37). Both are the publisher's own writes.
    """
    make_dirs(path.parent)
    if mode == "in-place":
        rewrite_in_place(path, data)
    else:
        replace_file(path, data)


def _prune(directory: Path, stop: Path) -> None:
    """Remove empty directories from ``directory`` up to, not including, ``stop``."""
    stop = stop.resolve()
    current = directory
    while current.resolve() != stop and stop in current.resolve().parents:
        try:
            current.rmdir()
        except OSError:  # not empty, or gone
            return
        current = current.parent
