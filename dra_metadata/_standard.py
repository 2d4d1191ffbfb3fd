"""What the standard attributes mean: the one answer every door reads.

The PCI address, PCIe roots, NUMA nodes and kind of a device are answered
once, here. Every door (:class:`~dra_metadata.Device`'s ``attribute()``,
``require()`` and properties, ``MountedDevice``, ``has=`` and ``where=``,
``has_attribute()``, ``wait --attribute``, ``get``, ``env`` and its profiles,
the topology, ``doctor``) reads these answers (:func:`standard_answer`); none
reads the attributes behind them on its own, and the command line only formats
what it is given.


Names
-----

A name means one thing through every door (:func:`lookup`): the key as given,
the same attribute in the driver's domain, the standard attribute of that name,
then the names drivers publish for it today (:data:`STANDARD_ALIASES`).

PCI address
-----------

``pciBusID`` as :func:`lookup` finds it (the driver's own, the standard
attribute, NVIDIA's ``pcieBusID``, SR-IOV's and dranet's ``pciAddress``, AMD's
``pciAddr``: sources in docs/topology.md), normalised to the standard form
(``0000:18:00.0``); the attribute itself stays readable as written. A value that
is no PCI address is none: the doors that print the standard form refuse it
with one message (:func:`standard_problem`).

NUMA nodes and PCIe roots
-------------------------

``numaNode`` as :func:`lookup` finds it, meaning what KEP-6072 and the Go helper
``deviceattribute.GetNUMANodeAttribute`` (v0.37.2) define: an int is the
device's physical node; a list starts with the physical node, then the
same-socket nodes at the minimum SLIT distance, and is a set for matching; a
negative node ("no NUMA affinity") is never published and is no node here.
``numa_node`` is the physical node, ``numa_nodes`` the list as published.
``pcie_roots`` is the standard ``pcieRoot`` (``pci<domain>:<bus>``), a string or
a set of roots; ``pcie_root`` only when there is one. Two devices are aligned
when their lists intersect (KEP-6072, KEP-5491).

Kinds
-----

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

import re
from collections.abc import Mapping
from functools import cache
from typing import Final, Literal, Protocol

import msgspec

from ._values import (
    DOMAIN_SEPARATOR,
    NETWORK_FIELDS,
    STANDARD_DOMAIN,
    AttributeValue,
    DeviceAttribute,
    NetworkDeviceData,
    int_values,
)

__all__ = [
    "DEVICE_KINDS",
    "DRIVER_KINDS",
    "LIST_QUESTIONS",
    "NUMA_ATTRIBUTES",
    "PCIE_ROOT_ATTRIBUTE",
    "PCI_BUS_ID_ATTRIBUTES",
    "QUESTIONS",
    "STANDARD_ALIASES",
    "Answer",
    "DeviceKind",
    "DeviceLike",
    "NumaNodes",
    "PciAddress",
    "answer",
    "device_kind",
    "has_answer",
    "intersect",
    "is_pcie_root",
    "known_names",
    "lookup",
    "malformed",
    "no_affinity",
    "normal_pci_address",
    "numa_of",
    "pci_address_of",
    "pcie_roots_of",
    "qualified_entry",
    "standard_answer",
    "standard_asked",
    "standard_name",
    "standard_problem",
    "standard_values",
]


class DeviceLike(Protocol):
    """What the answers read of a device: :class:`~dra_metadata.Device` has it all."""

    @property
    def driver(self) -> str:
        """The device's driver (its attributes' own domain)."""

    @property
    def pool(self) -> str:
        """The device's pool."""

    @property
    def name(self) -> str:
        """The device's name in its pool."""

    @property
    def attributes(self) -> Mapping[str, DeviceAttribute]:
        """The attributes as written."""

    @property
    def network_data(self) -> NetworkDeviceData | None:
        """The network data, if any."""


DeviceKind = Literal["gpu", "nic", "cpu", "memory", "other"]
#: Every device kind, in the order listings use.
DEVICE_KINDS: "Final[tuple[DeviceKind, ...]]" = ("gpu", "nic", "cpu", "memory", "other")

#: Drivers whose kind is known (see the module docs for the sources).
DRIVER_KINDS: "Final[dict[str, DeviceKind]]" = {
    "gpu.nvidia.com": "gpu",
    "gpu.amd.com": "gpu",
    "gpu.intel.com": "gpu",
    "dra.cpu": "cpu",
    "dra.net": "nic",
    "sriovnetwork.k8snetworkplumbingwg.io": "nic",
    "dra.memory": "memory",
}

_STANDARD: Final = STANDARD_DOMAIN + DOMAIN_SEPARATOR

#: The standard attributes whose meaning the model answers, by local name, each with
#: the names drivers publish for it today, tried in this order after the standard
#: name (sources in the module docs).
STANDARD_ALIASES: "Final[dict[str, tuple[str, ...]]]" = {
    "pciBusID": (
        "gpu.nvidia.com/pcieBusID",
        "sriovnetwork.k8snetworkplumbingwg.io/pciAddress",
        "dra.net/pciAddress",
        "gpu.amd.com/pciAddr",
    ),
    "numaNode": (
        "dra.cpu/numaNodeID",
        "dra.cpu/numaNode",
        "dra.net/numaNode",
        "dra.memory/numaNode",
        "gpu.nvidia.com/numa",
    ),
    "pcieRoot": (),
}
#: Stands for the device's own driver domain in :data:`PCI_BUS_ID_ATTRIBUTES` and
#: :data:`NUMA_ATTRIBUTES`.
_OWN: Final = "{driver}" + DOMAIN_SEPARATOR
#: PCI address attributes, in the order :func:`lookup` tries them for ``pciBusID``.
PCI_BUS_ID_ATTRIBUTES: "Final[tuple[str, ...]]" = (
    _OWN + "pciBusID",
    _STANDARD + "pciBusID",
    *STANDARD_ALIASES["pciBusID"],
)
#: NUMA attributes, in the order :func:`lookup` tries them for ``numaNode``.
NUMA_ATTRIBUTES: "Final[tuple[str, ...]]" = (
    _OWN + "numaNode",
    _STANDARD + "numaNode",
    *STANDARD_ALIASES["numaNode"],
)
#: The standard PCIe root attribute (a string, or a list of them).
PCIE_ROOT_ATTRIBUTE: Final = _STANDARD + "pcieRoot"
#: Names ``get`` and :meth:`Device.require` answer from the model, beside the
#: standard attributes: every NUMA node, every PCIe root.
LIST_QUESTIONS: "Final[dict[str, str]]" = {"numaNodes": "numaNode", "pcieRoots": "pcieRoot"}


def _split(names: tuple[str, ...]) -> tuple[tuple[str, str, str], ...]:
    """(name, domain, local) of each name, split as :func:`lookup` splits it."""
    split = []
    for name in names:
        domain, _, local = name.rpartition(DOMAIN_SEPARATOR)
        split.append((name, domain, local))
    return tuple(split)


#: (qualified name, domain, local name) of each alias, split once, by standard name.
_ALIASES: Final = {local: _split(names) for local, names in STANDARD_ALIASES.items()}


def lookup(device: DeviceLike, name: str) -> "tuple[str, DeviceAttribute] | None":
    """The attribute ``name`` names on ``device``, with the qualified name it was found as.

    The one rule every door follows (:meth:`Device.attribute`, ``get``, ``wait
    --attribute``, ``has=``, ``where=``, the model's own answers), first match wins:

    1. the key exactly as given;
    2. the same attribute in the driver's domain: ``model`` is ``<driver>/model``
       and ``<driver>/model`` is ``model`` (a ResourceSlice's rule);
    3. for an unqualified name, the Kubernetes standard attribute of that name
       (``pciBusID`` -> ``resource.kubernetes.io/pciBusID``);
    4. for a standard attribute (``pciBusID``, ``numaNode``, ``pcieRoot``,
       unqualified or in the standard domain), the driver's own attribute of that
       name, then the names drivers publish for it today
       (:data:`STANDARD_ALIASES`: NVIDIA's ``pcieBusID``, ``dra.cpu/numaNodeID`` ...).
    """
    attributes = device.attributes
    if not attributes:
        return None
    driver = device.driver
    domain, sep, local = name.rpartition(DOMAIN_SEPARATOR)
    found = attributes.get(name)
    if sep:
        if found is not None:
            return name, found
        if domain == driver:
            found = attributes.get(local)
            return None if found is None else (name, found)
        if domain != STANDARD_DOMAIN or local not in _ALIASES:
            return None
        own = driver + DOMAIN_SEPARATOR + local
        found = attributes.get(own)
        if found is None:
            found = attributes.get(local)
        if found is not None:
            return own, found
    else:
        own = driver + DOMAIN_SEPARATOR + name
        if found is not None:
            return own, found
        found = attributes.get(own)
        if found is not None:
            return own, found
        standard = _STANDARD + name
        found = attributes.get(standard)
        if found is not None:
            return standard, found
    for alias, alias_domain, alias_local in _ALIASES.get(local, ()):
        if alias not in attributes and alias_local not in attributes:
            continue  # the only two keys qualified_entry looks up: neither is there
        found = qualified_entry(device, alias, alias_domain, alias_local)
        if found is not None:
            return alias, found
    return None


def known_names(device: DeviceLike) -> "list[str]":
    """What a "did you mean" for an attribute of ``device`` chooses from: its keys, their
    local names, and the standard names :func:`lookup` answers on it."""
    names = dict.fromkeys(device.attributes)
    for key in device.attributes:
        domain, sep, local = key.rpartition(DOMAIN_SEPARATOR)
        if sep and domain in (device.driver, STANDARD_DOMAIN):
            names.setdefault(local)
    for local in STANDARD_ALIASES:
        if lookup(device, local) is not None:
            names.setdefault(local)
            for list_name, standard in LIST_QUESTIONS.items():
                if standard == local:
                    names.setdefault(list_name)
    return list(names)


def standard_name(name: str) -> "str | None":
    """The standard attribute (``numaNode``...) ``name`` asks for, unqualified or in the
    standard domain (``numaNodes`` asks ``numaNode``); ``None`` for any other name."""
    domain, sep, local = name.rpartition(DOMAIN_SEPARATOR)
    if sep and domain != STANDARD_DOMAIN:
        return None
    local = LIST_QUESTIONS.get(local, local)
    return local if local in _ALIASES else None


def standard_asked(name: str, standard: str) -> str:
    """The attribute name a lookup of ``name`` asks for, ``standard`` being what
    :func:`standard_name` made of it: the list question's attribute, in the domain
    given (``resource.kubernetes.io/numaNodes`` asks ``resource.kubernetes.io/numaNode``)."""
    domain = name.rpartition(DOMAIN_SEPARATOR)[0]
    return f"{domain}{DOMAIN_SEPARATOR}{standard}" if domain else standard


def has_answer(device: DeviceLike, name: str) -> bool:
    """Whether ``device`` has attribute ``name``: what ``inv.devices(has=)``,
    ``has_attribute()`` and ``wait --attribute`` ask. A standard question counts by
    its answer (:func:`standard_answer`: a negative ``numaNode`` is no node, a
    ``pciBusID`` that is no PCI address is none, a set of two PCIe roots is no single
    ``pcieRoot``); any other name by :func:`lookup`.

    >>> from dra_metadata import Device, DeviceAttribute as A
    >>> cpu = Device("dra.cpu", "p", "c", {"numaNode": A(int=-1), "cpus": A(ints=(4, 5))})
    >>> has_answer(cpu, "cpus"), has_answer(cpu, "numaNode"), cpu.find_attribute("numaNode")
    (True, False, DeviceAttribute(int=-1))
    """
    found = standard_answer(device, name)
    if found is not None:
        return found.value is not None
    found_entry = lookup(device, name)
    return found_entry is not None and found_entry[1].value is not None


class Answer(msgspec.Struct, frozen=True, gc=False, repr_omit_defaults=True):
    """The model's answer to one question about one device: a value, or why there is none.

    Every door reads this one answer and only formats it: ``get`` prints
    :attr:`value` (``note`` on stderr), or says :attr:`why` and exits 1 (65 when
    :attr:`malformed`); ``require()`` returns it or raises with ``why``;
    ``has=`` and ``wait --attribute`` ask whether :attr:`value` is set.
    """

    #: The value (``None``: the device has none), in the standard form for a
    #: standard question (``0000:18:00.0``; the physical NUMA node; every node for
    #: ``numaNodes``).
    value: AttributeValue | None = None
    #: Where a value came from when it is not the standard attribute as written
    #: (``from gpu.nvidia.com/pcieBusID, in the standard form``), else empty.
    note: str = ""
    #: Why there is no value when something was written (``-1``: no NUMA affinity;
    #: two PCIe roots; a value the standard does not define), else empty.
    why: str = ""
    #: Whether the attribute is there but is not what the standard defines: an error
    #: (``MalformedAttributeError``, exit 65) where the other "no value"s are not.
    malformed: bool = False


_NO_ANSWER: Final = Answer()
_STD_PCI: Final = _STANDARD + "pciBusID"
#: Every name :func:`standard_answer` answers: the doors' quick test.
QUESTIONS: Final = frozenset(
    name for local in (*STANDARD_ALIASES, *LIST_QUESTIONS) for name in (local, _STANDARD + local)
)


def standard_answer(device: DeviceLike, name: str) -> "Answer | None":
    """The answer to standard question ``name``; ``None`` when ``name`` is none.

    The questions: ``pciBusID`` (in the standard form, from the names drivers
    publish too), ``numaNode`` (the physical node: a list's first element,
    KEP-6072), ``numaNodes`` (every node, the physical one first), ``pcieRoot``
    (the root, when there is one: a set of several has no first one, KEP-5491),
    ``pcieRoots`` (every root), unqualified or in the standard domain (which
    tries the standard attribute before the driver's own).

    >>> import dra_metadata as dm
    >>> gpu = dm.Device("gpu.nvidia.com", "p", "gpu-0",
    ...                 {"pcieBusID": dm.DeviceAttribute(string="00000000:18:00.0")})
    >>> standard_answer(gpu, "pciBusID")
    Answer(value='0000:18:00.0', note='from gpu.nvidia.com/pcieBusID, in the standard form')
    >>> standard_answer(gpu, "uuid") is None
    True
    """
    if name not in QUESTIONS:
        return None
    standard = standard_name(name)
    assert standard is not None
    asked = standard_asked(name, standard)  # numaNodes asks numaNode
    whole = name.rpartition(DOMAIN_SEPARATOR)[2] in LIST_QUESTIONS
    if standard == "pciBusID":
        found = pci_address_of(device, asked)
        if found is None:
            return _NO_ANSWER
        if found.value is None:
            return Answer(why=malformed(device, found.source, found.raw, standard), malformed=True)
        if found.source == _STD_PCI and found.value == found.raw:
            return Answer(found.value)
        return Answer(found.value, note=f"from {found.source}, in the standard form")
    if standard == _NUMA_NODE:
        numa = numa_of(device, asked)
        nodes, source = numa.nodes, numa.source
        if not nodes:
            if numa.malformed:
                wrong, raw = numa.malformed[0]
                return Answer(why=malformed(device, wrong, raw, standard), malformed=True)
            if numa.unknown:
                return Answer(why=no_affinity(numa.unknown[0]))
            return _NO_ANSWER
        note = "" if source == _STD_NUMA else f"from {source}"
        if whole or len(nodes) == 1:
            return Answer(nodes if whole else nodes[0], note=note)
        listed = ",".join(map(str, nodes))
        physical = f"the physical node of {listed} (numaNodes prints them all)"
        return Answer(nodes[0], note=f"{note}; {physical}" if note else physical)
    problem = standard_problem(device, asked)  # pcieRoot
    if problem is not None:
        return Answer(why=problem, malformed=True)
    roots = pcie_roots_of(device)
    if whole or len(roots) < 2:
        return Answer((roots if whole else roots[0]) if roots else None)
    return Answer(
        why=f"PCIe roots {','.join(roots)}: a set of roots has no first one (KEP-5491); "
        "ask pcieRoots"
    )


def answer(device: DeviceLike, name: str) -> Answer:
    """The answer to any name: a network field (``ips``, ``networkData.ips``), a standard
    question (:func:`standard_answer`), else the attribute as :func:`lookup` finds it.

    >>> import dra_metadata as dm
    >>> nic = dm.Device("sriov.example.com", "p", "vf-0",
    ...                 network_data=dm.NetworkDeviceData(ips=("10.0.0.5/24",)))
    >>> answer(nic, "ips").value, answer(nic, "networkData.ips").value, answer(nic, "vfIndex")
    (('10.0.0.5/24',), ('10.0.0.5/24',), Answer())
    """
    field = name.removeprefix("networkData.")
    if field in NETWORK_FIELDS and (field == name or name.startswith("networkData.")):
        network = device.network_data
        if network is None:
            return _NO_ANSWER
        value: str | tuple[str, ...] = getattr(network, NETWORK_FIELDS[field])
        return Answer(value or None)
    found = standard_answer(device, name)
    if found is not None:
        return found
    entry = lookup(device, name)
    return _NO_ANSWER if entry is None or entry[1].value is None else Answer(entry[1].value)


def standard_values(device: DeviceLike, name: str) -> "tuple[object, ...] | None":
    """The answer to standard question ``name`` as a set of values, for matching as
    ``matchAttribute`` does (every NUMA node, the PCI address in its standard form,
    every root: a list is a set that matches when it shares a value); ``None`` when
    ``name`` is no standard question."""
    standard = standard_name(name)
    if standard is None:
        return None
    asked = standard_asked(name, standard)
    if standard == _NUMA_NODE:
        return numa_of(device, asked).nodes
    if standard == "pciBusID":
        pci = pci_address_of(device, asked)
        return () if pci is None or pci.value is None else (pci.value,)
    return pcie_roots_of(device)


_ATTRIBUTE_KINDS: "Final[tuple[tuple[str, DeviceKind], ...]]" = (
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


def is_pcie_root(text: str) -> bool:
    """Whether ``text`` is a PCIe root in the standard form: ``pci``, a 4-8 digit
    lower-case hex domain, ``:``, a 2-digit bus (``pci0000:3a``, as Linux names it)."""
    domain, colon, bus = text[3:].partition(":")
    return (
        text[:3] == "pci"
        and colon == ":"
        and 4 <= len(domain) <= 8
        and len(bus) == 2
        and _HEX_DIGITS.issuperset(domain)
        and _HEX_DIGITS.issuperset(bus)
    )


class PciAddress(msgspec.Struct, frozen=True, gc=False):
    """A device's PCI address: normalised ``value`` (``None``: not an address), its attribute."""

    #: The standard form, or ``None`` when the attribute holds no PCI address.
    value: str | None
    #: The attribute it came from (``gpu.nvidia.com/pcieBusID``).
    source: str
    #: The attribute's value as written.
    raw: AttributeValue


def pci_address_of(device: DeviceLike, name: str = "pciBusID") -> PciAddress | None:
    """The device's PCI address attribute (:func:`lookup` of ``name``: ``pciBusID``, or
    the standard-first ``resource.kubernetes.io/pciBusID``), normalised; ``None``
    when it has none."""
    found = lookup(device, name)
    if found is None:
        return None
    source, entry = found
    raw = entry.value
    if raw is None:
        return None
    value = normal_pci_address(raw) if isinstance(raw, str) else None
    return PciAddress(value, source, raw)


class NumaNodes(msgspec.Struct, frozen=True, gc=False):
    """A device's NUMA nodes, the attribute they came from, and every attribute's say.

    KEP-6072: a list-valued ``numaNode`` starts with the device's physical NUMA
    node; the rest are the same-socket nodes at the minimum distance. A negative
    node means "no NUMA affinity" (Linux's ``-1``): not a node, so the attribute
    says nothing of where the device is (:attr:`unknown` names it).
    """

    #: The nodes of the first NUMA attribute with a node, in the order published
    #: (the physical node first; negative numbers left out).
    nodes: tuple[int, ...]
    #: That attribute's name, or ``None`` when the device has none.
    source: str | None
    #: ``(attribute, nodes)`` of every NUMA attribute with a node, in lookup order.
    sources: tuple[tuple[str, tuple[int, ...]], ...]
    #: NUMA attributes that say "no NUMA affinity" (a negative node), in lookup order.
    unknown: tuple[str, ...] = ()
    #: ``(attribute, value)`` of NUMA attributes whose value is no NUMA node at all (a
    #: string, a bool, strings where ints are meant), in lookup order.
    malformed: tuple[tuple[str, AttributeValue], ...] = ()

    @property
    def physical(self) -> "int | None":
        """The device's physical NUMA node: the scalar, or the list's first element."""
        return self.nodes[0] if self.nodes else None

    @property
    def disagree(self) -> bool:
        """Whether two attributes name different physical nodes, or two lists different sets.

        A scalar is compared with a list's first element only: ``numaNodeID: 1``
        and ``numaNode: [1, 0]`` agree (what dra-driver-cpu publishes).
        """
        sources = self.sources
        if len(sources) < 2:
            return False
        if len({nodes[0] for _, nodes in sources}) > 1:
            return True
        return len({frozenset(nodes) for _, nodes in sources if len(nodes) > 1}) > 1


_NO_NUMA: Final = NumaNodes((), None, ())
_NUMA_NODE: Final = "numaNode"
_STD_NUMA: Final = _STANDARD + _NUMA_NODE


def numa_of(device: DeviceLike, name: str = _NUMA_NODE) -> NumaNodes:
    """The device's NUMA nodes, read in :func:`lookup`'s order for ``name`` (``numaNode``,
    the driver's own first; or ``resource.kubernetes.io/numaNode``, the standard first).

    >>> from dra_metadata import Device, DeviceAttribute as A
    >>> cpu = Device("dra.cpu", "p", "c", {"resource.kubernetes.io/numaNode": A(ints=(1, 0))})
    >>> numa_of(cpu).nodes, numa_of(cpu).physical
    ((1, 0), 1)
    """
    attributes = device.attributes
    if not attributes:
        return _NO_NUMA
    driver = device.driver
    own = driver + DOMAIN_SEPARATOR + _NUMA_NODE
    found: list[tuple[str, DeviceAttribute]] = []
    entry = attributes.get(own)
    if entry is None:
        entry = attributes.get(_NUMA_NODE)  # the driver's own, unqualified
    if entry is not None:
        found.append((own, entry))
    if own != _STD_NUMA and (entry := attributes.get(_STD_NUMA)) is not None:
        if name == _STD_NUMA:  # the key as given first
            found.insert(0, (_STD_NUMA, entry))
        else:
            found.append((_STD_NUMA, entry))
    for alias, domain, local in _ALIASES[_NUMA_NODE]:
        if alias == own or (alias not in attributes and local not in attributes):
            continue  # read already, or neither key qualified_entry looks up is there
        entry = qualified_entry(device, alias, domain, local)
        if entry is not None:
            found.append((alias, entry))
    if not found:
        return _NO_NUMA
    sources: list[tuple[str, tuple[int, ...]]] = []
    unknown: list[str] = []
    wrong: list[tuple[str, AttributeValue]] = []
    for name, entry in found:
        nodes = int_values(entry.value)
        if not nodes:
            if entry.value is not None:
                wrong.append((name, entry.value))
            continue
        if nodes[0] < 0:
            unknown.append(name)
            continue
        if min(nodes) < 0:
            nodes = tuple(node for node in nodes if node >= 0)
        sources.append((name, nodes))
    if not sources:
        if unknown or wrong:
            return NumaNodes((), None, (), tuple(unknown), tuple(wrong))
        return _NO_NUMA
    return NumaNodes(sources[0][1], sources[0][0], tuple(sources), tuple(unknown), tuple(wrong))


def pcie_roots_of(device: DeviceLike) -> tuple[str, ...]:
    """The standard ``pcieRoot`` as a tuple (a string, or a list kept whole).

    Empty when the attribute is absent or not in the standard form
    (:func:`standard_problem` says why).
    """
    found = device.attributes.get(PCIE_ROOT_ATTRIBUTE)
    value = None if found is None else found.value
    if isinstance(value, str):
        return (str(value),) if value and is_pcie_root(value) else ()
    if isinstance(value, tuple) and all(isinstance(v, str) and is_pcie_root(v) for v in value):
        return tuple(dict.fromkeys(str(v) for v in value))
    return ()


def standard_problem(device: DeviceLike, name: str) -> "str | None":
    """Why the device's standard ``name`` (``pciBusID``, ``numaNode``, ``pcieRoot``, their
    lists, or qualified in the standard domain) has no value because what is written is
    not what the standard defines, or ``None``: the one message (:func:`malformed`) of
    every door (``get``, ``env``, ``require()``, the topology, ``doctor``).

    A NUMA attribute is malformed only when no NUMA attribute gives a node: the
    answer comes from the first that does.
    """
    raw: AttributeValue | None
    standard = standard_name(name)
    if standard == _NUMA_NODE:
        numa = numa_of(device, standard_asked(name, standard))
        if numa.nodes or not numa.malformed:
            return None
        source, raw = numa.malformed[0]
        return malformed(device, source, raw, standard)
    if standard == "pciBusID":
        pci = pci_address_of(device, name)
        if pci is None or pci.value is not None:
            return None
        return malformed(device, pci.source, pci.raw, standard)
    if standard == "pcieRoot":
        found = device.attributes.get(PCIE_ROOT_ATTRIBUTE)
        raw = None if found is None else found.value
        if raw is None or pcie_roots_of(device):
            return None
        return malformed(device, PCIE_ROOT_ATTRIBUTE, raw, standard)
    return None


#: What each standard attribute must be, and its standard form.
_STANDARD_FORMS: Final = {
    "pciBusID": ("a PCI address in any form", "0000:3b:00.0"),
    "numaNode": ("a NUMA node number or a list of them (KEP-6072)", "1, or [1, 0]"),
    "pcieRoot": ("a PCIe root", "pci0000:3a"),
}


def no_affinity(source: str) -> str:
    """The one text for NUMA attribute ``source`` holding a negative node (KEP-6072)."""
    return f"{source} is negative: no NUMA affinity, so no NUMA node is known (KEP-6072)"


def malformed(device: DeviceLike, source: str, raw: object, standard: str) -> str:
    """The one message for attribute ``source`` of ``device`` holding ``raw``, which is
    not ``standard`` (``pciBusID``, ``numaNode``, ``pcieRoot``) in any form (see
    :func:`standard_problem`)."""
    what, form = _STANDARD_FORMS[standard]
    return (
        f"device {device.driver}/{device.pool}/{device.name}: {source} holds {raw!r}, "
        f"which is not {what} (standard form: {form})"
    )


def intersect(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """Whether two lists share an element: alignment as KEP-6072 and KEP-5491 define it.

    >>> intersect(("pci0000:17", "pci0000:3a"), ("pci0000:3a",)), intersect((0,), (1,))
    (True, False)
    """
    if len(a) > len(b):
        a, b = b, a
    return bool(a) and not set(a).isdisjoint(b)


def device_kind(device: DeviceLike) -> DeviceKind:
    """The device's kind by the rules of the module docs."""
    if device.network_data is not None:
        return "nic"
    known = DRIVER_KINDS.get(device.driver)
    if known is not None:
        return known
    if "gpu" in device.driver.split("."):
        return "gpu"
    for name, kind in _ATTRIBUTE_KINDS:
        if lookup(device, name) is not None:
            return kind
    uuid, product = lookup(device, "uuid"), lookup(device, "productName")
    if (
        uuid is not None
        and product is not None
        and isinstance(uuid[1].value, str)
        and isinstance(product[1].value, str)
    ):
        return "gpu"
    return "other"


def qualified_entry(
    device: DeviceLike, name: str, domain: str, local: str
) -> DeviceAttribute | None:
    """The entry of the qualified attribute ``name`` (``domain/local``) of ``device``.

    The key as given, else, in the device's own driver domain, the unqualified
    key: the rule :meth:`Device.find_attribute` follows for a qualified name. It
    takes the name split already, for callers that look the same names up on
    many devices.
    """
    attributes = device.attributes
    found = attributes.get(name)
    if found is None and domain == device.driver:
        found = attributes.get(local)
    return found
