"""Where the devices of a pod sit: NUMA nodes, PCIe roots, device kinds, affinity.

:meth:`Inventory.topology() <dra_metadata.Inventory.topology>` gives a
:class:`Topology`: every mounted device, across every claim, request and
driver, as a :class:`TopologyDevice` that knows its kind (``gpu``, ``nic``,
``cpu``, ``memory`` or ``other``) and its NUMA placement, normalised from the
attribute names drivers publish today.

NUMA placement
==============

A device's NUMA nodes come from the first of these attributes it has (the
standard one first); where two of them disagree on the device's own node, the
topology says so in :attr:`Topology.problems`:

=====================================  ===========================================
``resource.kubernetes.io/numaNode``    the standard attribute; an int, or a list
                                       that starts with the device's own node
                                       followed by the nodes of the same socket
``dra.cpu/numaNodeID``                 kubernetes-sigs/dra-driver-cpu
                                       (``pkg/device/attributes.go``)
``dra.net/numaNode``                   kubernetes-sigs/dranet
                                       (``pkg/apis/attributes.go``); the CPU
                                       driver publishes it too, for alignment
``dra.cpu/numaNode``                   what the memory driver publishes for
                                       alignment with the CPU driver
``dra.memory/numaNode``                ffromani/dra-driver-memory
                                       (``pkg/sysinfo/rslice.go``)
``<driver>/numaNode``                  a ``numaNode`` in the driver's own domain:
                                       ROCm/k8s-gpu-dra-driver (``gpu.amd.com``,
                                       ``docs/driver-attributes.md``)
``gpu.nvidia.com/numa``                NVIDIA/k8s-dra-driver-gpu VFIO devices
                                       (``cmd/gpu-kubelet-plugin/deviceinfo.go``)
=====================================  ===========================================

The socket comes from ``dra.cpu/socketID``; two devices are also on one socket
when one's standard list form names the other's own node.

Kinds
=====

The first rule that matches decides, and an unknown device is ``other``:

1. ``kinds=`` given to :meth:`Inventory.topology`: driver name -> kind;
2. a device with network data is a ``nic``;
3. a known driver: ``dra.cpu`` -> ``cpu``, ``dra.net`` -> ``nic``,
   ``dra.memory`` -> ``memory``, ``gpu.nvidia.com``, ``gpu.amd.com``,
   ``gpu.intel.com`` -> ``gpu`` (:data:`DRIVER_KINDS`);
4. a driver named ``gpu.<domain>`` (the vendors' and the example driver's
   convention) -> ``gpu``;
5. an attribute only one kind publishes: ``dra.net/ifName`` -> ``nic``,
   ``dra.cpu/cpuID`` -> ``cpu``.

Affinity
========

Two devices are, from nearest to farthest (:data:`AFFINITY_LEVELS`):
``pcie-root`` (same ``pcieRoot``), ``numa`` (same own NUMA node), ``socket``
(same socket, where the metadata says so), ``different``; ``unknown`` when
either has no placement at all.

>>> import dra_metadata as dm
>>> topo = dm.inventory("examples/topology-tree").topology()
>>> [(g.name, g.numa_nodes) for g in topo.gpus]
[('gpu-0', (0, 1)), ('gpu-1', (1, 0))]
>>> topo.nearest(topo.gpus[0], kind="nic").network_data.interface_name
'net1'
>>> topo.affinity(topo.gpus[0], topo.gpus[1])
'socket'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final, Literal

import msgspec

# At run time too: TopologyDevice's fields name them (typing.get_type_hints(), help()).
from ._inventory import Inventory, MountedDevice
from ._model import DOMAIN_SEPARATOR, STANDARD_DOMAIN, AttributeValue, NetworkDeviceData

__all__ = [
    "AFFINITY_LEVELS",
    "DEVICE_KINDS",
    "DRIVER_KINDS",
    "NUMA_ALIASES",
    "PCI_BUS_ID_ALIASES",
    "Affinity",
    "DeviceKind",
    "Topology",
    "TopologyDevice",
    "TopologyProblem",
    "build",
    "cpu_ids",
    "pci_sort_key",
]

#: What a device is, by the kind rules: a GPU or other accelerator, a network interface,
#: a CPU group, a memory region, or anything else.
DeviceKind = Literal["gpu", "nic", "cpu", "memory", "other"]
#: Every device kind, in the order listings use.
DEVICE_KINDS: Final[tuple[DeviceKind, ...]] = ("gpu", "nic", "cpu", "memory", "other")

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

#: Drivers whose kind is known (see the module docs for the sources).
DRIVER_KINDS: Final[dict[str, DeviceKind]] = {
    "gpu.nvidia.com": "gpu",
    "gpu.amd.com": "gpu",
    "gpu.intel.com": "gpu",
    "dra.cpu": "cpu",
    "dra.net": "nic",
    "dra.memory": "memory",
}

#: Attributes only one kind of device publishes.
_ATTRIBUTE_KINDS: Final[tuple[tuple[str, DeviceKind], ...]] = (
    ("dra.net/ifName", "nic"),
    ("dra.cpu/cpuID", "cpu"),
)

_STANDARD_NUMA: Final = STANDARD_DOMAIN + DOMAIN_SEPARATOR + "numaNode"
#: NUMA attributes other than the standard one, in the order they are tried.
#: ``{driver}`` stands for the device's own driver domain.
NUMA_ALIASES: Final[tuple[str, ...]] = (
    "dra.cpu/numaNodeID",
    "dra.cpu/numaNode",
    "dra.net/numaNode",
    "dra.memory/numaNode",
    "{driver}/numaNode",
    "gpu.nvidia.com/numa",
)
#: PCI address attributes other than the standard ``pciBusID``: NVIDIA's
#: ``pcieBusID`` (k8s-dra-driver-gpu deviceinfo.go), dranet's ``pciAddress``
#: (dranet pkg/apis/attributes.go), AMD VFIO devices' ``pciAddr``.
PCI_BUS_ID_ALIASES: Final[tuple[str, ...]] = (
    "gpu.nvidia.com/pcieBusID",
    "dra.net/pciAddress",
    "gpu.amd.com/pciAddr",
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
    """Two placement attributes of one device that disagree (both are kept in the message)."""

    #: The device whose attributes disagree.
    device: str
    #: The device's claim directory.
    claim: str
    #: The device's request.
    request: str
    #: Both values, and where each came from.
    message: str

    def __str__(self) -> str:
        return self.message


class TopologyDevice(msgspec.Struct, frozen=True, gc=False):
    """A mounted device with its kind and normalised placement.

    Reads like a :class:`~dra_metadata.MountedDevice` (``name``, ``driver``,
    ``claim``, ``request``, ``attribute()`` ...). ``numa_nodes`` starts with the
    device's own node; ``numa_source`` names the attribute it came from.

    >>> import dra_metadata as dm
    >>> cpu = dm.inventory("examples/topology-tree").topology().cpus[0]
    >>> cpu.kind, cpu.numa_node, cpu.numa_source, cpu.socket
    ('cpu', 0, 'dra.cpu/numaNodeID', 0)
    """

    #: The device as the inventory has it, with its claim and request.
    mounted: MountedDevice
    #: What the device is, by the kind rules.
    kind: DeviceKind
    #: The device's NUMA nodes, its own node first; empty when no attribute says.
    numa_nodes: tuple[int, ...] = ()
    #: The attribute the NUMA nodes came from; ``None`` when none did.
    numa_source: str | None = None
    #: The CPU socket the device sits on, when an attribute says.
    socket: int | None = None
    #: The device's PCI address, when an attribute gives one.
    pci_bus_id: str | None = None
    #: A short name for listings: the kind and an index (``gpu0``).
    label: str = ""

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
        """The standard ``pcieRoot`` attribute."""
        return self.mounted.pcie_root

    @property
    def numa_node(self) -> int | None:
        """The device's own NUMA node."""
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
        return bool(self.numa_nodes or self.pcie_root or self.socket is not None)

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
            "pciBusID": self.pci_bus_id,
            "interfaceName": None
            if mounted.network_data is None
            else mounted.network_data.interface_name or None,
        }


#: A function that names a device's kind, or returns ``None`` to leave it to the
#: default rules (:meth:`Inventory.topology`'s ``kinds``).
KindRule = Callable[["MountedDevice"], "DeviceKind | None"]


def _int_list(value: AttributeValue | None) -> tuple[int, ...]:
    if isinstance(value, bool) or value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    if (
        isinstance(value, tuple)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return tuple(int(v) for v in value)
    return ()


def _numa(device: MountedDevice) -> tuple[tuple[int, ...], str | None, list[tuple[str, int]]]:
    """The device's NUMA nodes, the attribute they came from, and every source's own node."""
    sources: list[tuple[str, tuple[int, ...]]] = []
    standard = _int_list(device.attribute(_STANDARD_NUMA))
    if standard:
        sources.append((_STANDARD_NUMA, standard))
    seen = {_STANDARD_NUMA}
    for pattern in NUMA_ALIASES:
        name = pattern.format(driver=device.driver)
        if name in seen:
            continue
        seen.add(name)
        nodes = _int_list(device.attribute(name))
        if nodes:
            sources.append((name, nodes))
    if not sources:
        return (), None, []
    name, nodes = sources[0]
    return nodes, name, [(source, found[0]) for source, found in sources]


def _pci_bus_id(device: MountedDevice) -> str | None:
    found = device.pci_bus_id
    if found:
        return found
    for name in PCI_BUS_ID_ALIASES:
        value = device.attribute(name)
        if isinstance(value, str) and value:
            return value
    return None


def pci_sort_key(address: str) -> tuple[int, ...]:
    """A PCI address (``0000:3b:00.0``, NVML's ``00000000:3B:00.0``) as numbers to sort by.

    >>> pci_sort_key("0000:3b:00.1") < pci_sort_key("00000000:AF:00.0")
    True
    """
    parts = address.replace(".", ":").split(":")
    try:
        return tuple(int(part, 16) for part in parts)
    except ValueError:
        return (1 << 32,)


def cpu_ids(device: MountedDevice | TopologyDevice) -> tuple[int, ...]:
    """The CPU numbers a ``dra.cpu`` device stands for (its ``cpuID``), else ``()``."""
    return _int_list(device.attribute(_CPU_ID))


def _kind(
    device: MountedDevice, kinds: Mapping[str, DeviceKind], rule: KindRule | None
) -> DeviceKind:
    if rule is not None:
        decided = rule(device)
        if decided is not None:
            return decided
    if device.driver in kinds:
        return kinds[device.driver]
    if device.network_data is not None:
        return "nic"
    known = DRIVER_KINDS.get(device.driver)
    if known is not None:
        return known
    if device.driver.startswith("gpu."):
        return "gpu"
    for name, kind in _ATTRIBUTE_KINDS:
        if device.find_attribute(name) is not None:
            return kind
    return "other"


def build(
    inv: Inventory,
    *,
    kinds: Mapping[str, DeviceKind] | KindRule | None = None,
) -> Topology:
    """The topology of an inventory's devices (what :meth:`Inventory.topology` returns)."""
    mapping: Mapping[str, DeviceKind] = {}
    rule: KindRule | None = None
    if callable(kinds):
        rule = kinds
    elif kinds is not None:
        mapping = dict(kinds)
        for driver, kind in mapping.items():
            if kind not in DEVICE_KINDS:
                raise ValueError(
                    f"topology(): kind {kind!r} for driver {driver!r} is not one of "
                    + ", ".join(DEVICE_KINDS)
                )
    devices: list[TopologyDevice] = []
    problems: list[TopologyProblem] = []
    counters: dict[str, int] = {}
    found = [(_kind(mounted, mapping, rule), mounted) for mounted in inv.devices()]
    found.sort(key=lambda pair: DEVICE_KINDS.index(pair[0]))
    for kind, mounted in found:
        nodes, source, owns = _numa(mounted)
        distinct = {node for _, node in owns}
        if len(distinct) > 1:
            said = ", ".join(f"{name} says {node}" for name, node in owns)
            problems.append(
                TopologyProblem(
                    mounted.id,
                    mounted.claim,
                    mounted.request,
                    f"{mounted.claim_label} request {mounted.request!r} device "
                    f"{mounted.name!r} ({mounted.driver}): the NUMA attributes disagree: "
                    f"{said}; {source} is used",
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
                nodes,
                source,
                socket,
                _pci_bus_id(mounted),
                f"{kind}{number}",
            )
        )
    return Topology(tuple(devices), tuple(problems))


def _key(device: TopologyDevice | MountedDevice) -> tuple[str, str, str, str]:
    mounted = device.mounted if isinstance(device, TopologyDevice) else device
    return (mounted.kind, mounted.claim, mounted.request, mounted.id)


class Topology(msgspec.Struct, frozen=True, gc=False):
    """Every mounted device with its kind and placement, and what disagrees.

    >>> import dra_metadata as dm
    >>> topo = dm.inventory("examples/topology-tree").topology()
    >>> [d.label for d in topo.on_numa_node(0)]
    ['gpu0', 'nic0', 'cpu0', 'cpu1']
    >>> sorted(topo.pcie_roots())
    ['pci0000:17', 'pci0000:85']
    """

    #: Every mounted device with its kind and placement, in inventory order.
    devices: tuple[TopologyDevice, ...] = ()
    #: Placement attributes that disagree.
    problems: tuple[TopologyProblem, ...] = ()

    def __iter__(self) -> Iterator[TopologyDevice]:
        return iter(self.devices)

    def __len__(self) -> int:
        return len(self.devices)

    def of_kind(self, kind: DeviceKind) -> list[TopologyDevice]:
        """The devices of one kind, in inventory order."""
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
        """How close two devices are, as one of :data:`AFFINITY_LEVELS`."""
        first, second = self.find(a), self.find(b)
        if _key(first) == _key(second):
            return "same"
        if first.pcie_root and first.pcie_root == second.pcie_root:
            return "pcie-root"
        if not (first.placed and second.placed):
            return "unknown"
        if first.numa_node is not None and first.numa_node == second.numa_node:
            return "numa"
        if first.socket is not None and first.socket == second.socket:
            return "socket"
        if (
            first.numa_node is not None
            and second.numa_node is not None
            and (
                (len(first.numa_nodes) > 1 and second.numa_node in first.numa_nodes)
                or (len(second.numa_nodes) > 1 and first.numa_node in second.numa_nodes)
            )
        ):
            return "socket"
        if first.numa_node is None or second.numa_node is None:
            return "unknown"
        return "different"

    def nearest(
        self,
        device: TopologyDevice | MountedDevice | str,
        *,
        kind: DeviceKind | None = None,
        within: Affinity = "different",
    ) -> TopologyDevice | None:
        """The device of ``kind`` closest to ``device``: same PCIe root, else NUMA node...

        Ties go to the first in inventory order. Only devices at ``within`` or
        nearer count (``within="numa"``: same PCIe root or NUMA node); ``None``
        when there is none.
        """
        me = self.find(device)
        limit = AFFINITY_LEVELS.index(within)
        best: TopologyDevice | None = None
        best_rank = limit + 1
        for other in self.devices:
            if _key(other) == _key(me) or (kind is not None and other.kind != kind):
                continue
            rank = AFFINITY_LEVELS.index(self.affinity(me, other))
            if rank < best_rank:
                best, best_rank = other, rank
        return best

    def on_numa_node(self, node: int | None) -> list[TopologyDevice]:
        """The devices whose own NUMA node is ``node`` (``None``: no NUMA node known)."""
        return [device for device in self.devices if device.numa_node == node]

    def numa_nodes(self) -> list[int]:
        """Every own NUMA node of a device, sorted."""
        return sorted({d.numa_node for d in self.devices if d.numa_node is not None})

    def pcie_roots(self) -> dict[str, list[TopologyDevice]]:
        """PCIe root -> the devices under it, roots in byte order."""
        found: dict[str, list[TopologyDevice]] = {}
        for device in self.devices:
            if device.pcie_root:
                found.setdefault(device.pcie_root, []).append(device)
        return {root: found[root] for root in sorted(found, key=os.fsencode)}

    def to_dict(self) -> dict[str, object]:
        """The JSON form: devices, NUMA nodes, PCIe roots, the affinity matrix, problems."""
        labels = [device.label for device in self.devices]
        return {
            "devices": [device.to_dict() for device in self.devices],
            "numaNodes": {
                str(node): [d.label for d in self.on_numa_node(node)] for node in self.numa_nodes()
            },
            "pcieRoots": {root: [d.label for d in ds] for root, ds in self.pcie_roots().items()},
            "affinity": {a.label: {b: self.affinity(a, b) for b in labels} for a in self.devices},
            "problems": [problem.message for problem in self.problems],
        }

    def tree(self, width: int = 80) -> str:
        """A readable tree: NUMA node > PCIe root > devices, lines cut to ``width``."""
        rows: list[tuple[int, tuple[str, ...]]] = []
        nodes: list[int | None] = [*self.numa_nodes(), None]
        for node in nodes:
            members = self.on_numa_node(node)
            if not members:
                continue
            rows.append((0, (f"NUMA node {node}" if node is not None else "no NUMA node",)))
            roots: dict[str | None, list[TopologyDevice]] = {}
            for device in members:
                roots.setdefault(device.pcie_root, []).append(device)
            order = sorted((r for r in roots if r), key=os.fsencode) + (
                [None] if None in roots else []
            )
            for root in order:
                rows.append((1, (f"PCIe root {root}" if root else "no PCIe root",)))
                for group in _groups(roots[root]):
                    rows.append((2, tuple(_printable(cell) for cell in _device_cells(group))))
        return _layout(rows, width)

    def matrix(self, width: int = 80) -> str:
        """Device x device affinity, like ``nvidia-smi topo -m``, then a legend."""
        groups = _groups(list(self.devices))
        labels = [_group_label(group) for group in groups]
        cell = max([4, *(len(label) for label in labels)]) + 1
        head = max(len(label) for label in labels) + 1 if labels else 1
        lines = []
        if groups:
            lines.append(" " * head + "".join(label.rjust(cell) for label in labels))
            for label, group in zip(labels, groups, strict=True):
                cells = [_CELL[self.affinity(group[0], other[0])] for other in groups]
                lines.append(label.ljust(head) + "".join(c.rjust(cell) for c in cells))
            lines.append("")
            legend = [(2, tuple(_printable(c) for c in _device_cells(g))) for g in groups]
            lines.extend(_layout(legend, width, indent="").splitlines())
            lines.append("")
        lines.extend(
            _cut(line, width)
            for line in (
                "X = itself, ROOT = same PCIe root, NUMA = same NUMA node,",
                "SOCK = same socket, SYS = different NUMA nodes, ? = not in the metadata",
            )
        )
        if groups and len(lines[0]) > width:
            lines.insert(0, f"(wider than {width} columns: use --json for every pair)")
        return "".join(line.rstrip() + "\n" for line in lines)


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
            device.pcie_root,
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


def _printable(text: str) -> str:
    """``text`` with characters that would break a line or a terminal escaped."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


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
