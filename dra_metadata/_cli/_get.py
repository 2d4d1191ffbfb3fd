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

__all__ = ["register", "value_of"]

_DESCRIPTION: Final = """\
Print the value of one attribute, or network field, for every device of the
request, one per line, in merged device order (files in byte order of their
names, as the library merges them).

NAME is an attribute name, qualified (resource.kubernetes.io/pciBusID) or not
(uuid: an unqualified name lives in the device's driver domain; when the driver
has no attribute of that name, the Kubernetes standard attribute of that name is
used), or one of the network fields interfaceName, ips and hardwareAddress (also
networkData.ips); an attribute that has one of those names is reached by its
qualified name.
Integers print in decimal, booleans as true/false, lists (ints, strings, ips)
comma-joined on one line. A value that holds a newline spans lines: use -0 or
--json when values may hold one.

pciBusID, numaNode, numaNodes, pcieRoot and pcieRoots (unqualified, when the
driver has no attribute of that name) print the model's answer, the one the
Python properties, env, topology and doctor give: pciBusID in the standard
form (0000:18:00.0), also from a driver's own name for it (NVIDIA's
pcieBusID), with a note on stderr saying which attribute it came from;
numaNodes every NUMA node, numaNode only when there is exactly one. A
qualified name prints the attribute as written.

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


#: Unqualified names ``get`` answers from the model (see ``dra_metadata._model``).
ANSWERED: Final = ("pciBusID", "numaNode", "numaNodes", "pcieRoot", "pcieRoots")


def model_answer(device: Device, name: str) -> tuple[AttributeValue | None, str]:
    """The model's answer to ``name`` (one of :data:`ANSWERED`) and a note on where it came from.

    The note is empty when the answer is the standard attribute as written, or
    says which alias it came from, or why there is no answer.

    >>> import dra_metadata as dm
    >>> gpu = dm.Device("gpu.nvidia.com", "p", "gpu-0",
    ...                 {"pcieBusID": dm.DeviceAttribute(string="00000000:18:00.0")})
    >>> model_answer(gpu, "pciBusID")
    ('0000:18:00.0', 'from gpu.nvidia.com/pcieBusID, in the standard form')
    """
    from .._model import PCI_BUS_ID_ATTRIBUTES, pci_address_of

    if name == "pciBusID":
        found = pci_address_of(device)
        if found is None:
            return None, ""
        if found.value is None:
            return None, f"{found.source} holds {found.raw!r}, which is no PCI address"
        if found.source == PCI_BUS_ID_ATTRIBUTES[0] and found.value == found.raw:
            return found.value, ""
        return found.value, f"from {found.source}, in the standard form"
    if name in ("numaNode", "numaNodes"):
        nodes, source = device.numa_nodes, device.numa_source
        note = "" if source is None or source.endswith("/numaNode") else f"from {source}"
        if name == "numaNodes":
            return (nodes or None), note
        if len(nodes) > 1:
            return None, f"NUMA nodes {','.join(map(str, nodes))} ({source}): ask numaNodes"
        return (nodes[0] if nodes else None), note
    roots = device.pcie_roots
    if name == "pcieRoots":
        return (roots or None), ""
    if len(roots) > 1:
        return None, f"PCIe roots {','.join(roots)}: ask pcieRoots"
    return (roots[0] if roots else None), ""


def value_of(device: Device, name: str) -> AttributeValue | None:
    """The value ``get NAME`` prints for ``device``, or ``None`` when it has none.

    >>> import dra_metadata as dm
    >>> nic = dm.Device("sriov.example.com", "p", "vf-0",
    ...                 network_data=dm.NetworkDeviceData(ips=("10.0.0.5/24",)))
    >>> value_of(nic, "ips"), value_of(nic, "networkData.ips"), value_of(nic, "interfaceName")
    (('10.0.0.5/24',), ('10.0.0.5/24',), None)
    """
    field = name.removeprefix("networkData.")
    if field in NETWORK_FIELDS and (field == name or name.startswith("networkData.")):
        network = device.network_data
        if network is None:
            return None
        value: str | tuple[str, ...] = getattr(network, NETWORK_FIELDS[field])
        return value or None
    if name in ANSWERED and device.find_attribute(name) is None:
        return model_answer(device, name)[0]
    return device.attribute(name, standard=True)


def _get(args: argparse.Namespace) -> int:
    from .._claims import read_request
    from .._env import format_value, source_label

    kind, claim = selected_claim(args)
    assert kind is not None, "the parser requires --claim or --template-claim"
    assert claim is not None
    md = read_request(kind, claim, args.request, driver=args.driver, root=args.root)
    where = source_label(kind, claim, args.request)
    devices = [device for _, device in md.devices()]
    if not devices:
        fail(f"{where} has no devices")
        return EXIT_FALSE
    values = [value_of(device, args.name) for device in devices]
    notes = [
        model_answer(device, args.name)[1]
        if args.name in ANSWERED and device.find_attribute(args.name) is None
        else ""
        for device in devices
    ]
    missing = [i for i, value in enumerate(values) if value is None]
    if missing:
        first = devices[missing[0]]
        why = notes[missing[0]]
        fail(
            f"{args.name!r} is absent on {len(missing)} of {len(devices)} devices of {where} "
            f"(first: {first.driver}/{first.pool}/{first.name}" + (f": {why})" if why else ")")
        )
        return EXIT_UNDECODABLE if "no PCI address" in why else EXIT_FALSE
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
    write_stdout("".join(text + end for text in texts).encode("utf-8", "surrogateescape"))
    return EXIT_OK
