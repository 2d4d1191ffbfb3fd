"""The device questions, answered once: PCI address, PCIe roots, NUMA nodes, kind.

Every door (:class:`~dra_metadata.Device` and ``MountedDevice`` properties, the
topology, ``get``, ``env`` and its profiles, ``doctor``) reads these answers;
none reads the attributes behind them on its own.

PCI address
===========

The first of these attributes a device has, normalised to the standard form
(``0000:18:00.0``: a four-digit domain, lower case); the attribute itself stays
readable as written (``get gpu.nvidia.com/pcieBusID``):

==================================================  ===============================
``resource.kubernetes.io/pciBusID``                 the standard attribute
``gpu.nvidia.com/pcieBusID``                        NVIDIA/k8s-dra-driver-gpu, NVML's
                                                    eight-digit domain form
``sriovnetwork.k8snetworkplumbingwg.io/pciAddress``  k8snetworkplumbingwg/dra-driver-sriov
``dra.net/pciAddress``                              kubernetes-sigs/dranet
``gpu.amd.com/pciAddr``                             ROCm/k8s-gpu-dra-driver
==================================================  ===============================

A value that is no PCI address (``[domain:]bus:device.function`` in hex) is
not an address: :attr:`PciAddress.value` is ``None`` and the doors that use one
say so.

NUMA nodes and PCIe roots
=========================

``numa_nodes`` comes from the first of :data:`NUMA_ATTRIBUTES` the device has,
an int or a list kept whole (KEP-5491: a list names every node the device is
local to). ``pcie_roots`` is the standard ``pcieRoot``, a string or a list
(dra-driver-cpu publishes every root local to a CPU group). Two devices are
aligned when their lists intersect (KEP-6072, KEP-5491). ``numa_node`` and
``pcie_root`` are the single value when there is exactly one, else ``None``.

Kinds
=====

The first rule that matches decides (:func:`device_kind`):

1. a device with network data is a ``nic``;
2. a known driver (:data:`DRIVER_KINDS`);
3. a driver whose domain has a ``gpu`` label (``gpu.nvidia.com``,
   ``vfio.gpu.example.com``) is a ``gpu``;
4. an attribute only one kind publishes: ``dra.net/ifName`` -> ``nic``,
   ``dra.cpu/cpuID`` -> ``cpu``; a ``uuid`` with a ``productName`` (what GPU
   drivers publish for a GPU, a MIG device or a pass-through GPU) -> ``gpu``;
5. else ``other``.

>>> from dra_metadata import Device, DeviceAttribute as A
>>> gpu = Device("gpu.nvidia.com", "p", "gpu-0", {"pcieBusID": A(string="00000000:18:00.0")})
>>> gpu.pci_bus_id, gpu.pci_bus_id_source, device_kind(gpu)
('0000:18:00.0', 'gpu.nvidia.com/pcieBusID', 'gpu')
>>> normal_pci_address("0000:3b:00.0 -d /x/evil.so") is None
True
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Final, Literal

import msgspec

from ._model import DOMAIN_SEPARATOR, qualified_entry

if TYPE_CHECKING:
    from ._model import AttributeValue, Device

__all__ = [
    "DEVICE_KINDS",
    "DRIVER_KINDS",
    "NUMA_ATTRIBUTES",
    "PCIE_ROOT_ATTRIBUTE",
    "PCI_BUS_ID_ATTRIBUTES",
    "DeviceKind",
    "NumaNodes",
    "PciAddress",
    "device_kind",
    "int_values",
    "intersect",
    "normal_pci_address",
    "numa_of",
    "pci_address_of",
    "pcie_roots_of",
]

DeviceKind = Literal["gpu", "nic", "cpu", "memory", "other"]
#: Every device kind, in the order listings use.
DEVICE_KINDS: Final[tuple[DeviceKind, ...]] = ("gpu", "nic", "cpu", "memory", "other")

#: Drivers whose kind is known (see the module docs for the sources).
DRIVER_KINDS: Final[dict[str, DeviceKind]] = {
    "gpu.nvidia.com": "gpu",
    "gpu.amd.com": "gpu",
    "gpu.intel.com": "gpu",
    "dra.cpu": "cpu",
    "dra.net": "nic",
    "sriovnetwork.k8snetworkplumbingwg.io": "nic",
    "dra.memory": "memory",
}

_STANDARD: Final = "resource.kubernetes.io/"
#: PCI address attributes, the standard one first (sources in the module docs).
PCI_BUS_ID_ATTRIBUTES: Final[tuple[str, ...]] = (
    _STANDARD + "pciBusID",
    "gpu.nvidia.com/pcieBusID",
    "sriovnetwork.k8snetworkplumbingwg.io/pciAddress",
    "dra.net/pciAddress",
    "gpu.amd.com/pciAddr",
)
#: NUMA attributes, the standard one first, in the order they are tried;
#: ``{driver}`` stands for the device's own driver domain.
NUMA_ATTRIBUTES: Final[tuple[str, ...]] = (
    _STANDARD + "numaNode",
    "dra.cpu/numaNodeID",
    "dra.cpu/numaNode",
    "dra.net/numaNode",
    "dra.memory/numaNode",
    "{driver}/numaNode",
    "gpu.nvidia.com/numa",
)
#: The standard PCIe root attribute (a string, or a list of them).
PCIE_ROOT_ATTRIBUTE: Final = _STANDARD + "pcieRoot"


def _split(names: tuple[str, ...]) -> tuple[tuple[str, str, str], ...]:
    """(name, domain, local) of each name, split as :meth:`Device.find_attribute` splits it."""
    split = []
    for name in names:
        domain, _, local = name.rpartition(DOMAIN_SEPARATOR)
        split.append((name, domain, local))
    return tuple(split)


#: (qualified name, domain, local name) of each attribute looked up, split once.
_PCI_NAMES: Final = _split(PCI_BUS_ID_ATTRIBUTES)
_NUMA_NAMES: Final = _split(tuple(n for n in NUMA_ATTRIBUTES if not n.startswith("{")))
_NUMA_OWN: Final = "numaNode"
#: Where ``{driver}/numaNode`` is tried among the NUMA attributes.
_OWN_AT: Final = NUMA_ATTRIBUTES.index("{driver}/numaNode")
_NUMA_KNOWN: Final = frozenset(name for name, _, _ in _NUMA_NAMES)


_ATTRIBUTE_KINDS: Final[tuple[tuple[str, DeviceKind], ...]] = (
    ("dra.net/ifName", "nic"),
    ("dra.cpu/cpuID", "cpu"),
)

#: The standard form, ``[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]``, by position: the
#: separators, then the hex digits (compiling the pattern cost more than env's
#: whole output of the sample tree).
_NORMAL_SEPARATORS: Final = ((4, ":"), (7, ":"), (10, "."))
_NORMAL_HEX: Final = (0, 1, 2, 3, 5, 6, 8, 9)
_HEX_DIGITS: Final = frozenset("0123456789abcdef")
# Compiled on first use (_compiled), for what is not in the standard form: a command
# that never meets such an address does not pay for it.
_PCI: Final = r"(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.([0-7])"


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled for ASCII text, on first use (faster than re's cache after)."""
    return re.compile(pattern, re.ASCII)


def normal_pci_address(text: str) -> str | None:
    """``text`` as a standard PCI address (``0000:18:00.0``), or ``None`` if it is none.

    Takes NVML's eight-digit domain, upper case and a missing domain (``0000``).

    >>> normal_pci_address("00000000:3B:00.0"), normal_pci_address("af:00.1")
    ('0000:3b:00.0', '0000:af:00.1')
    >>> normal_pci_address("../../.."), normal_pci_address("0000:3b:00.0,0000:3c:00.0")
    (None, None)
    """
    if (
        len(text) == 12
        and all(text[i] == separator for i, separator in _NORMAL_SEPARATORS)
        and all(text[i] in _HEX_DIGITS for i in _NORMAL_HEX)
        and "0" <= text[11] <= "7"
    ):
        return text
    found = _compiled(_PCI).fullmatch(text)
    if found is None:
        return None
    domain, bus, slot, function = found.groups()
    return f"{int(domain or '0', 16):04x}:{int(bus, 16):02x}:{int(slot, 16):02x}.{function}"


class PciAddress(msgspec.Struct, frozen=True, gc=False):
    """A device's PCI address: normalised ``value`` (``None``: not an address), its attribute."""

    #: The standard form, or ``None`` when the attribute holds no PCI address.
    value: str | None
    #: The attribute it came from (``gpu.nvidia.com/pcieBusID``).
    source: str
    #: The attribute's value as written.
    raw: AttributeValue


def pci_address_of(device: Device) -> PciAddress | None:
    """The first PCI address attribute ``device`` has, normalised; ``None`` when it has none.

    >>> from dra_metadata import Device, DeviceAttribute as A
    >>> pci_address_of(Device("dra.net", "p", "n", {"pciAddress": A(string="../../x")}))
    PciAddress(value=None, source='dra.net/pciAddress', raw='../../x')
    """
    if not device.attributes:
        return None
    for name, domain, local in _PCI_NAMES:
        found = qualified_entry(device, name, domain, local)
        raw = None if found is None else found.value
        if raw is None:
            continue
        value = normal_pci_address(raw) if isinstance(raw, str) else None
        return PciAddress(value, name, raw)
    return None


def int_values(value: AttributeValue | None) -> tuple[int, ...]:
    """An int or list-of-ints attribute value as a tuple, each number once; else ``()``."""
    if isinstance(value, bool) or value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    if isinstance(value, tuple) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return tuple(dict.fromkeys(int(v) for v in value))
    return ()


class NumaNodes(msgspec.Struct, frozen=True, gc=False):
    """A device's NUMA nodes, the attribute they came from, and every attribute's say."""

    #: The nodes of the first NUMA attribute the device has (a list kept whole).
    nodes: tuple[int, ...]
    #: That attribute's name, or ``None`` when the device has none.
    source: str | None
    #: ``(attribute, nodes)`` of every NUMA attribute the device has, in order.
    sources: tuple[tuple[str, tuple[int, ...]], ...]

    @property
    def disagree(self) -> bool:
        """Whether two of the attributes name different sets of nodes."""
        return len({frozenset(nodes) for _, nodes in self.sources}) > 1


_NO_NUMA: Final = NumaNodes((), None, ())


def numa_of(device: Device) -> NumaNodes:
    """The device's NUMA nodes, from the first of :data:`NUMA_ATTRIBUTES` it has.

    >>> from dra_metadata import Device, DeviceAttribute as A
    >>> numa_of(Device("dra.cpu", "p", "c", {"numaNodeID": A(int=1)})).nodes
    (1,)
    """
    if not device.attributes:
        return _NO_NUMA
    sources: list[tuple[str, tuple[int, ...]]] = []
    driver = device.driver
    own = driver + "/" + _NUMA_OWN
    for index, (name, domain, local) in enumerate(_NUMA_NAMES):
        if index == _OWN_AT and own not in _NUMA_KNOWN:
            found = qualified_entry(device, own, driver, _NUMA_OWN)
            if found is not None and (nodes := int_values(found.value)):
                sources.append((own, nodes))
        found = qualified_entry(device, name, domain, local)
        if found is not None and (nodes := int_values(found.value)):
            sources.append((name, nodes))
    if not sources:
        return NumaNodes((), None, ())
    return NumaNodes(sources[0][1], sources[0][0], tuple(sources))


def pcie_roots_of(device: Device) -> tuple[str, ...]:
    """The standard ``pcieRoot`` as a tuple (a string, or a list kept whole)."""
    found = device.attributes.get(PCIE_ROOT_ATTRIBUTE)
    value = None if found is None else found.value
    if isinstance(value, str):
        return (str(value),) if value else ()
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return tuple(dict.fromkeys(str(v) for v in value if v))
    return ()


def intersect(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """Whether two lists share an element: alignment as KEP-6072 and KEP-5491 define it.

    >>> intersect(("pci0000:17", "pci0000:3a"), ("pci0000:3a",)), intersect((0,), (1,))
    (True, False)
    """
    if len(a) > len(b):
        a, b = b, a
    return bool(a) and not set(a).isdisjoint(b)


def device_kind(device: Device) -> DeviceKind:
    """The device's kind by the rules of the module docs."""
    if device.network_data is not None:
        return "nic"
    known = DRIVER_KINDS.get(device.driver)
    if known is not None:
        return known
    if "gpu" in device.driver.split("."):
        return "gpu"
    for name, kind in _ATTRIBUTE_KINDS:
        if device.find_attribute(name) is not None:
            return kind
    if isinstance(device.attribute("uuid"), str) and isinstance(
        device.attribute("productName"), str
    ):
        return "gpu"
    return "other"
