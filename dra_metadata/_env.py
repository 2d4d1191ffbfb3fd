"""Device metadata as environment variables: names, values and three output formats.

This is what ``dra-metadata env`` prints, as pure functions over decoded metadata
(:func:`env_vars` is the one that reads a root).

Names
=====

Every request directory gets the prefix ``DRA_<CLAIM>_<REQUEST>_``: the claim's
directory name (the claim name, or for a claim made from a template its
name in the pod spec) and the request's directory name, upper-cased, every character other
than ``A-Z`` and ``0-9`` turned into ``_`` (``my-gpu`` -> ``MY_GPU``). ``DRA_``
can be replaced (``prefix=``). With ``P`` that prefix:

==============================  =====================================================
``P COUNT``                     number of devices (``2``)
``P DEVICES``                   device names, in merged device order
``P DRIVERS``                   distinct drivers, in device order
``P REQUEST``                   the request name(s) in the files (``gpu/high-memory``)
``P <ATTR>``                    an attribute or network field every device has: the
                                values in device order, comma-joined (list values
                                only when the request has one device)
``P <i>_NAME``, ``_DRIVER``,    device ``i`` (0-based, merged order)
``_POOL``
``P <i>_<ATTR>``                each attribute of device ``i`` that has a value
``P <i>_INTERFACE_NAME``,       its network data, when set
``_IPS``, ``_HARDWARE_ADDRESS``
==============================  =====================================================

The device questions come from the model, as every door answers them:
``PCI_BUS_ID`` in the standard form; ``NUMA_NODES`` every NUMA node, the
physical one first, and ``NUMA_NODE`` the physical node (a list's first
element, KEP-6072); ``PCIE_ROOTS`` every root and ``PCIE_ROOT`` only when
there is one. For the request, ``P NUMA_NODES`` is every node once, in the
order first seen (the first device's physical node first), and ``P NUMA_NODE``
the physical node only when every device has the same one. A negative NUMA
node ("no NUMA affinity") is no node: it gives no variable at all. A
``pciBusID`` or ``pcieRoot`` not in its standard form is refused with
:class:`~dra_metadata.MalformedAttributeError`, as ``get`` refuses it.

``<ATTR>`` is the attribute's local name in UPPER_SNAKE, split as it reads
(``pciBusID`` -> ``PCI_BUS_ID``, ``numCPUs`` -> ``NUM_CPUS``, ``HTTPServer`` ->
``HTTP_SERVER``: a capital after a lower-case letter or digit starts a word, and
so does the last capital of a run when two or more lower-case letters follow it;
see :func:`snake_name`). It is qualified with the domain
(``resource.kubernetes.io/pciBusID`` -> ``RESOURCE_KUBERNETES_IO_PCI_BUS_ID``)
when two attributes of the request share the local name, when the name is one of
the fixed ones above, or when it would start with a digit. The choice is made once
per request, so every device names an attribute the same way.

Values: integers in decimal, booleans ``true``/``false``, strings and versions as
written, lists joined with ``,`` (use the JSON output when an element may hold a
comma).

Two sources that map to one name (claims ``a-b`` and ``a_b``, a claim and a
template claim of the same name, two attribute keys ``a.b/x`` and ``a-b/x``)
are an :class:`~dra_metadata.EnvError` naming both; neither is written. So is a
value holding a NUL character, which no environment variable can hold.

The names and the text of the variables (``snake_name``, the ``shell``, ``dotenv``
and ``json`` formats) are :mod:`._envtext`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import pairwise
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Final

import msgspec

from ._envtext import env_name, format_value, snake_name, valid_prefix
from ._errors import DRAMetadataError, EnvError, MalformedAttributeError
from ._model import (
    DOMAIN_SEPARATOR,
    NETWORK_FIELDS,
    STANDARD_DOMAIN,
    AttributeValue,
    Device,
    DeviceMetadata,
    NetworkDeviceData,
)
from ._paths import RootArg, claim_label
from ._read import DEFAULT_MAX_SIZE
from ._standard import (
    NUMA_ATTRIBUTES,
    PCI_BUS_ID_ATTRIBUTES,
    PCIE_ROOT_ATTRIBUTE,
    malformed,
    normal_pci_address,
    numa_of,
    pci_address_of,
    pcie_roots_of,
    standard_problem,
)

if TYPE_CHECKING:
    from ._inventory import Inventory

__all__ = [
    "DEFAULT_PREFIX",
    "collect",
    "collect_into",
    "env_vars",
    "request_variables",
]

#: The prefix of every variable unless another is asked for.
DEFAULT_PREFIX: Final = "DRA_"


_COUNT: Final = "COUNT"
_DEVICES: Final = "DEVICES"
_DRIVERS: Final = "DRIVERS"
_REQUEST: Final = "REQUEST"
_NAME: Final = "NAME"
_DRIVER: Final = "DRIVER"
_POOL: Final = "POOL"
_ATTRIBUTE: Final = "attribute"
_NETWORK_FIELD: Final = "network field"


#: Network data fields: wire name -> variable name (``interfaceName`` -> ``INTERFACE_NAME``).
_NETWORK_VARIABLES: Final = {wire: snake_name(wire) for wire in NETWORK_FIELDS}
#: Names an attribute cannot have unqualified.
_RESERVED: Final = frozenset(
    {_COUNT, _DEVICES, _DRIVERS, _REQUEST, _NAME, _DRIVER, _POOL, *_NETWORK_VARIABLES.values()}
)


class Variable(msgspec.Struct, frozen=True, gc=False):
    """One variable, with where it came from (for error messages)."""

    name: str
    value: str
    #: The request it belongs to: ``claim 'nic' request 'eth'``.
    source: str
    #: The device it describes (its index), or -1 for the request as a whole.
    device: int = -1
    #: What of the device or request: ``""``, ``"attribute"`` or ``"network field"``...
    what: str = ""
    #: ... and which one (an attribute key, or a variable name part).
    item: str = ""
    #: Whether ``item`` is an attribute key (quoted in messages).
    quoted: bool = False

    def origin(self) -> str:
        """Where it came from, in one phrase.

        For example ``claim 'nic' request 'eth' device 0 attribute 'uuid'``; built
        only for messages (a variable holds no text of its own for it).
        """
        parts = [self.source]
        if self.device >= 0:
            parts.append(f"device {self.device}")
        if self.what:
            parts.append(
                f"{self.what} {self.item!r}" if self.quoted else f"{self.what} {self.item}"
            )
        return " ".join(parts)


def _network_values(network: NetworkDeviceData | None) -> dict[str, tuple[str, bool]]:
    """Network field variable name -> (text, is a list), for the fields that are set."""
    found: dict[str, tuple[str, bool]] = {}
    if network is not None:
        for wire, value in network.set_fields():
            if isinstance(value, tuple):
                found[_NETWORK_VARIABLES[wire]] = (",".join(value), True)
            else:
                found[_NETWORK_VARIABLES[wire]] = (value, False)
    return found


def request_variables(prefix: str, source: str, md: DeviceMetadata) -> list[Variable]:
    """The variables of one request directory's (merged) metadata, in output order.

    ``prefix`` is the request's full prefix (``DRA_GPU_GPU_``), ``source`` names it
    in messages. Names are not checked for collisions here (see :func:`collect`).
    """
    _, parts = _request_parts(prefix, source, md)
    return [variable for part in parts for variable in part.variables()]


class _Part(msgspec.Struct, gc=False):
    """Some variables of a request, as names and values, and where each came from.

    A part is the request's own variables or one device's: first ``fixed``
    variables of the request or device itself (``COUNT`` ..., ``<i>_NAME`` ...),
    then ``attributes`` attribute variables, then network fields. Where each came
    from is built only for messages (:meth:`variables`).
    """

    names: list[str]
    values: list[str]
    #: The request, as messages name it.
    source: str
    #: The device's index, or -1 for the request's own variables.
    device: int
    #: Where the variable name part starts in each name (after the prefix).
    start: int
    fixed: int
    attributes: int
    #: The device's entries (their attribute keys), or None: the request's
    #: attribute variables are named by their name part.
    entries: list[_Entry] | None = None

    def variables(self) -> list[Variable]:
        """The part's variables, each with where it came from."""
        source, device, start, fixed = self.source, self.device, self.start, self.fixed
        entries = self.entries
        found: list[Variable] = []
        for position, (name, value) in enumerate(zip(self.names, self.values, strict=True)):
            at = position - fixed
            if at < 0:
                found.append(Variable(name, value, source, device))
            elif at >= self.attributes:
                found.append(Variable(name, value, source, device, _NETWORK_FIELD, name[start:]))
            elif entries is None:
                found.append(Variable(name, value, source, device, _ATTRIBUTE, name[start:]))
            else:
                found.append(
                    Variable(name, value, source, device, _ATTRIBUTE, entries[at][1], True)
                )
        return found


#: Up to this many devices, a request's per-device work is kept between the pass
#: that finds the variables every device shares and the one that writes each
#: device's; above it, it is done again, so a request of 100,000 devices never
#: holds more than one device's variables at a time.
_KEEP_DEVICES: Final = 256

#: (variable name part, attribute key, text, is a list), in name order.
_Entry = tuple[str, str, str, bool]


def _request_parts(prefix: str, source: str, md: DeviceMetadata) -> tuple[bool, Iterator[_Part]]:
    """A request's variables in output order, in parts, and whether the parts are independent.

    The first part is the request's own (count, devices, drivers, request name,
    the attributes and network fields every device has), then one part per
    device (``<i>_NAME``, ...). Parts are
    independent (no name of one can be a name of another) when no attribute's
    name part starts with a digit: a device's names are then ``<i>_`` followed
    by a letter, which no other device and no request-wide name can spell.
    """
    requests = md.requests
    if len(requests) == 1:
        devices: Sequence[Device] = requests[0].devices
    else:
        devices = [device for request in requests for device in request.devices]
    count = len(devices)
    single = count == 1
    keep = single or count <= _KEEP_DEVICES  # one device's work is one device's anyway
    kept_found: list[list[tuple[str, str, AttributeValue]]] = []
    if single:
        kept_found.append(_attribute_values(devices[0]))
        qualified_names: Iterable[str] = map(_QUALIFIED_OF, kept_found[0])
    else:
        qualified_set: set[str] = set()
        for device in devices:
            found = _attribute_values(device)
            qualified_set.update(map(_QUALIFIED_OF, found))
            if keep:
                kept_found.append(found)
        qualified_names = qualified_set
    var_of, independent, sets = _name_plan(qualified_names)

    # Per name part: its text on each device while every device so far has had it
    # exactly once (and a scalar, unless the request has one device), else None.
    columns: dict[str, list[str] | None] = {}
    network_columns: dict[str, list[str] | None] = {}
    kept_entries: list[list[_Entry]] = []
    kept_network: list[dict[str, tuple[str, bool]]] = []
    for index, device in enumerate(devices):
        entries = _entries(kept_found[index] if keep else _attribute_values(device), var_of)
        network = _network_values(device.network_data)
        previous = None
        if index == 0:
            for var, _, text, is_list in entries:
                # entries come in name order: a name twice on one device is no column
                columns[var] = None if var == previous or (is_list and not single) else [text]
                previous = var
            if network:
                network_columns = {
                    var: None if is_list and not single else [text]
                    for var, (text, is_list) in network.items()
                }
        else:
            for var, _, text, is_list in entries:
                column = columns.get(var)
                if column is not None and len(column) == index and not is_list and var != previous:
                    column.append(text)
                else:
                    columns[var] = None
                previous = var
            for var, network_column in network_columns.items():
                if network_column is not None:
                    field = network.get(var)
                    if field is None or field[1]:
                        network_columns[var] = None
                    else:
                        network_column.append(field[0])
        if keep:
            kept_entries.append(entries)
            kept_network.append(network)

    names = [prefix + _COUNT, prefix + _DEVICES, prefix + _DRIVERS, prefix + _REQUEST]
    values = [
        str(count),
        ",".join(map(_NAME_OF, devices)),
        ",".join(dict.fromkeys(map(_DRIVER_OF, devices))),
        requests[0].name
        if len(requests) == 1
        else ",".join(dict.fromkeys([request.name for request in requests])),
    ]
    # On every device, once, and a scalar unless only one device (one device's
    # entries are in name order already).
    for var in columns if single else sorted(columns):
        column = columns[var]
        if column is not None and len(column) == count:
            answer = sets.get(var)
            if answer is None:
                text = column[0] if single else ",".join(column)
            elif answer in _SETS:  # NUMA_NODES, PCIE_ROOTS: every one, once, first seen first
                text = ",".join(dict.fromkeys(_items(column)))
            elif len(set(column)) == 1:  # NUMA_NODE, PCIE_ROOT: only when one for all
                text = column[0]
            else:
                continue
            names.append(prefix + var)
            values.append(text)
    attributes = len(names) - 4
    for var, network_column in network_columns.items():
        if network_column is not None:
            names.append(prefix + var)
            values.append(network_column[0] if single else ",".join(network_column))
    head = _Part(names, values, source, -1, len(prefix), 4, attributes)

    if single:  # no need for a generator
        return independent, iter(
            (head, _device_part(prefix, source, 0, devices[0], kept_entries[0], kept_network[0]))
        )

    def parts() -> Iterator[_Part]:
        yield head
        for index, device in enumerate(devices):
            if keep:
                entries, network = kept_entries[index], kept_network[index]
            else:
                entries = _entries(_attribute_values(device), var_of)
                network = _network_values(device.network_data)
            yield _device_part(prefix, source, index, device, entries, network)

    return independent, parts()


#: A device's name, its driver; an attribute's qualified name (see _attribute_values).
_NAME_OF: Final = attrgetter("name")
_DRIVER_OF: Final = attrgetter("driver")
_QUALIFIED_OF: Final = itemgetter(1)


def _items(column: list[str]) -> Iterator[str]:
    """The elements of a column of comma-joined lists, in order."""
    for text in column:
        yield from text.split(",")


def _device_part(
    prefix: str,
    source: str,
    index: int,
    device: Device,
    entries: list[_Entry],
    network: dict[str, tuple[str, bool]],
) -> _Part:
    """Device ``index``'s own variables (``<i>_NAME`` ...)."""
    at = f"{prefix}{index}_"
    names = [at + _NAME, at + _DRIVER, at + _POOL]
    values = [device.name, device.driver, device.pool]
    for var, _, text, _ in entries:  # a loop costs less than a comprehension for a few
        names.append(at + var)
        values.append(text)
    for var, (text, _) in network.items():
        names.append(at + var)
        values.append(text)
    return _Part(names, values, source, index, len(at), 3, len(entries), entries)


def _name_plan(qualified_names: Iterable[str]) -> tuple[dict[str, str], bool, dict[str, str]]:
    """A request's variable name part of each qualified attribute name, whether its parts
    are independent, and the name parts the model's answers of a set or a single take
    (name part -> the standard name it answers).

    Requests of few names are remembered by their names (requests mostly share them).
    """
    key = tuple(qualified_names)
    plan = _plans.get(key)
    if plan is not None:
        return plan
    var_of = _attribute_variable_names(key)
    independent = not any(part[:1].isdigit() for part in var_of.values())
    answers = {var_of[name]: name for name in (*_SETS, *_SETS.values()) if name in var_of}
    plan = (var_of, independent, answers)
    if len(key) <= _PLAN_NAMES_MAX:
        if len(_plans) >= _PLANS_MAX:
            _plans.clear()
        _plans[key] = plan
    return plan


#: Name plans of the attribute name sets seen so far (see :func:`_name_plan`),
#: emptied when they grow past _PLANS_MAX; only sets of up to _PLAN_NAMES_MAX names.
_plans: dict[tuple[str, ...], tuple[dict[str, str], bool, dict[str, str]]] = {}
_PLANS_MAX: Final = 256
_PLAN_NAMES_MAX: Final = 64


#: What the model answers for env in the standard names (``NUMA_NODES`` ...).
_STD: Final = STANDARD_DOMAIN + DOMAIN_SEPARATOR
_STD_PCI: Final = _STD + "pciBusID"
_STD_ROOT: Final = PCIE_ROOT_ATTRIBUTE


def _attribute_values(device: Device) -> list[tuple[str, str, AttributeValue]]:
    """(attribute key, qualified name, value) of a device's attributes that have a value.

    The device questions come from the model: ``NUMA_NODES`` (every node, the
    physical one first) and ``NUMA_NODE`` (the physical node) in place of every
    ``numaNode`` attribute the answer read and of every NUMA attribute that says
    "no affinity"; ``PCI_BUS_ID`` in the standard form (from an alias too);
    ``PCIE_ROOTS`` and ``PCIE_ROOT`` (only when one). A standard attribute that
    holds what the standard does not define (a NUMA node that is a string, when no
    other NUMA attribute gives one) is a :class:`~dra_metadata.MalformedAttributeError`,
    as ``get`` says (:func:`~dra_metadata._standard.standard_answer`). Other aliases
    (``pcieBusID``, ``numaNodeID``) keep their own variables, as written.
    """
    found: list[tuple[str, str, AttributeValue]] = []
    placed: list[tuple[str, AttributeValue]] = []
    names = _qualified_names.get(device.driver)
    if names is None:
        if len(_qualified_names) >= _QUALIFIED_NAMES_MAX:
            _qualified_names.clear()
        names = _qualified_names[device.driver] = {}
    for key, attribute in device.attributes.items():
        value = attribute.value
        if value is not None:
            name = names.get(key)
            if name is None:
                if len(names) >= _QUALIFIED_NAMES_MAX:
                    names.clear()
                name = names[key] = _qualified_name(device.driver, key)
            qualified, place = name
            found.append((key, qualified, value))
            if place:
                placed.append((qualified, value))
    if not placed or (  # the common cases: nothing the model answers, or as written
        len(placed) == 1
        and placed[0][0] == _STD_PCI
        and isinstance(placed[0][1], str)
        and normal_pci_address(placed[0][1]) == placed[0][1]
    ):
        return found
    numa = numa_of(device)
    pci = pci_address_of(device)
    roots = pcie_roots_of(device)
    if pci is not None and pci.value is None:  # printed in the standard form, or refused
        raise MalformedAttributeError(malformed(device, pci.source, pci.raw, "pciBusID"))
    if not roots and _STD_ROOT in device.attributes:
        problem = standard_problem(device, "pcieRoot")
        if problem is not None:
            raise MalformedAttributeError(problem)
    if numa.malformed and not numa.nodes:  # a NUMA attribute, and none gives a node
        source, raw = numa.malformed[0]
        raise MalformedAttributeError(malformed(device, source, raw, "numaNode"))
    # Replaced by the model's answers: the NUMA attributes named numaNode it read, and
    # every one that says "no NUMA affinity"; the PCI address it read, as the standard
    # name or the driver's own; the standard roots.
    dropped = {
        name for name, _ in numa.sources if name.rpartition(DOMAIN_SEPARATOR)[2] == "numaNode"
    }
    dropped.update(numa.unknown)
    dropped.update(name for name, _ in numa.malformed if name.endswith(_NUMA_SUFFIX))
    if pci is not None:
        dropped.update((_STD_PCI, device.driver + _PCI_SUFFIX))
    if roots:
        dropped.add(_STD_ROOT)
    kept = [entry for entry in found if entry[1] not in dropped]
    if numa.nodes:  # the lists as text: one column of the request each (see _SETS)
        kept.append((_STD + "numaNodes", _STD + "numaNodes", ",".join(map(str, numa.nodes))))
        kept.append((_STD + "numaNode", _STD + "numaNode", numa.nodes[0]))
    if pci is not None and pci.value is not None:
        kept.append((_STD_PCI, _STD_PCI, pci.value))
    if roots:
        kept.append((_STD + "pcieRoots", _STD + "pcieRoots", ",".join(roots)))
        if len(roots) == 1:
            kept.append((_STD_ROOT, _STD_ROOT, roots[0]))
    return kept


_PCI_SUFFIX: Final = DOMAIN_SEPARATOR + "pciBusID"


def _qualified_name(driver: str, key: str) -> tuple[str, bool]:
    """An attribute key of ``driver``'s device qualified, and whether the model answers it."""
    qualified = key if DOMAIN_SEPARATOR in key else driver + DOMAIN_SEPARATOR + key
    return qualified, qualified in _PLACEMENT_NAMES or qualified.endswith(_ANSWERED_SUFFIXES)


#: _qualified_name() of the attribute keys seen so far, by driver (devices share
#: them); forgotten when the drivers, or a driver's keys, grow past _QUALIFIED_NAMES_MAX.
_qualified_names: dict[str, dict[str, tuple[str, bool]]] = {}
_QUALIFIED_NAMES_MAX: Final = 256


_PLACEMENT_NAMES: Final = frozenset(
    name
    for name in (*NUMA_ATTRIBUTES, *PCI_BUS_ID_ATTRIBUTES, _STD_ROOT)
    if not name.startswith("{")  # the driver's own: by suffix (_qualified_name)
)
#: The request's list of every node (root) its devices are local to, and the
#: single one only when they all name the same one.
_SETS: Final = {_STD + "numaNodes": _STD + "numaNode", _STD + "pcieRoots": _STD_ROOT}
_NUMA_SUFFIX: Final = DOMAIN_SEPARATOR + "numaNode"
#: A driver's own numaNode and pciBusID are the model's to answer too.
_ANSWERED_SUFFIXES: Final = (_NUMA_SUFFIX, _PCI_SUFFIX)


def _entries(found: list[tuple[str, str, AttributeValue]], var_of: dict[str, str]) -> list[_Entry]:
    """A device's attribute variables in name order (two entries when two keys share a name)."""
    entries: list[_Entry] = []
    for key, qualified, value in found:  # a loop costs less than a comprehension for a few
        if type(value) is str:
            entries.append((var_of[qualified], key, value, False))
        else:
            entries.append((var_of[qualified], key, format_value(value), type(value) is tuple))
    entries.sort()
    return entries


def _attribute_variable_names(qualified_names: Iterable[str]) -> dict[str, str]:
    """Qualified attribute name -> the variable name part it gets in its request."""
    split: dict[str, tuple[str, str]] = {}
    short_count: dict[str, int] = {}
    for name in qualified_names:
        if name in split:  # one device can name an attribute twice
            continue
        domain, _, local = name.rpartition(DOMAIN_SEPARATOR)
        short = _snake_names.get(local)
        if short is None:
            short = _snake_name_cached(local)
        split[name] = (domain, short)
        short_count[short] = short_count.get(short, 0) + 1
    names: dict[str, str] = {}
    for name, (domain, short) in split.items():
        if (
            short
            and short_count[short] == 1
            and short not in _RESERVED
            and short[0] not in "0123456789"
        ):
            names[name] = short
        else:
            names[name] = env_name(domain) + "_" + short
    return names


#: snake_name() of the attribute names seen so far (a request's devices mostly
#: share them), emptied when it grows past _SNAKE_NAMES_MAX.
_snake_names: dict[str, str] = {}
_SNAKE_NAMES_MAX: Final = 4096


def _snake_name_cached(local: str) -> str:
    if len(_snake_names) >= _SNAKE_NAMES_MAX:
        _snake_names.clear()
    short = _snake_names[local] = snake_name(local)
    return short


def collect(
    inv: Inventory, *, prefix: str = DEFAULT_PREFIX
) -> tuple[dict[str, str], list[DRAMetadataError]]:
    """The variables of an inventory's requests, and the problems that kept some out.

    A request directory with a file that does not read or decode gets no
    variables at all (its device list would be incomplete); variables that two
    sources map to, and values holding a NUL, are left out. Each problem is one
    error; the variables that remain come back in output order.
    """
    result: dict[str, str] = {}
    problems = collect_into(inv, result.update, prefix=prefix)
    return result, problems


def collect_into(
    inv: Inventory, sink: Callable[[dict[str, str]], object], *, prefix: str = DEFAULT_PREFIX
) -> list[DRAMetadataError]:
    """:func:`collect`, handing the variables to ``sink`` a request at a time.

    ``sink`` gets the variables in output order, in one or more dicts; the
    problems come back as :func:`collect` returns them (files that did not read,
    then names two sources share, then NUL values). Two requests' names can only
    meet when one request's prefix starts the other's (``DRA_A_B_`` and
    ``DRA_A_B_0_``); without such a pair each request is checked on its own and
    forgotten before the next, so the memory held is one request's, not all of
    them; a request of more than ``_KEEP_DEVICES`` devices is checked a device at
    a time when its parts are independent. With such a pair, every request is
    checked together.
    """
    problems: list[DRAMetadataError] = []
    sources: list[tuple[str, str, DeviceMetadata]] = []
    requests = iter(inv.requests)
    seen: set[tuple[str, str, str]] = set()
    for file in inv.files:  # in walk order, so that problems come in that order too
        key = (file.kind, file.claim, file.request)
        if key in seen:
            continue
        seen.add(key)
        if not file.request:  # a claim directory that could not be read
            assert file.problem is not None
            problems.append(file.problem.error)
            continue
        mounted = next(requests)
        if mounted.problems or mounted.metadata is None:
            problems.append(mounted.problems[0].error)
            continue
        request_prefix = f"{prefix}{env_name(mounted.claim)}_{env_name(mounted.request)}_"
        source = claim_label(mounted.kind, mounted.claim, mounted.request)
        sources.append((request_prefix, source, mounted.metadata))
    prefixes = sorted(request_prefix for request_prefix, _, _ in sources)
    shared: list[DRAMetadataError] = []
    nul: list[DRAMetadataError] = []
    if any(later.startswith(earlier) for earlier, later in pairwise(prefixes)):
        every = [part for request in sources for part in _request_parts(*request)[1]]
        sink(_checked(every, shared, nul))
        return problems + shared + nul
    for request in sources:
        independent, parts = _request_parts(*request)
        if independent and _device_count(request[2]) > _KEEP_DEVICES:  # a part at a time
            for part in parts:
                sink(_checked([part], shared, nul))
        else:  # a request of few devices is held whole anyway (see _KEEP_DEVICES)
            sink(_checked(list(parts), shared, nul))
    return problems + shared + nul


def _device_count(md: DeviceMetadata) -> int:
    requests = md.requests
    if len(requests) == 1:
        return len(requests[0].devices)
    return sum(len(request.devices) for request in requests)


def _checked(
    parts: list[_Part],
    shared_problems: list[DRAMetadataError],
    nul_problems: list[DRAMetadataError],
) -> dict[str, str]:
    """Leave out colliding names (one error per pair of sources) and NUL values."""
    if len(parts) == 1:
        names, values = parts[0].names, parts[0].values
    else:
        names, values = [], []
        for part in parts:
            names += part.names
            values += part.values
    result = dict(zip(names, values, strict=True))
    if len(result) == len(names) and "\x00" not in "".join(values):
        return result  # the common case, found in C: every name once, no NUL
    candidates = [variable for part in parts for variable in part.variables()]
    result = {}
    shared: dict[str, list[Variable]] = {}  # names two or more sources map to
    nul = False
    for variable in candidates:
        name = variable.name
        if name in result or name in shared:
            shared.setdefault(name, []).append(variable)
        else:
            result[name] = variable.value
            nul = nul or "\x00" in variable.value
    if shared:
        for variable in candidates:  # the first source of each shared name
            if variable.name in shared and variable.name in result:
                shared[variable.name].insert(0, variable)
                del result[variable.name]
        _report_shared(shared, candidates, shared_problems)
    if nul:
        for variable in candidates:
            if "\x00" in variable.value and variable.name in result:
                del result[variable.name]
                nul_problems.append(
                    EnvError(
                        f"{variable.name}: the value of {variable.origin()} holds a NUL "
                        "character, which no environment variable can hold"
                    )
                )
    return result


def _report_shared(
    shared: dict[str, list[Variable]],
    candidates: list[Variable],
    problems: list[DRAMetadataError],
) -> None:
    """One message per pair of colliding sources: a whole request colliding is one line."""
    pairs: dict[tuple[str, str], list[str]] = {}
    firsts: dict[tuple[str, str], tuple[Variable, Variable]] = {}
    # In the order the names first came, as they would have been printed.
    names = dict.fromkeys(variable.name for variable in candidates if variable.name in shared)
    for name in names:
        same = shared[name]
        key = (same[0].origin(), same[1].origin())
        if same[0].source != same[1].source:
            key = (same[0].source, same[1].source)
        pairs.setdefault(key, []).append(name)
        firsts.setdefault(key, (same[0], same[1]))
    for key, names_of_pair in pairs.items():
        a, b = firsts[key]
        count = len(names_of_pair)
        more = f" (and {count - 1} more names they share)" if count > 1 else ""
        problems.append(
            EnvError(
                f"{names_of_pair[0]}: {a.origin()} and {b.origin()} map to the same name{more}"
            )
        )


def env_vars(
    *,
    root: RootArg = None,
    claim: str | None = None,
    pod_claim: str | None = None,
    request: str | None = None,
    driver: str | None = None,
    prefix: str = DEFAULT_PREFIX,
    max_size: int = DEFAULT_MAX_SIZE,
    profile: str | Iterable[str] | None = None,
) -> dict[str, str]:
    """The environment variables ``dra-metadata env`` prints, in the same order.

    With ``profile`` (``"cuda"``, or several: ``"cuda,nccl"`` or ``["cuda",
    "nccl"]``), the variables of those framework profiles instead (listed in the
    guide's *Topology, profiles and doctor* page, ``docs/topology.md``); an unknown
    name raises :class:`~dra_metadata.EnvError` naming the closest profile, and one
    that cannot be built raises it saying what is missing and what to do instead.

    Reads every request under ``root`` (default ``$DRA_METADATA_ROOT``, else the
    container directory), or those of the claim named ``claim``, of the claim
    made from a template that the pod spec calls ``pod_claim`` (as in
    :func:`watch`), of requests named ``request`` or of one ``driver``.
    The naming scheme is in the guide's *Environment variables* page
    (``docs/env.md``): ``DRA_<CLAIM>_<REQUEST>_...``. Symbolic links below the
    root are not followed.

    ``request`` is asked as every reader asks it (``gpu/low-memory`` when
    ``gpu/high-memory`` was allocated is the readers' not-found, naming it).
    Raises :class:`~dra_metadata.MetadataNotFoundError` when the root, or what
    was asked for, is not there (an empty root included: the one wording of
    every door), :class:`~dra_metadata.DecodeError` for a file
    that does not decode, and :class:`~dra_metadata.EnvError` when two sources
    map to one name or a value holds a NUL (the CLI prints the rest instead).

    >>> import dra_metadata as dm
    >>> env = dm.env_vars(root="examples/dra-device-attributes", pod_claim="gpu")
    >>> env["DRA_GPU_GPU_COUNT"], env["DRA_GPU_GPU_1_INDEX"]
    ('2', '1')
    >>> env["DRA_GPU_GPU_UUID"].split(",")[0]
    'GPU-8f6c2a4e-0b1d-4c55-9a1e-3d2b7c9e0f11'
    """
    # the walk and the inventory: only where a root is read (not --help)
    from ._inventory import mounted
    from ._select import ask

    if claim is not None and pod_claim is not None:
        raise ValueError("env_vars(): give claim or pod_claim, not both")
    if not isinstance(prefix, str) or not valid_prefix(prefix):
        raise ValueError(f"env_vars(): prefix {prefix!r} cannot start a variable name")
    question = ask(
        kind="claim" if claim is not None else "template" if pod_claim is not None else None,
        claim=claim if claim is not None else pod_claim,
        request=request,
        driver=driver,
    )
    if profile is not None:
        # the profiles load only when one is asked for
        from ._profiles import profile_names, profile_variables

        names = profile_names(profile)  # a misspelt name first, before any reading
        return profile_variables(mounted(question, root, max_size=max_size), names)
    found = mounted(question, root, max_size=max_size)
    variables, problems = collect(found, prefix=prefix)
    if problems:
        raise problems[0]
    return variables
