"""Where the devices of a pod sit: NUMA nodes, PCIe roots, device kinds, affinity.

:meth:`Inventory.topology() <dra_metadata.Inventory.topology>` gives a
:class:`Topology`: every mounted device, across every claim, request and
driver, as a :class:`TopologyDevice` that knows its kind (``gpu``, ``nic``,
``cpu``, ``memory`` or ``other``) and its NUMA placement, normalised from the
attribute names drivers publish today.

The device questions (PCI address, PCIe roots, NUMA nodes, kind) are answered
once, by the model (``dra_metadata._model``: the attribute names drivers
publish today and their sources); the topology reads those answers. Where two
NUMA attributes of one device name different nodes, it says so in
:attr:`Topology.problems`. ``kinds=`` given to :meth:`Inventory.topology`
(driver name -> kind, or a function) comes before the kind rules.

Affinity
========

Two devices are, from nearest to farthest (:data:`AFFINITY_LEVELS`):
``pcie-root`` (their ``pcieRoot`` lists intersect), ``numa`` (their NUMA node
lists intersect: KEP-6072 and KEP-5491 alignment), ``socket`` (same
``dra.cpu/socketID``), ``different``; ``unknown`` when either has no placement,
or one has NUMA nodes and the other none. A device listed twice is a problem
(:attr:`Topology.problems`), kept once.

>>> import dra_metadata as dm
>>> topo = dm.inventory("examples/topology-tree").topology()
>>> [(g.name, g.pcie_roots) for g in topo.gpus]
[('gpu-0', ('pci0000:17',)), ('gpu-1', ('pci0000:85',))]
>>> topo.nearest(topo.gpus[0], kind="nic").network_data.interface_name
'net1'
>>> # the CPUs list every root of their node; NVIDIA's GPUs publish no NUMA node
>>> topo.affinity(topo.gpus[0], topo.cpus[0]), topo.affinity(topo.gpus[0], topo.gpus[1])
('pcie-root', 'unknown')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final, Literal

import msgspec

# At run time too: TopologyDevice's fields name them (typing.get_type_hints(), help()).
from ._model import AttributeValue, NetworkDeviceData
from ._mounted import MountedDevice
from ._standard import (
    DEVICE_KINDS,
    DRIVER_KINDS,
    DeviceKind,
    intersect,
    normal_pci_address,
    numa_of,
    standard_problem,
)
from ._text import did_you_mean, one_line
from ._values import int_values

__all__ = [
    "AFFINITY_LEVELS",
    "DEVICE_KINDS",
    "DRIVER_KINDS",
    "Affinity",
    "DeviceKind",
    "Topology",
    "TopologyDevice",
    "TopologyProblem",
    "build",
    "cpu_ids",
    "pci_sort_key",
]

#: How close two devices sit, nearest first: the same
#: device, one PCIe root, one NUMA node, one socket, apart, or not known.
Affinity = Literal["same", "pcie-root", "numa", "socket", "different", "unknown"]
#: Affinity levels from nearest to farthest (``same``: a device and itself).
AFFINITY_LEVELS: Final[tuple[Affinity, ...]] = (
    "same",
    "pcie-root",
    "numa",
    "socket",
    "different",
    "unknown",
)

_SOCKET: Final = "dra.cpu/socketID"
_CPU_ID: Final = "dra.cpu/cpuID"

#: Matrix cells: affinity level -> what the matrix shows.
_CELL: Final[dict[Affinity, str]] = {
    "same": "X",
    "pcie-root": "ROOT",
    "numa": "NUMA",
    "socket": "SOCK",
    "different": "SYS",
    "unknown": "?",
}


class TopologyProblem(msgspec.Struct, frozen=True, gc=False):
    """What disagrees about one device: two of its placement attributes, or its listing.

    ``kind`` says which: ``"numa"`` (two NUMA attributes name different nodes; both
    are kept in the message; or the only NUMA node is negative, "no NUMA
    affinity"), ``"malformed"`` (a ``pciBusID`` or ``pcieRoot`` not in its
    standard form, left out of the placement) or ``"duplicate"`` (the request
    lists the device more than once; it is counted once).
    """

    #: The device the problem is about.
    device: str
    #: The device's claim directory.
    claim: str
    #: The device's request.
    request: str
    #: What disagrees, and where each value came from.
    message: str
    #: ``"numa"`` (NUMA attributes disagree, or say "no affinity"), ``"malformed"`` (a
    #: standard value not in its standard form) or ``"duplicate"`` (listed twice).
    kind: Literal["numa", "malformed", "duplicate"] = "numa"

    def __str__(self) -> str:
        return self.message


class TopologyDevice(msgspec.Struct, frozen=True, gc=False):
    """A mounted device with its kind and normalised placement.

    Reads like a :class:`~dra_metadata.MountedDevice` (``name``, ``driver``,
    ``claim``, ``request``, ``attribute()`` ...). ``numa_nodes`` and
    ``pcie_roots`` are the model's answers (lists kept whole);
    ``numa_source`` names the attribute the nodes came from.

    >>> import dra_metadata as dm
    >>> cpu = dm.inventory("examples/topology-tree").topology().cpus[0]
    >>> cpu.kind, cpu.numa_node, cpu.numa_source, cpu.socket
    ('cpu', 0, 'resource.kubernetes.io/numaNode', 0)
    """

    #: The mounted device (claim, request and the device itself).
    mounted: MountedDevice
    #: ``gpu``, ``nic``, ``cpu``, ``memory`` or ``other``.
    kind: DeviceKind
    #: The NUMA nodes it is local to (see :attr:`Device.numa_nodes`).
    numa_nodes: tuple[int, ...] = ()
    #: The attribute ``numa_nodes`` came from.
    numa_source: str | None = None
    #: ``dra.cpu/socketID``, when the device has it.
    socket: int | None = None
    #: The PCI address in the standard form (see :attr:`Device.pci_bus_id`).
    pci_bus_id: str | None = None
    #: The kind and a number: ``gpu0``, unique within the topology.
    label: str = ""
    #: The PCIe roots it is local to (see :attr:`Device.pcie_roots`).
    pcie_roots: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The device's name within its pool."""
        return self.mounted.name

    @property
    def driver(self) -> str:
        """The DRA driver that allocated it."""
        return self.mounted.driver

    @property
    def pool(self) -> str:
        """The resource pool it is in."""
        return self.mounted.pool

    @property
    def id(self) -> str:
        """``<driver>/<pool>/<name>``."""
        return self.mounted.id

    @property
    def claim(self) -> str:
        """The claim (or pod claim) it was allocated for."""
        return self.mounted.claim

    @property
    def request(self) -> str:
        """The request it was allocated for (``gpu/high-memory`` for a subrequest)."""
        return self.mounted.request

    @property
    def pcie_root(self) -> str | None:
        """The PCIe root when there is exactly one."""
        return self.pcie_roots[0] if len(self.pcie_roots) == 1 else None

    @property
    def numa_node(self) -> int | None:
        """The physical NUMA node: the first of :attr:`numa_nodes` (KEP-6072)."""
        return self.numa_nodes[0] if self.numa_nodes else None

    @property
    def network_data(self) -> NetworkDeviceData | None:
        """The device's network data, when its driver reported any."""
        return self.mounted.network_data

    def attribute(self, name: str, default: AttributeValue | None = None) -> AttributeValue | None:
        """The value of attribute ``name`` (see :meth:`Device.attribute`)."""
        return self.mounted.attribute(name, default)

    @property
    def placed(self) -> bool:
        """Whether the metadata says anything about where the device is."""
        return bool(self.numa_nodes or self.pcie_roots or self.socket is not None)

    def to_dict(self) -> dict[str, object]:
        """The JSON form ``dra-metadata topology --json`` prints."""
        mounted = self.mounted
        return {
            "label": self.label,
            "kind": self.kind,
            "claimKind": mounted.kind,
            "claim": mounted.claim,
            "request": mounted.request,
            "driver": mounted.driver,
            "pool": mounted.pool,
            "name": mounted.name,
            "numaNode": self.numa_node,
            "numaNodes": list(self.numa_nodes),
            "numaSource": self.numa_source,
            "socket": self.socket,
            "pcieRoot": self.pcie_root,
            "pcieRoots": list(self.pcie_roots),
            "pciBusID": self.pci_bus_id,
            "pciBusIDSource": mounted.pci_bus_id_source,
            "interfaceName": None
            if mounted.network_data is None
            else mounted.network_data.interface_name or None,
        }


#: A function that names a device's kind, or returns ``None`` to leave it to the
#: default rules (:meth:`Inventory.topology`'s ``kinds``).
KindRule = Callable[["MountedDevice"], "DeviceKind | None"]


def pci_sort_key(address: str) -> tuple[int, ...]:
    """A PCI address (``0000:3b:00.0``, NVML's ``00000000:3B:00.0``) as numbers to sort by.

    >>> pci_sort_key("0000:3b:00.1") < pci_sort_key("00000000:AF:00.0")
    True
    """
    normal = normal_pci_address(address)
    if normal is None:
        return (1 << 32,)
    return tuple(int(part, 16) for part in normal.replace(".", ":").split(":"))


def cpu_ids(device: MountedDevice | TopologyDevice) -> tuple[int, ...]:
    """The CPU numbers a ``dra.cpu`` device stands for (its ``cpuID``), else ``()``."""
    return int_values(device.attribute(_CPU_ID))


def _kind(
    device: MountedDevice, kinds: Mapping[str, DeviceKind], rule: KindRule | None
) -> DeviceKind:
    if rule is not None:
        decided = rule(device)
        if decided is not None:
            return decided
    if device.driver in kinds:
        return kinds[device.driver]
    return device.device_kind


def build(
    mounted_devices: Iterable[MountedDevice],
    *,
    kinds: Mapping[str, DeviceKind] | KindRule | None = None,
) -> Topology:
    """The topology of mounted devices (what :meth:`Inventory.topology` returns of its own).

    It takes the devices as data: the inventory reads this module, never the reverse.
    """
    mapping: Mapping[str, DeviceKind] = {}
    rule: KindRule | None = None
    if callable(kinds):
        rule = kinds
    elif kinds is not None:
        mapping = dict(kinds)
        for driver, kind in mapping.items():
            _check_kind(kind, f"topology(): driver {driver!r}")
    devices: list[TopologyDevice] = []
    problems: list[TopologyProblem] = []
    counters: dict[str, int] = {}
    seen: set[tuple[str, str, str, str]] = set()
    found = []
    for mounted in mounted_devices:
        key = _key(mounted)
        if key in seen:
            problems.append(
                TopologyProblem(
                    mounted.id,
                    mounted.claim,
                    mounted.request,
                    f"{mounted.claim_label} request {mounted.request!r} lists device "
                    f"{mounted.name!r} ({mounted.driver}, pool {mounted.pool!r}) more than "
                    "once; it is counted once",
                    "duplicate",
                )
            )
            continue
        seen.add(key)
        found.append((_kind(mounted, mapping, rule), mounted))
    found.sort(key=lambda pair: DEVICE_KINDS.index(pair[0]))
    for kind, mounted in found:
        numa = numa_of(mounted.device)
        for standard in ("pciBusID", "numaNode", "pcieRoot"):
            malformed = standard_problem(mounted.device, standard)
            if malformed is not None:
                problems.append(
                    _problem(mounted, f"{malformed}; left out of the placement", "malformed")
                )
        if numa.unknown and not numa.nodes:
            problems.append(
                _problem(
                    mounted,
                    f"device {mounted.name!r} ({mounted.driver}): {numa.unknown[0]} is "
                    "negative (no NUMA affinity), so its NUMA node is unknown; KEP-6072 "
                    "drivers leave the attribute out",
                )
            )
        if numa.disagree:
            said = ", ".join(
                f"{name} says {','.join(map(str, nodes))}" for name, nodes in numa.sources
            )
            problems.append(
                _problem(
                    mounted,
                    f"device {mounted.name!r} ({mounted.driver}): the NUMA attributes "
                    f"disagree: {said}; {numa.source} is used",
                )
            )
        socket_value = mounted.attribute(_SOCKET)
        socket = (
            socket_value
            if isinstance(socket_value, int) and not isinstance(socket_value, bool)
            else None
        )
        number = counters.get(kind, 0)
        counters[kind] = number + 1
        devices.append(
            TopologyDevice(
                mounted,
                kind,
                numa.nodes,
                numa.source,
                socket,
                mounted.pci_bus_id,
                f"{kind}{number}",
                mounted.pcie_roots,
            )
        )
    return Topology(tuple(devices), tuple(problems))


def _problem(
    mounted: MountedDevice, text: str, kind: Literal["numa", "malformed"] = "numa"
) -> TopologyProblem:
    """A problem with one device, its message starting with the claim and request."""
    return TopologyProblem(
        mounted.id,
        mounted.claim,
        mounted.request,
        f"{mounted.claim_label} request {mounted.request!r} {text}",
        kind,
    )


def _key(device: TopologyDevice | MountedDevice) -> tuple[str, str, str, str]:
    mounted = device.mounted if isinstance(device, TopologyDevice) else device
    return (mounted.kind, mounted.claim, mounted.request, mounted.id)


def _between(first: TopologyDevice, second: TopologyDevice) -> Affinity:
    """The affinity of two different devices, from their placement alone."""
    if intersect(first.pcie_roots, second.pcie_roots):
        return "pcie-root"
    if not (first.placed and second.placed):
        return "unknown"
    if intersect(first.numa_nodes, second.numa_nodes):
        return "numa"
    if first.socket is not None and first.socket == second.socket:
        return "socket"
    if first.numa_nodes and second.numa_nodes:
        return "different"
    return "unknown"


def _physical_tie(me: TopologyDevice, other: TopologyDevice) -> int:
    """How the physical NUMA nodes of two equally near devices rank: 0 the same node,
    1 one's physical node in the other's list, 2 otherwise."""
    mine, theirs = me.numa_node, other.numa_node
    if mine is None or theirs is None:
        return 2
    if mine == theirs:
        return 0
    return 1 if mine in other.numa_nodes or theirs in me.numa_nodes else 2


def _unknown(what: str, value: object, known: Iterable[str], where: str) -> str:
    """The message for a ``what`` that is none of ``known``, with the closest one."""
    names = list(known)
    return f"{where}: {what} {value!r} is not one of {', '.join(names)}" + did_you_mean(
        str(value), names
    )


def _check_kind(kind: object, where: str) -> None:
    """``ValueError`` when ``kind`` is none of :data:`DEVICE_KINDS`."""
    if kind not in DEVICE_KINDS:
        raise ValueError(_unknown("kind", kind, DEVICE_KINDS, where))


def _placement(device: TopologyDevice) -> tuple[object, ...]:
    return (frozenset(device.pcie_roots), frozenset(device.numa_nodes), device.socket)


#: Rows of affinity levels kept for reuse (:class:`_Affinities`), and of encoded JSON
#: (``topology --json``): enough for every placement class of a real pod, few enough
#: that memory stays linear in the devices when every device is its own class.
ROWS_KEPT: Final = 64


class _Affinities:
    """Affinity between devices through their placement classes: O(1) a pair after O(n).

    A class's row is computed once and kept while it is among the last
    :data:`ROWS_KEPT` used: devices mostly share a few classes (all of a pod's CPUs
    next to one root), and when every device is its own class each row is needed
    once, so memory stays O(n) whatever the placements.
    """

    def __init__(self, devices: Iterable[TopologyDevice]) -> None:
        self.classes: dict[tuple[object, ...], int] = {}
        self.members: list[TopologyDevice] = []
        self.class_of: list[int] = []
        for device in devices:
            placement = _placement(device)
            number = self.classes.get(placement)
            if number is None:
                number = self.classes[placement] = len(self.members)
                self.members.append(device)
            self.class_of.append(number)
        self._rows: dict[int, list[Affinity]] = {}

    def row(self, number: int) -> list[Affinity]:
        """Placement class ``number`` -> its affinity with every class."""
        rows = self._rows
        found = rows.pop(number, None)
        if found is None:
            me = self.members[number]
            found = [_between(me, other) for other in self.members]
            if len(rows) >= ROWS_KEPT:
                del rows[next(iter(rows))]  # the least recently used
        rows[number] = found  # last: the most recently used
        return found


class Topology(msgspec.Struct, frozen=True, gc=False):
    """Every mounted device with its kind and placement, and what disagrees.

    >>> import dra_metadata as dm
    >>> topo = dm.inventory("examples/topology-tree").topology()
    >>> [d.label for d in topo.on_numa_node(0)]
    ['nic0', 'cpu0', 'cpu1']
    >>> sorted(topo.pcie_roots())
    ['pci0000:00', 'pci0000:17', 'pci0000:80', 'pci0000:85']
    """

    #: Every device, GPUs first, then NICs, CPUs, memory and the others.
    devices: tuple[TopologyDevice, ...] = ()
    #: What disagrees: NUMA attributes of one device, a device listed twice.
    problems: tuple[TopologyProblem, ...] = ()

    def __iter__(self) -> Iterator[TopologyDevice]:
        return iter(self.devices)

    def __len__(self) -> int:
        return len(self.devices)

    def of_kind(self, kind: DeviceKind) -> list[TopologyDevice]:
        """The devices of one kind, in inventory order (``ValueError`` for no kind)."""
        _check_kind(kind, "of_kind()")
        return [device for device in self.devices if device.kind == kind]

    @property
    def gpus(self) -> list[TopologyDevice]:
        """The GPUs."""
        return self.of_kind("gpu")

    @property
    def nics(self) -> list[TopologyDevice]:
        """The network devices."""
        return self.of_kind("nic")

    @property
    def cpus(self) -> list[TopologyDevice]:
        """The CPU devices."""
        return self.of_kind("cpu")

    def find(self, device: TopologyDevice | MountedDevice | str) -> TopologyDevice:
        """This topology's entry for a device, a mounted device or a label (``gpu0``).

        Raises ``KeyError`` naming the labels there are when there is none.
        """
        if isinstance(device, TopologyDevice) and any(d is device for d in self.devices):
            return device
        if isinstance(device, str):
            for found in self.devices:
                if device in (found.label, found.id):
                    return found
        else:
            wanted = _key(device)
            for found in self.devices:
                if _key(found) == wanted:
                    return found
        there = ", ".join(d.label for d in self.devices) or "none"
        raise KeyError(f"no such device in this topology: {device!r} (there: {there})")

    def affinity(
        self, a: TopologyDevice | MountedDevice | str, b: TopologyDevice | MountedDevice | str
    ) -> Affinity:
        """How close two devices are, as one of :data:`AFFINITY_LEVELS`.

        PCIe roots, then NUMA nodes, by non-empty intersection of their lists.
        """
        first, second = self.find(a), self.find(b)
        if _key(first) == _key(second):
            return "same"
        return _between(first, second)

    def nearest(
        self,
        device: TopologyDevice | MountedDevice | str,
        *,
        kind: DeviceKind | None = None,
        within: Affinity = "different",
    ) -> TopologyDevice | None:
        """The device of ``kind`` closest to ``device``: a shared PCIe root, else NUMA node...

        Among devices equally near, the physical NUMA nodes break the tie
        (KEP-6072): the same physical node first, then one's physical node in the
        other's list; then the first in inventory order. Only devices at
        ``within`` or nearer count (``within="numa"``: a shared PCIe root or NUMA
        node); ``None`` when there is none. An unknown ``kind`` or ``within`` is a
        ``ValueError`` saying what there is.
        """
        me = self.find(device)
        mine = _key(me)
        if kind is not None:
            _check_kind(kind, "nearest()")
        if within not in AFFINITY_LEVELS:
            raise ValueError(_unknown("within", within, AFFINITY_LEVELS, "nearest()"))
        limit = AFFINITY_LEVELS.index(within)
        best: TopologyDevice | None = None
        best_rank = (limit + 1, 0)
        for other in self.devices:
            if (kind is not None and other.kind != kind) or _key(other) == mine:
                continue
            rank = (AFFINITY_LEVELS.index(_between(me, other)), _physical_tie(me, other))
            if rank < best_rank:
                best, best_rank = other, rank
        return best

    def on_numa_node(self, node: int | None) -> list[TopologyDevice]:
        """The devices local to NUMA node ``node`` (``None``: no NUMA node known)."""
        if node is None:
            return [device for device in self.devices if not device.numa_nodes]
        return [device for device in self.devices if node in device.numa_nodes]

    def numa_nodes(self) -> list[int]:
        """Every NUMA node a device is local to, sorted."""
        return sorted({node for d in self.devices for node in d.numa_nodes})

    def pcie_roots(self) -> dict[str, list[TopologyDevice]]:
        """PCIe root -> the devices local to it, roots in byte order."""
        found: dict[str, list[TopologyDevice]] = {}
        for device in self.devices:
            for root in device.pcie_roots:
                found.setdefault(root, []).append(device)
        return {root: found[root] for root in sorted(found, key=os.fsencode)}

    def _affinity_table(self) -> _Affinities:
        """The devices' placement classes and the affinity between classes (O(n) to build)."""
        return _Affinities(self.devices)

    def affinity_rows(self) -> Iterator[tuple[str, dict[str, Affinity]]]:
        """``(label, {label: affinity})`` for every device, in order: O(n²) in all.

        What ``to_dict()["affinity"]`` holds, one row at a time.
        """
        table = self._affinity_table()
        labels = [device.label for device in self.devices]
        pairs = list(zip(labels, table.class_of, strict=True))
        for index, device in enumerate(self.devices):
            levels = table.row(table.class_of[index])
            row = {label: levels[number] for label, number in pairs}
            row[device.label] = "same"
            yield device.label, row

    def to_dict(self) -> dict[str, object]:
        """The JSON form: devices, NUMA nodes, PCIe roots, the affinity matrix, problems."""
        found = self._head()
        found["affinity"] = dict(self.affinity_rows())
        found["problems"] = [problem.message for problem in self.problems]
        return found

    def _head(self) -> dict[str, object]:
        nodes: dict[str, list[str]] = {str(node): [] for node in self.numa_nodes()}
        for device in self.devices:
            for node in device.numa_nodes:
                nodes[str(node)].append(device.label)
        return {
            "devices": [device.to_dict() for device in self.devices],
            "numaNodes": nodes,
            "pcieRoots": {root: [d.label for d in ds] for root, ds in self.pcie_roots().items()},
        }

    def tree(self, width: int = 80) -> str:
        """A readable tree: NUMA nodes > PCIe roots > devices, lines cut to ``width``.

        A device local to several NUMA nodes (or roots) sits under a heading
        that names them all, its physical NUMA node first (as published).
        """
        rows: list[tuple[int, tuple[str, ...]]] = []
        by_nodes: dict[tuple[int, ...], list[TopologyDevice]] = {}
        for device in self.devices:
            by_nodes.setdefault(device.numa_nodes, []).append(device)
        order = sorted((n for n in by_nodes if n), key=lambda n: (n[0], len(n), n))
        for nodes in [*order, *([()] if () in by_nodes else [])]:
            members = by_nodes[nodes]
            heading = (
                "no NUMA node"
                if not nodes
                else f"NUMA node{'s' if len(nodes) > 1 else ''} {','.join(map(str, nodes))}"
            )
            rows.append((0, (heading,)))
            roots: dict[tuple[str, ...], list[TopologyDevice]] = {}
            for device in members:
                roots.setdefault(tuple(sorted(device.pcie_roots, key=os.fsencode)), []).append(
                    device
                )
            keys = sorted((r for r in roots if r), key=lambda r: [os.fsencode(x) for x in r])
            for root in [*keys, *([()] if () in roots else [])]:
                text = (
                    f"PCIe root{'s' if len(root) > 1 else ''} {', '.join(root)}"
                    if root
                    else "no PCIe root"
                )
                rows.append((1, (one_line(text),)))
                for group in _groups(roots[root]):
                    rows.append((2, tuple(one_line(cell) for cell in _device_cells(group))))
        return _layout(rows, width)

    def matrix(self, width: int = 80) -> str:
        """Device x device affinity, like ``nvidia-smi topo -m``, then a legend."""
        return "".join(self.matrix_lines(width))

    def matrix_lines(self, width: int = 80) -> Iterator[str]:
        """:meth:`matrix` a line at a time (each ending in a newline), for output of any size.

        Memory stays linear in the devices: one row is built at a time, and rows of
        placement classes are kept only while among the last few used.
        """
        groups = _groups(list(self.devices))
        labels = [_group_label(group) for group in groups]
        cell = max([4, *(len(label) for label in labels)]) + 1
        head = max(len(label) for label in labels) + 1 if labels else 1
        if groups:
            table = _Affinities(group[0] for group in groups)
            padded = {level: text.rjust(cell) for level, text in _CELL.items()}
            top = " " * head + "".join(label.rjust(cell) for label in labels)
            if len(top) > width:
                yield f"(wider than {width} columns: use --json for every pair)\n"
            yield top.rstrip() + "\n"
            for index, (label, number) in enumerate(zip(labels, table.class_of, strict=True)):
                cells = [padded[level] for level in table.row(number)]
                row = [cells[other] for other in table.class_of]
                row[index] = padded["same"]
                yield (label.ljust(head) + "".join(row)).rstrip() + "\n"
            yield "\n"
            legend = [(2, tuple(one_line(c) for c in _device_cells(g))) for g in groups]
            yield _layout(legend, width, indent="")
            yield "\n"
        for line in (
            "X = itself, ROOT = a shared PCIe root, NUMA = a shared NUMA node,",
            "SOCK = same socket, SYS = different NUMA nodes, ? = not in the metadata",
        ):
            yield _cut(line, width).rstrip() + "\n"


def _groups(devices: list[TopologyDevice]) -> list[list[TopologyDevice]]:
    """Devices in order, CPUs of one request with the same placement joined into one entry."""
    groups: list[list[TopologyDevice]] = []
    index: dict[tuple[object, ...], int] = {}
    for device in devices:
        if device.kind != "cpu":
            groups.append([device])
            continue
        key = (
            device.mounted.kind,
            device.claim,
            device.request,
            device.driver,
            device.numa_nodes,
            device.pcie_roots,
            device.socket,
        )
        if key in index:
            groups[index[key]].append(device)
        else:
            index[key] = len(groups)
            groups.append([device])
    return groups


def _group_label(group: list[TopologyDevice]) -> str:
    if len(group) == 1:
        return group[0].label
    return f"{group[0].label}-{group[-1].label.removeprefix(group[0].kind)}"


def _ranges(numbers: Iterable[int]) -> str:
    """``0,1,2,3,8`` -> ``0-3,8``."""
    ordered = sorted(set(numbers))
    parts: list[str] = []
    start = prev = None
    for n in [*ordered, None]:
        if start is not None and prev is not None and (n is None or n != prev + 1):
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if n is not None and start is None:
            start = n
        prev = n
    return ",".join(parts)


def _device_cells(group: list[TopologyDevice]) -> tuple[str, ...]:
    first = group[0]
    where = f"{first.claim}/{first.request}"
    name = first.name if len(group) == 1 else f"{first.name}..{group[-1].name}"
    detail = ""
    if first.kind == "cpu":
        cpus = [cpu for device in group for cpu in cpu_ids(device)]
        if cpus:
            detail = f"cpus {_ranges(cpus)}"
    elif first.network_data is not None and first.network_data.interface_name:
        network = first.network_data
        detail = " ".join((network.interface_name, *network.ips))
    else:
        uuid = first.attribute("uuid")
        if isinstance(uuid, str):
            detail = uuid
        elif first.pci_bus_id:
            detail = first.pci_bus_id
    return (_group_label(group), name, first.driver, where, detail)


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[: max(width - 1, 1)] + "…"


def _layout(rows: list[tuple[int, tuple[str, ...]]], width: int, indent: str = "    ") -> str:
    """Headings as they are; device rows in aligned columns, each line cut to ``width``."""
    device_rows = [cells for depth, cells in rows if depth == 2]
    columns = max((len(cells) for cells in device_rows), default=0)
    widths = [
        max((len(cells[i]) for cells in device_rows if len(cells) > i), default=0)
        for i in range(columns)
    ]
    out = []
    for depth, cells in rows:
        if depth < 2:
            out.append(_cut("  " * depth + cells[0], width))
            continue
        parts = [cell.ljust(widths[i]) for i, cell in enumerate(cells[:-1])]
        out.append(_cut((indent + "  ".join([*parts, cells[-1]])).rstrip(), width))
    return "".join(line + "\n" for line in out)
