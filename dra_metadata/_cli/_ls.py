"""``dra-metadata ls``: every mounted metadata file, one row each."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from ._common import (
    EXIT_OK,
    Commands,
    add_command,
    add_format,
    add_selection,
    exit_code_for,
    fail,
    scan_selection,
    write_stdout,
)

if TYPE_CHECKING:
    from .._errors import DRAMetadataError
    from .._scan import Entry

__all__ = ["register", "row", "table"]

_DESCRIPTION: Final = """\
List every metadata file under the root, found by the documented layout only
(resourceclaims/CLAIM/REQUEST/DRIVER-metadata.json and
resourceclaimtemplates/POD_CLAIM/REQUEST/DRIVER-metadata.json; symbolic links
below the root are not followed), sorted: one row per file with its claim kind,
claim, request, driver, decoded API version, generation, number of devices and
status. A file that does not decode, or cannot be read, keeps its row with a
status other than "ok" and its error on stderr; the exit code is then the
worst such file's (65 not decodable, 66 unreadable). An empty root lists
nothing and exits 0; a missing root exits 66.
"""

_HEADER: Final = (
    "KIND",
    "CLAIM",
    "REQUEST",
    "DRIVER",
    "VERSION",
    "GENERATION",
    "DEVICES",
    "STATUS",
)
#: Columns aligned to the right.
_NUMERIC: Final = frozenset({5, 6})


def register(commands: Commands) -> None:
    """Add ``ls`` to ``commands``."""
    parser = add_command(
        commands, "ls", summary="list every mounted metadata file", description=_DESCRIPTION
    )
    add_selection(parser, required=False)
    add_format(
        parser,
        ("table", "json"),
        help="table: one line per file under a header (default); json: an array of objects",
    )
    parser.set_defaults(handler=_ls)


def _ls(args: argparse.Namespace) -> int:

    entries = scan_selection(args)
    rows = [row(entry) for entry in entries]
    if args.format == "json":
        import msgspec

        write_stdout(msgspec.json.format(msgspec.json.encode(rows), indent=2) + b"\n")
    elif rows:
        write_stdout(table(rows).encode("utf-8"))
    worst = EXIT_OK
    for entry in entries:
        if entry.error is not None:
            fail(str(entry.error))
            worst = max(worst, exit_code_for(entry.error))
    return worst


def row(entry: Entry) -> dict[str, object]:
    """The JSON object of one entry; the table shows a subset of it."""
    md = entry.metadata
    meta = None if md is None else md.metadata
    return {
        "kind": entry.kind,
        "claim": printable(entry.claim),
        "request": printable(entry.request),
        "driver": printable(entry.driver),
        "path": printable(entry.path),
        "status": status(entry.error),
        "error": None if entry.error is None else printable(str(entry.error)),
        "apiVersion": None if md is None else md.api_version,
        "generation": None if meta is None else meta.generation,
        "devices": None if md is None else sum(len(r.devices) for r in md.requests),
        "requests": [] if md is None else [r.name for r in md.requests],
        "podClaimName": None if md is None else md.pod_claim_name,
        "claimNamespace": None if meta is None else meta.namespace,
        "claimName": None if meta is None else meta.name,
        "claimUID": None if meta is None else meta.uid,
    }


def status(error: DRAMetadataError | None) -> str:
    """One word for the table: ``ok``, ``undecodable``, ``too-large``, ``symlink``..."""
    from .._errors import DecodeError, FileTooLargeError, MetadataNotFoundError, SymlinkError

    if error is None:
        return "ok"
    if isinstance(error, DecodeError):
        return "undecodable"
    if isinstance(error, FileTooLargeError):
        return "too-large"
    if isinstance(error, SymlinkError):
        return "symlink"
    if isinstance(error, MetadataNotFoundError):
        return "missing"
    return "unreadable"


def table(rows: list[dict[str, object]]) -> str:
    """Rows as aligned columns under a header; ``-`` where there is nothing to show."""
    cells = [_HEADER]
    for r in rows:
        version = r["apiVersion"]
        cells.append(
            (
                str(r["kind"]),
                str(r["claim"]) or "-",
                str(r["request"]) or "-",
                str(r["driver"]) or "-",
                "-" if not isinstance(version, str) else version.rpartition("/")[2],
                "-" if r["generation"] is None else str(r["generation"]),
                "-" if r["devices"] is None else str(r["devices"]),
                str(r["status"]),
            )
        )
    widths = [max(len(line[i]) for line in cells) for i in range(len(_HEADER))]
    lines = []
    for line in cells:
        parts = [
            cell.rjust(widths[i]) if i in _NUMERIC else cell.ljust(widths[i])
            for i, cell in enumerate(line)
        ]
        lines.append("  ".join(parts).rstrip() + "\n")
    return "".join(lines)


def printable(text: str) -> str:
    r"""``text`` with what would break a line or a terminal escaped.

    Bytes that are not UTF-8 (kept by Python as surrogates) become ``\xNN``,
    other unprintable characters their Python escape.

    >>> printable("gpu"), printable("a\nb"), printable("\udcff")
    ('gpu', 'a\\nb', '\\xff')
    """
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if "\udc80" <= ch <= "\udcff":
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(ascii(ch)[1:-1])
    return "".join(out)
