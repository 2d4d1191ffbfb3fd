"""``dra-metadata ls``: every mounted metadata file, one row each."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

import msgspec

from .._errors import MetadataNotFoundError
from .._text import one_line
from . import (
    EXIT_OK,
    Commands,
    add_command,
    add_format,
    add_selection,
    exit_code_for,
    fail,
    json_text,
    selected_inventory,
    write_stdout,
)

if TYPE_CHECKING:
    from .._select import MountedFile

__all__ = ["register", "row", "table"]

_DESCRIPTION: Final = """\
List every metadata file under the root, found by the documented layout only
(resourceclaims/CLAIM/REQUEST/DRIVER-metadata.json and
resourceclaimtemplates/POD_CLAIM/REQUEST/DRIVER-metadata.json; symbolic links
below the root are not followed), sorted: one row per file with its claim kind,
claim, request, driver, decoded API version, generation, number of devices and
status. A file that does not decode, or cannot be read, keeps its row with a
status other than "ok" and its error on stderr; the exit code is then the
worst such file's (65 not decodable, 66 unreadable). A root with nothing in it,
or a missing one, prints the header, says so on stderr and exits 66, as every
command does.
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

    try:
        inv = selected_inventory(args)
    except MetadataNotFoundError as err:
        _write_rows([], args.format)  # the header still says what the columns would be
        fail(str(err))
        return exit_code_for(err)
    _write_rows([row(file) for file in inv.files], args.format)
    worst = EXIT_OK
    for problem in inv.problems:
        fail(problem.message)
        worst = max(worst, exit_code_for(problem.error))
    return worst


def _write_rows(rows: list[dict[str, object]], form: str) -> None:
    if form == "json":
        write_stdout(msgspec.json.format(msgspec.json.encode(rows), indent=2) + b"\n")
    else:
        write_stdout(table(rows).encode("utf-8"))


def row(file: MountedFile) -> dict[str, object]:
    """The JSON object of one file (or place of the layout); the table shows a subset of it."""
    md = file.metadata
    meta = None if md is None else md.metadata
    problem = file.problem
    return {
        "kind": file.kind,
        "claim": json_text(file.claim),
        "request": json_text(file.request),
        "driver": json_text(file.driver),
        "path": json_text(file.path),
        "status": "ok" if problem is None else problem.status,
        "error": None if problem is None else one_line(problem.message),
        "apiVersion": None if md is None else md.api_version,
        "generation": None if meta is None else meta.generation,
        "devices": None if md is None else sum(len(r.devices) for r in md.requests),
        "requests": [] if md is None else [r.name for r in md.requests],
        "podClaimName": None if md is None else md.pod_claim_name,
        "claimNamespace": None if meta is None else meta.namespace,
        "claimName": None if meta is None else meta.name,
        "claimUID": None if meta is None else meta.uid,
    }


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
