"""What was I given? Everything mounted in this container, in one object.

:func:`inventory` walks the metadata root by the documented layout (no link
below the root is followed, no file outside the layout is opened) and returns an
:class:`Inventory`: per request directory a :class:`MountedRequest` (claim kind,
claim or pod-claim name, request, the allocated subrequest, drivers, merged
devices, the claim's identity and each file's generation), every device across
all claims as a :class:`MountedDevice` that knows its claim and request, and the
files that could not be used as :class:`Problem` records: data, never raised.

The ``ls`` and ``env`` commands are built on it.

>>> import dra_metadata as dm
>>> inv = dm.inventory("examples/dra-device-attributes")
>>> [(r.kind, r.claim, r.request, r.drivers) for r in inv.requests][:2]
[('claim', 'cpus', 'cpus', ('dra.cpu',)), ('claim', 'nic', 'eth', ('sriov.example.com',))]
>>> [d.name for d in inv.devices(driver="gpu.example.com")]
['gpu-0', 'gpu-0', 'gpu-1', 'gpu-2']
>>> [(d.claim, d.request) for d in inv.devices(where={"index": 1})]
[('gpu', 'gpu')]
>>> inv.request("inference", "gpu").subrequest
'gpu/high-memory'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from itertools import groupby
from operator import attrgetter
from typing import TYPE_CHECKING, Final

import msgspec

from ._errors import (
    MetadataNotFoundError,
)
from ._model import Device, MergedDeviceMetadata
from ._paths import RootArg, claim_label, root_path
from ._read import DEFAULT_MAX_SIZE, merge
from ._select import (
    ClaimKind,
    MountedFile,
    Place,
    Problem,
    ProblemKind,
    Question,
    ask,
    narrow,
    problem_kind,
    resolve,
    scan,
)
from ._standard import has_answer, normal_pci_address, standard_name, standard_values

if TYPE_CHECKING:
    from ._mounted import MountedDevice
    from ._topology import DeviceKind, KindRule, Topology
    from ._variables import ClaimVariable

__all__ = [
    "Inventory",
    "MountedFile",
    "MountedRequest",
    "Problem",
    "ProblemKind",
    "from_entries",
    "inventory",
    "matches",
    "mounted",
    "problem_kind",
    "select",
]


class MountedRequest(msgspec.Struct, frozen=True, gc=False):
    """One request directory: what was mounted for one request of one claim.

    ``claim`` is the claim's name (``kind == "claim"``) or the pod's name for a
    claim made from a template (``kind == "template"``); ``request`` is the
    directory (the base request name). ``metadata`` merges the files that could
    be read (``None`` when none could); ``problems`` lists the others: with any,
    the device list may be incomplete.
    """

    #: How the pod references the claim: ``claim`` or ``template``.
    kind: ClaimKind
    #: The claim's name, or the pod's claim name for a claim made from a template.
    claim: str
    #: The request directory (the base request name).
    request: str
    #: The request directory's path.
    path: str
    #: Every driver's file found in the directory, in name order.
    files: tuple[MountedFile, ...]
    #: The files that could be read, merged as Go merges them; ``None`` when none could.
    metadata: MergedDeviceMetadata | None
    #: The files that could not be read; with any, the device list may be incomplete.
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        """Every file was read and decoded."""
        return not self.problems

    @property
    def drivers(self) -> tuple[str, ...]:
        """The drivers whose files are here, in merge order (problem files included)."""
        return tuple(file.driver for file in self.files)

    @property
    def request_names(self) -> tuple[str, ...]:
        """The request names the files hold (``gpu`` or ``gpu/high-memory``)."""
        return () if self.metadata is None else tuple(r.name for r in self.metadata.requests)

    @property
    def subrequest(self) -> str | None:
        """The subrequest that was allocated (``gpu/high-memory``), or ``None``."""
        for name in self.request_names:
            if "/" in name:
                return name
        return None

    @property
    def devices(self) -> tuple[MountedDevice, ...]:
        """The merged devices, each knowing its claim and request."""
        md = self.metadata
        if md is None:
            return ()
        from ._mounted import MountedDevice  # loaded with the first device made

        return tuple(
            MountedDevice(device, self.kind, self.claim, request.name, self.request)
            for request in md.requests
            for device in request.devices
        )

    @property
    def claim_name(self) -> str | None:
        """The ResourceClaim's name, when its files agree on it."""
        return None if self.metadata is None else self.metadata.claim_name

    @property
    def claim_namespace(self) -> str | None:
        """The ResourceClaim's namespace, when its files agree on it."""
        return None if self.metadata is None else self.metadata.claim_namespace

    @property
    def claim_uid(self) -> str | None:
        """The ResourceClaim's UID, when its files agree on it."""
        return None if self.metadata is None else self.metadata.claim_uid

    @property
    def generations(self) -> dict[str, int]:
        """Each driver's ``metadata.generation`` (files that decoded)."""
        return {} if self.metadata is None else self.metadata.generations

    @property
    def label(self) -> str:
        """How messages name it: ``template claim 'gpu' request 'gpu'``."""
        return claim_label(self.kind, self.claim, self.request)


class Inventory(msgspec.Struct, frozen=True, gc=False):
    """Everything mounted under one metadata root: requests, devices, problems.

    ``exists`` is false when the root itself is missing (nothing is mounted);
    ``files`` lists every place of the layout found, in walk order (claims
    before templates, names in byte order).
    """

    #: The root that was read.
    root: str
    #: Whether the root exists: false when nothing is mounted at all.
    exists: bool
    #: Every request directory found, claims before templates, names in byte order.
    requests: tuple[MountedRequest, ...] = ()
    #: Every place of the layout found, in walk order.
    files: tuple[MountedFile, ...] = ()
    #: Every file or directory that could not be used, with why.
    problems: tuple[Problem, ...] = ()

    def __iter__(self) -> Iterator[MountedRequest]:
        return iter(self.requests)

    def __len__(self) -> int:
        return len(self.requests)

    def request(
        self, claim: str, request: str, *, claim_kind: ClaimKind | None = None
    ) -> MountedRequest:
        """The request directory ``request`` (``req`` or ``req/sub``) of ``claim``.

        ``claim_kind`` (``"claim"`` or ``"template"``) tells a claim from a
        template claim of the same name. Asked as every reader and command asks (one
        resolver; *Which request* in ``docs/reading.md``): ``req`` answers whatever
        subrequest was allocated (:attr:`MountedRequest.subrequest` says which); ``req/sub`` one
        that holds exactly it. Anything else raises the readers'
        :class:`~dra_metadata.MetadataNotFoundError` (the same words, naming
        what was allocated or what is nearby), never ``None``.

        >>> import dra_metadata as dm
        >>> inv = dm.inventory("examples/dra-device-attributes")
        >>> inv.request("inference", "gpu").subrequest
        'gpu/high-memory'
        >>> try:
        ...     inv.request("inference", "gpu/low-memory")
        ... except dm.MetadataNotFoundError as err:
        ...     print(err.nearby)
        ('gpu/high-memory',)
        """
        if claim_kind is None:
            kinds = {found.kind for found in self.requests if found.claim == claim}
            claim_kind = "template" if kinds == {"template"} else "claim"
        question = ask(kind=claim_kind, claim=claim, request=request, parameter="claim_kind")
        return select(self, question).requests[0]

    def claims(self) -> list[tuple[ClaimKind, str]]:
        """The ``(kind, claim)`` pairs that have at least one request directory."""
        seen: dict[tuple[ClaimKind, str], None] = {}
        for found in self.requests:
            seen.setdefault((found.kind, found.claim), None)
        return list(seen)

    @property
    def drivers(self) -> tuple[str, ...]:
        """Every driver with a file here, in byte order."""
        return tuple(sorted({file.driver for file in self.files if file.driver}, key=os.fsencode))

    def devices(
        self,
        *,
        driver: str | None = None,
        claim_kind: ClaimKind | None = None,
        claim: str | None = None,
        request: str | None = None,
        has: str | Iterable[str] = (),
        where: Mapping[str, object] | None = None,
    ) -> list[MountedDevice]:
        """Every device across all claims and requests, optionally narrowed.

        ``claim_kind`` (``"claim"`` or ``"template"``: the kind of claim, not of
        device; anything else is a :class:`ValueError`), ``claim`` and
        ``request`` (``req``, or ``req/sub``) are asked as every reader asks
        them (:meth:`request`): naming a claim or request that is not mounted, or
        a subrequest that was not allocated, raises the readers'
        :class:`~dra_metadata.MetadataNotFoundError`, never answers ``[]``.
        ``driver`` keeps that driver's devices; ``has`` devices that have every
        named attribute; ``where`` those whose attributes have the given
        values. Names resolve as :meth:`Device.attribute` resolves them, and a
        standard attribute counts by its meaning (a negative ``numaNode`` is no
        node, ``has="numaNodes"`` asks for the list), as ``get`` answers; a list
        (in the metadata or in ``where``) is a set that matches when it shares a
        value, and a standard attribute is compared in its meaning
        (``where={"numaNode": 0}`` selects what ``topology().on_numa_node(0)``
        does, and ``where={"pciBusID": "0000:3B:00.0"}`` matches NVIDIA's
        ``00000000:3B:00.0``).

        >>> import dra_metadata as dm
        >>> inv = dm.inventory("examples/dra-device-attributes")
        >>> [d.name for d in inv.devices(has="resource.kubernetes.io/pcieRoot")]
        ['enp94s0f0v3', 'gpu-0', 'mlx5-0', 'gpu-3']
        >>> [d.request for d in inv.devices(claim_kind="template", request="gpu/high-memory")]
        ['gpu/high-memory']
        """
        wanted = (has,) if isinstance(has, str) else tuple(has)
        conditions = dict(where or {})
        question = ask(kind=claim_kind, claim=claim, request=request, parameter="claim_kind")
        source = select(self, question) if question.narrows or claim_kind is not None else self
        found: list[MountedDevice] = []
        for mounted in source.requests:
            for device in mounted.devices:
                if driver is not None and device.driver != driver:
                    continue
                if not all(has_answer(device.device, name) for name in wanted):
                    continue
                if not all(_has_value(device, name, value) for name, value in conditions.items()):
                    continue
                found.append(device)
        return found

    def topology(self, *, kinds: Mapping[str, DeviceKind] | KindRule | None = None) -> Topology:
        """Where every device sits: kinds, NUMA nodes, PCIe roots, affinity.

        ``kinds`` overrides the kind rules (driver name -> ``gpu``, ``nic``,
        ``cpu``, ``memory`` or ``other``, or a function of a device returning a
        kind or ``None``); the default rules are in the guide's *Topology, profiles and
        doctor* page (``docs/topology.md``).

        >>> import dra_metadata as dm
        >>> topo = dm.inventory("examples/topology-tree").topology()
        >>> [(d.label, d.name) for d in topo.gpus]
        [('gpu0', 'gpu-0'), ('gpu1', 'gpu-1')]
        """
        from ._topology import build  # loaded on use: env and get never need it

        return build(self.devices(), kinds=kinds)

    def claim_variables(self, environ: Mapping[str, str] | None = None) -> list[ClaimVariable]:
        """Variables of ``environ`` (default ``os.environ``) carrying a mounted claim's UID.

        Joins what drivers inject through CDI (``DRA_CPUSET_<claimUID>``) to the
        claim and requests it belongs to (each a :class:`~dra_metadata.ClaimVariable`).

        >>> import dra_metadata as dm
        >>> inv = dm.inventory("examples/topology-tree")
        >>> env = {"EXAMPLE_RESOURCE_CLAIM": "7f6e5d4c-3b2a-4190-8f7e-6d5c4b3a2910"}
        >>> [(v.name, v.claim, v.requests) for v in inv.claim_variables(env)]
        [('EXAMPLE_RESOURCE_CLAIM', 'rdma', ('nic',))]
        """
        from ._variables import claim_variables  # loaded on use: env and get never need it

        return claim_variables(self.requests, environ)


def matches(device: Device, name: str, wanted: object) -> bool:
    """Whether attribute ``name`` of ``device`` has the value ``wanted``.

    A list on either side is a set, as a ResourceClaim's ``matchAttribute``
    treats list attributes (KEP-5491): they match when they share a value. A
    standard attribute is compared in its meaning (the model's ``standard_values``):
    ``numaNode`` 0 matches a device local to nodes ``[1, 0]``, ``pciBusID``
    ``0000:3B:00.0`` matches NVIDIA's ``00000000:3B:00.0``.

    >>> from dra_metadata import Device, DeviceAttribute as A
    >>> cpu = Device("dra.cpu", "p", "c", {"numaNodeID": A(int=1), "cpus": A(ints=(4, 5))})
    >>> matches(cpu, "numaNode", 1), matches(cpu, "cpus", 5), matches(cpu, "cpus", [6, 7])
    (True, True, False)
    """
    wanted_values = tuple(wanted) if isinstance(wanted, list | tuple) else (wanted,)
    have = standard_values(device, name)
    if have is None:
        found = device.find_attribute(name)
        value = None if found is None else found.value
        if value is None:
            return False
        have = value if isinstance(value, tuple) else (value,)
    elif standard_name(name) == "pciBusID":
        wanted_values = tuple(
            normal_pci_address(v) if isinstance(v, str) else v for v in wanted_values
        )
    return any(  # True is no 1 here
        (type(a) is bool) == (type(b) is bool) and a == b for a in have for b in wanted_values
    )


def _has_value(device: MountedDevice, name: str, value: object) -> bool:
    return matches(device.device, name, value)


def select(inv: Inventory, question: Question) -> Inventory:
    """``inv`` narrowed to what ``question`` names, as the one resolver decides it.

    Raises :class:`~dra_metadata.MetadataNotFoundError` when the question
    names a claim, request or driver and nothing in ``inv`` answers it (see
    :func:`dra_metadata._select.resolve`).
    """
    if question == Question():
        return inv  # nothing asked: everything answers
    places = [
        Place(
            found.kind,
            found.claim,
            found.request,
            found.path,
            None if found.metadata is None else found.request_names,
        )
        for found in inv.requests
    ]
    kept = resolve(question, inv.root, places)
    requests: list[MountedRequest] = []
    for index, names in kept:
        found = inv.requests[index]
        if found.metadata is not None and len(names) != len(found.metadata.requests):
            found = msgspec.structs.replace(found, metadata=narrow(found.metadata, names))
        requests.append(found)
    keys = {(found.kind, found.claim, found.request) for found in requests}

    def belongs(kind: ClaimKind, claim: str, request: str) -> bool:
        if request:
            return (kind, claim, request) in keys
        return question.kind in (None, kind) and question.claim in (None, claim)

    files = tuple(f for f in inv.files if belongs(f.kind, f.claim, f.request))
    return Inventory(
        root=inv.root,
        exists=inv.exists,
        requests=tuple(requests),
        files=files,
        problems=tuple(p for p in inv.problems if belongs(p.kind, p.claim, p.request)),
    )


def mounted(
    question: Question, root: RootArg = None, *, max_size: int = DEFAULT_MAX_SIZE
) -> Inventory:
    """What ``question`` names under ``root``: the inventory every selecting door reads.

    Walks only what the question names, then asks the one resolver. Raises
    :class:`~dra_metadata.MetadataNotFoundError` for a missing root (or one
    that is not a directory), for a claim, request or driver that is not there,
    for a subrequest that was not allocated, and for a root with nothing
    mounted under it (:func:`dra_metadata._nearby.nothing_mounted`: one wording
    for every door).
    """
    top = root_path(root)
    entries = scan(
        top,
        kind=question.kind,
        claim=question.claim,
        request=question.request,
        driver=question.driver,
        max_size=max_size,
    )
    inv = select(from_entries(top, entries), question)
    if not inv.files:
        from ._nearby import nothing_mounted  # only on the way to an error

        raise nothing_mounted(top)
    return inv


def inventory(root: RootArg = None, *, max_size: int = DEFAULT_MAX_SIZE) -> Inventory:
    """Everything mounted in this container: every request, device and problem.

    ``root`` defaults to ``$DRA_METADATA_ROOT``, else the container directory.
    Never raises for what the node wrote: files that cannot be read or decoded
    are :attr:`Inventory.problems`, a missing root an empty inventory with
    ``exists`` false.

    >>> import dra_metadata as dm
    >>> inv = dm.inventory("examples/dra-device-attributes")
    >>> len(inv.requests), len(inv.devices()), inv.problems
    (6, 11, ())
    """
    top = root_path(root)
    try:
        entries = scan(top, max_size=max_size)
    except MetadataNotFoundError:
        return Inventory(root=top, exists=False)
    return from_entries(top, entries)


def from_entries(root: str, files: list[MountedFile]) -> Inventory:
    """The inventory of the files :func:`~dra_metadata._select.scan` found under ``root``."""
    requests: list[MountedRequest] = []
    for _, same in groupby(files, _KEY):  # the files of one request directory come together
        group = tuple(same)
        first = group[0]
        if not first.request:  # a claim directory that could not be read
            continue
        readable = [(f.path, f.metadata) for f in group if f.metadata is not None]
        requests.append(
            MountedRequest(
                kind=first.kind,
                claim=first.claim,
                request=first.request,
                # a file's directory: its path is the directory's joined with its name
                path=first.path.rpartition("/")[0] if first.driver else first.path,
                files=group,
                metadata=merge(readable) if readable else None,
                # a file has metadata or a problem
                problems=()
                if len(readable) == len(group)
                else tuple(f.problem for f in group if f.problem is not None),
            )
        )
    return Inventory(
        root=root,
        exists=True,
        requests=tuple(requests),
        files=tuple(files),
        problems=tuple(f.problem for f in files if f.problem is not None),
    )


#: A file's request directory: (kind, claim, request).
_KEY: Final = attrgetter("kind", "claim", "request")
