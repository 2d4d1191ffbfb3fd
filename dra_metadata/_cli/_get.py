"""``dra-metadata get``: one attribute (or network field) of every device of a request."""

from __future__ import annotations

import argparse
import sys
from typing import Final

import msgspec

from .._errors import MalformedAttributeError
from .._paths import claim_label
from .._standard import answer, standard_name
from .._values import NETWORK_FIELDS
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

__all__ = ["register"]

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
resource.kubernetes.io domain) print the model's answer, the one attribute(),
require(), env, topology and doctor give: pciBusID in the standard form
(0000:18:00.0), with a note on stderr when it came from a driver's own name for
it; numaNode the physical NUMA node (a list's first element, KEP-6072),
numaNodes every node, the physical one first; pcieRoots every root, pcieRoot
only when there is one (a set of roots has no first one, KEP-5491). A negative
NUMA node means "no NUMA affinity": no node. A value the standard does not
define (a pciBusID that is no PCI address, a numaNode that is a string) is an
error naming the device and attribute (exit 65); show prints it as written.

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


def _get(args: argparse.Namespace) -> int:
    # Here, not at the top: --help and completion build every parser without them.
    from .._claims import read_request
    from .._envtext import format_value
    from .._nearby import absent_attribute

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
    values = [found.value for found in answers]
    notes = [found.note for found in answers]
    for found in answers:
        if found.malformed:  # the model's one message for it (exit 65)
            raise MalformedAttributeError(found.why)
    missing = [i for i, value in enumerate(values) if value is None]
    if missing:
        first = devices[missing[0]]
        why = answers[missing[0]].why
        hint = ""
        if not why:
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
        # only for a value a terminal would obey (ESC, OSC, newlines): shown, never obeyed
        from .._text import one_line

        texts = [one_line(text) for text in texts]
    write_stdout("".join(text + end for text in texts).encode("utf-8", "surrogateescape"))
    return EXIT_OK


def _to_terminal() -> bool:
    """Whether stdout is a terminal: values are escaped there, and raw on a pipe or file."""

    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except (OSError, ValueError):
        return False
