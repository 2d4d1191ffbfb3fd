"""``dra-metadata get``: one attribute (or network field) of every device of a request."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from .._model import NETWORK_FIELDS
from ._common import (
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
used, so pciBusID, pcieRoot and numaNode work as env names them), or one of the
network fields interfaceName, ips and hardwareAddress (also networkData.ips);
an attribute that has one of those names is reached by its qualified name.
Integers print in decimal, booleans as true/false, lists (ints, strings, ips)
comma-joined on one line. A value that holds a newline spans lines: use -0 or
--json when values may hold one.

When a device lacks the attribute (or the request has no devices) nothing is
printed and the exit code is 1, with the reason on stderr: every device must
have it. --driver narrows the request to one driver's devices.
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
    missing = [device for device, value in zip(devices, values, strict=True) if value is None]
    if missing:
        first = missing[0]
        fail(
            f"{args.name!r} is absent on {len(missing)} of {len(devices)} devices of {where} "
            f"(first: {first.driver}/{first.pool}/{first.name})"
        )
        return EXIT_FALSE
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
