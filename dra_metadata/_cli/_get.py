"""``dra-metadata get``: one attribute (or network field) of every device of a request."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from .._model import NETWORK_FIELDS
from . import (
    EXIT_FALSE,
    EXIT_OK,
    EXIT_UNDECODABLE,
    Commands,
    add_command,
    add_format,
    add_selection,
    fail,
    selected_claim,
    write_stdout,
)

if TYPE_CHECKING:
    from .._model import AttributeValue, Device

__all__ = ["answer", "model_answer", "register", "value_of"]

_DESCRIPTION: Final = """\
Print the value of one attribute, or network field, for every device of the
request, one per line, in merged device order (files in byte order of their
names, as the library merges them).

NAME is an attribute name, qualified (resource.kubernetes.io/pciBusID) or not
(uuid), or one of the network fields interfaceName, ips and hardwareAddress
(also networkData.ips); an attribute that has one of those names is reached by
its qualified name. A name resolves as everywhere in dra-metadata: the key as
given, else the same attribute in the driver's domain (uuid is
<driver>/uuid), else the Kubernetes standard attribute of that name, and for a
standard attribute the names drivers publish for it today (NVIDIA's pcieBusID).
Integers print in decimal, booleans as true/false, lists (ints, strings, ips)
comma-joined on one line. Values print as they are to a pipe or a file (a value
that holds a newline spans lines: use -0 or --json when values may hold one); to
a terminal, control characters (ESC, a newline) print escaped (\\x1b, \\n), as
every command prints them there.

pciBusID, numaNode, numaNodes, pcieRoot and pcieRoots (unqualified or in the
resource.kubernetes.io domain) print the model's answer, the one the Python
properties, env, topology and doctor give: pciBusID in the standard form
(0000:18:00.0), with a note on stderr when it came from a driver's own name for
it; numaNode the physical NUMA node (a list's first element, KEP-6072),
numaNodes every node, the physical one first; pcieRoots every root, pcieRoot
only when there is one. A negative NUMA node means "no NUMA affinity": no node.
A value not in its standard form is an error naming the device and attribute
(exit 65); show prints it as written.

When a device lacks the attribute (or the request has no devices) nothing is
printed and the exit code is 1, with the reason on stderr: every device must
have it. --driver narrows the request to one driver's devices. A request asked
for by its base name (gpu) answers whatever subrequest was allocated, with a
note on stderr naming it (gpu/high-memory).
"""


def register(commands: Commands) -> None:
    """Add ``get`` to ``commands``."""
    parser = add_command(
        commands,
        "get",
        summary="print one attribute of every device of a request, one per line",
        description=_DESCRIPTION,
    )
    add_selection(parser, required=True, request_required=False)
    add_format(
        parser,
        ("lines", "json", "null"),
        help="lines: one value per line (default); json: one array of the typed values; "
        "null: each value ended by a NUL character",
        shorthands=((("-0", "--null"), "null", "--format null"),),
    )
    parser.add_argument("name", metavar="NAME", help="attribute or network field name")
    parser.set_defaults(handler=_get)


def model_answer(device: Device, standard: str, name: str) -> tuple[AttributeValue | None, str]:
    """The model's answer to a standard name and a note on where it came from.

    ``standard`` is what :func:`~dra_metadata._model.standard_name` made of
    ``name``; the attribute is looked up as ``name`` is (a qualified standard name
    tries the standard attribute before the driver's own). The note is empty
    when the answer is the standard attribute as written, or says which alias it
    came from, or why there is no answer. A value not in its standard form raises
    :class:`~dra_metadata.MalformedAttributeError`.

    >>> import dra_metadata as dm
    >>> gpu = dm.Device("gpu.nvidia.com", "p", "gpu-0",
    ...                 {"pcieBusID": dm.DeviceAttribute(string="00000000:18:00.0")})
    >>> model_answer(gpu, "pciBusID", "pciBusID")
    ('0000:18:00.0', 'from gpu.nvidia.com/pcieBusID, in the standard form')
    """
    from .._errors import MalformedAttributeError
    from .._model import (
        LIST_QUESTIONS,
        malformed,
        no_affinity,
        numa_of,
        pci_address_of,
        standard_asked,
        standard_problem,
    )

    asked = standard_asked(name, standard)  # numaNodes asks numaNode
    whole = name.rpartition("/")[2] in LIST_QUESTIONS
    if standard == "pciBusID":
        found = pci_address_of(device, asked)
        if found is None:
            return None, ""
        if found.value is None:  # looked up once: the model's one message for it
            raise MalformedAttributeError(malformed(device, found.source, found.raw, standard))
        if found.source == _STANDARD_PCI and found.value == found.raw:
            return found.value, ""
        return found.value, f"from {found.source}, in the standard form"
    if standard == "numaNode":
        numa = numa_of(device, asked)
        nodes, source = numa.nodes, numa.source
        if not nodes:
            if numa.unknown:
                return None, no_affinity(numa.unknown[0])
            return None, ""
        note = "" if source == _STANDARD_NUMA else f"from {source}"
        if whole:
            return nodes, note
        if len(nodes) > 1:
            listed = ",".join(map(str, nodes))
            note = (note + "; " if note else "") + (
                f"the physical node of {listed} (numaNodes prints them all)"
            )
        return nodes[0], note
    problem = standard_problem(device, asked)  # pcieRoot
    if problem is not None:
        raise MalformedAttributeError(problem)
    roots = device.pcie_roots
    if whole:
        return (roots or None), ""
    if len(roots) > 1:
        return None, f"PCIe roots {','.join(roots)}: a list has no first root; ask pcieRoots"
    return (roots[0] if roots else None), ""


_STANDARD_PCI: Final = "resource.kubernetes.io/pciBusID"
_STANDARD_NUMA: Final = "resource.kubernetes.io/numaNode"


def answer(device: Device, name: str) -> tuple[AttributeValue | None, str]:
    """What ``get NAME`` prints for ``device`` (``None``: it has none) and a note for stderr.

    Network fields by their wire names, the standard attributes by the model's
    answer (:func:`model_answer`), any other name by :meth:`Device.attribute`.

    >>> import dra_metadata as dm
    >>> nic = dm.Device("sriov.example.com", "p", "vf-0",
    ...                 network_data=dm.NetworkDeviceData(ips=("10.0.0.5/24",)))
    >>> answer(nic, "ips"), answer(nic, "networkData.ips"), answer(nic, "interfaceName")
    ((('10.0.0.5/24',), ''), (('10.0.0.5/24',), ''), (None, ''))
    """
    from .._model import standard_name

    field = name.removeprefix("networkData.")
    if field in NETWORK_FIELDS and (field == name or name.startswith("networkData.")):
        network = device.network_data
        if network is None:
            return None, ""
        value: str | tuple[str, ...] = getattr(network, NETWORK_FIELDS[field])
        return value or None, ""
    standard = standard_name(name)
    if standard is not None:
        return model_answer(device, standard, name)
    return device.attribute(name), ""


def value_of(device: Device, name: str) -> AttributeValue | None:
    """The value ``get NAME`` prints for ``device``, or ``None`` when it has none."""
    return answer(device, name)[0]


def _get(args: argparse.Namespace) -> int:
    from .._claims import read_request
    from .._env import format_value
    from .._paths import claim_label

    kind, claim = selected_claim(args)
    assert kind is not None, "the parser requires --claim or --template-claim"
    assert claim is not None
    md = read_request(kind, claim, args.request, driver=args.driver, root=args.root)
    where = claim_label(kind, claim, args.request)
    devices = [device for _, device in md.devices()]
    if not devices:
        fail(f"{where} has no devices")
        return EXIT_FALSE
    answers = [answer(device, args.name) for device in devices]
    values = [value for value, _ in answers]
    notes = [note for _, note in answers]
    missing = [i for i, value in enumerate(values) if value is None]
    if missing:
        first = devices[missing[0]]
        why = notes[missing[0]]
        hint = ""
        if not why:
            from .._model import standard_name
            from .._nearby import absent_attribute

            said = absent_attribute(first, args.name, also=tuple(NETWORK_FIELDS))
            if standard_name(args.name) is not None:
                why = said
            elif said and all(value is None for value in values):
                hint = "; " + said
        fail(
            f"{args.name!r} is absent on {len(missing)} of {len(devices)} devices of {where} "
            f"(first: {first.driver}/{first.pool}/{first.name}"
            + (f": {why})" if why else ")")
            + hint
        )
        return EXIT_FALSE
    for note in dict.fromkeys(note for note in notes if note):
        fail(f"note: {args.name} {note}")
    if args.request is not None and "/" not in args.request:
        held = [request.name for request in md.requests if request.name != args.request]
        if held:  # the base request answers what was allocated: say which, as show and env do
            fail(f"note: request {args.request!r} was allocated as {', '.join(held)}")
    if args.format == "json":
        import msgspec

        write_stdout(msgspec.json.encode(values) + b"\n")
        return EXIT_OK
    end = "\0" if args.format == "null" else "\n"
    texts = [format_value(value) for value in values if value is not None]
    if end == "\0":
        for device, text in zip(devices, texts, strict=True):
            if "\0" in text:  # it would print as two records
                fail(
                    f"{args.name!r} of {device.driver}/{device.pool}/{device.name} in {where} "
                    "holds a NUL character, which -0 cannot delimit: use --json"
                )
                return EXIT_UNDECODABLE
    if _to_terminal() and not all(text.isprintable() for text in texts):
        from .._text import one_line  # ESC, OSC, newlines: shown, never obeyed

        texts = [one_line(text) for text in texts]
    write_stdout("".join(text + end for text in texts).encode("utf-8", "surrogateescape"))
    return EXIT_OK


def _to_terminal() -> bool:
    """Whether stdout is a terminal: values are escaped there, and raw on a pipe or file."""
    import sys

    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except (OSError, ValueError):
        return False
