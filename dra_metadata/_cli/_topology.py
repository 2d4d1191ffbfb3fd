"""``dra-metadata topology``: where the pod's devices sit, as a tree or a matrix."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Final

import msgspec

from .._standard import DEVICE_KINDS
from . import (
    EXIT_OK,
    Commands,
    add_command,
    add_format,
    add_selection,
    exit_code_for,
    fail,
    selected_inventory,
    terminal_width,
    write_stdout,
)

if TYPE_CHECKING:
    from .._topology import Topology

__all__ = ["json_bytes", "output_width", "register", "write_json"]


_DESCRIPTION: Final = """\
Show every mounted device (across claims, requests and drivers, or the ones
--claim, --template-claim, --request and --driver select) by where it sits:
NUMA nodes > PCIe roots > devices. NUMA nodes come from the standard
resource.kubernetes.io/numaNode or the names drivers publish today
(dra.cpu/numaNodeID, dra.cpu/numaNode, dra.net/numaNode, dra.memory/numaNode,
a numaNode in the driver's own domain, gpu.nvidia.com/numa), PCIe roots from
the standard pcieRoot, lists kept whole; attributes that disagree, and a
device listed twice, are reported on stderr.

Each device gets a kind (gpu, nic, cpu, memory, other): network data means
nic, then known drivers (gpu.nvidia.com, gpu.amd.com, gpu.intel.com, dra.cpu,
dra.net, the SR-IOV network driver, dra.memory), drivers with a gpu label
(gpu.*, vfio.gpu.*), then dra.net/ifName, dra.cpu/cpuID, and a uuid with a
productName (a GPU, pass-through ones too); --kind DRIVER=KIND overrides.
CPUs of one request with the same placement share a line.

On a terminal, lines longer than it end in "…"; written anywhere else (a pipe,
a file, kubectl logs) every line is whole.

--matrix prints device x device affinity instead: ROOT a shared PCIe root,
NUMA a shared NUMA node (lists intersect), SOCK same socket (where the
metadata says so), SYS different, ? not in the metadata. --json prints
devices, NUMA nodes, PCIe roots, the affinity of every pair and the problems.

A missing or empty root exits 66, as every command does; a file that does not
decode is reported on stderr (its devices are left out) and exits 65.
"""


def _kind(text: str) -> tuple[str, str]:
    driver, sep, kind = text.rpartition("=")

    if not sep or not driver or kind not in DEVICE_KINDS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected DRIVER=KIND, KIND one of {', '.join(DEVICE_KINDS)}"
        )
    return driver, kind


def register(commands: Commands) -> None:
    """Add ``topology`` to ``commands``."""
    parser = add_command(
        commands,
        "topology",
        summary="show devices by NUMA node and PCIe root, or their affinity matrix",
        description=_DESCRIPTION,
    )
    add_selection(parser, required=False)
    parser.add_argument(
        "--matrix", action="store_true", help="device x device affinity, with a legend"
    )
    parser.add_argument(
        "--kind",
        type=_kind,
        action="append",
        default=[],
        metavar="DRIVER=KIND",
        help="treat DRIVER's devices as KIND (repeatable)",
    )
    add_format(parser, ("text", "json"), help="text: the tree or matrix (default); json")
    parser.set_defaults(handler=_topology)


def _utf8(value: object) -> object:
    """``value`` with every string valid UTF-8: name bytes that were not become ``\\xNN``."""
    if isinstance(value, str):
        if value.isascii():
            return value
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {_utf8(k): _utf8(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_utf8(item) for item in value]
    return value


def json_bytes(value: object) -> bytes:
    """``value`` as indented JSON and a newline, names that are not UTF-8 escaped."""

    return msgspec.json.format(msgspec.json.encode(_utf8(value)), indent=2) + b"\n"


def output_width() -> int:
    """Columns to cut lines at: the terminal's when stdout is one, else no cut at all.

    A pipe, a file or ``kubectl logs`` gets every line whole, whatever
    ``$COLUMNS`` says; on a terminal, lines longer than it end in ``…``.
    """

    try:
        terminal = sys.stdout is not None and sys.stdout.isatty()
    except (OSError, ValueError):
        terminal = False
    return terminal_width() if terminal else sys.maxsize


def _indented(value: object, depth: int) -> bytes:
    """``value`` as JSON indented as :func:`json_bytes` would at ``depth`` levels in."""

    text = msgspec.json.format(msgspec.json.encode(value), indent=2)
    return text.replace(b"\n", b"\n" + b"  " * depth)  # JSON text holds no raw newline


def write_json(topo: Topology) -> None:
    """``topo.to_dict()`` as :func:`json_bytes` prints it, written one affinity row at a time.

    The same bytes, in O(n) memory: at 10,000 devices the affinity of every pair
    is 10^8 entries, which one object would not hold; rows are kept for the last
    :data:`~dra_metadata._topology.ROWS_KEPT` placement classes only.
    Labels and levels are ASCII, so rows skip the UTF-8 walk.
    """
    # loaded when the command runs: --help and completion build every parser without it
    from .._topology import ROWS_KEPT

    head = topo._head()
    write_stdout(b"{\n")
    for key, value in head.items():
        write_stdout(b'  "' + key.encode() + b'": ' + _indented(_utf8(value), 1) + b",\n")
    write_stdout(b'  "affinity": ')
    table = topo._affinity_table()
    labels = [device.label.encode() for device in topo.devices]
    keys = [b'\n      "' + label + b'": "' for label in labels]
    bodies: dict[int, tuple[bytes, list[int]]] = {}  # the last ROWS_KEPT classes' rows
    for index, number in enumerate(table.class_of):
        body = bodies.pop(number, None)
        if body is None:  # one row of this placement class, with where each entry starts
            levels = [level.encode() for level in table.row(number)]
            parts = [
                key + levels[other] + b'",' for key, other in zip(keys, table.class_of, strict=True)
            ]
            starts = [0]
            for part in parts:
                starts.append(starts[-1] + len(part))
            body = (b"".join(parts)[:-1], starts)
            if len(bodies) >= ROWS_KEPT:
                del bodies[next(iter(bodies))]  # the least recently used
        bodies[number] = body
        text, starts = body
        write_stdout(
            (b"{" if index == 0 else b",")
            + b'\n    "'
            + labels[index]
            + b'": {'
            + text[: starts[index]]
            + keys[index]
            + b'same"'
            + text[starts[index + 1] - 1 :]  # the comma after the entry, if any
            + b"\n    }"
        )
    write_stdout(b"{},\n" if not labels else b"\n  },\n")
    problems = [problem.message for problem in topo.problems]
    write_stdout(b'  "problems": ' + _indented(_utf8(problems), 1) + b"\n}\n")


def _topology(args: argparse.Namespace) -> int:
    # loaded when the command runs: --help and completion build every parser without it
    from .._inventory import Inventory
    from .._topology import build

    inv: Inventory = selected_inventory(args)
    topo = build(inv.devices(), kinds=dict(args.kind))
    if args.format == "json":
        write_json(topo)
    else:
        width = output_width()
        if args.matrix:  # a line at a time: n devices are n² cells
            for line in topo.matrix_lines(width):
                write_stdout(line.encode("utf-8", "surrogateescape"))
        else:
            write_stdout(topo.tree(width).encode("utf-8", "surrogateescape"))
    worst = EXIT_OK
    if not topo.devices:
        fail(f"no device could be read under {inv.root}")
    for problem in topo.problems:
        fail(problem.message)
    for found in inv.problems:
        fail(found.message)
        worst = max(worst, exit_code_for(found.error))
    return worst
