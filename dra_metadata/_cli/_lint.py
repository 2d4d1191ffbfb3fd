"""``dra-metadata lint``: interoperability problems in files, for driver authors."""

from __future__ import annotations

import argparse

from .._errors import DecodeError, DRAMetadataError
from ._common import EXIT_FALSE, EXIT_OK, Commands, add_command, exit_code_for, fail, write_text

__all__ = ["register"]


def register(commands: Commands) -> None:
    """Add ``lint`` to ``commands``."""
    parser = add_command(
        commands,
        "lint",
        summary="find interoperability problems that validation does not catch",
        description=(
            "Print each FILE's interoperability problems as 'FILE: CODE field: message'\n"
            "(wrong keys, wrong domains, version order, path and content that disagree).\n"
            "Give files by their container path (.../resourceclaims/<claim>/<request>/\n"
            "<driver>-metadata.json) or their kubelet plugin path (.../<driver>/\n"
            "dra-device-metadata/<namespace>_<claim>/<request>/metadata.json) so the\n"
            "path rules can run."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.set_defaults(handler=_lint)


def _lint(args: argparse.Namespace) -> int:
    """Lint every file; the exit code is the highest any file earned."""
    from .._lint import lint
    from .._read import read_bytes

    worst = EXIT_OK
    for path in args.files:
        try:
            data = read_bytes(path)
            try:
                problems = lint(data, path=path)
            except DecodeError as err:
                raise DecodeError(f"{path}: {err}", path=path) from None
        except DRAMetadataError as err:
            fail(str(err))
            worst = max(worst, exit_code_for(err))
            continue
        for problem in problems:
            write_text(f"{path}: {problem}\n")
        if problems:
            worst = max(worst, EXIT_FALSE)
        else:
            write_text(f"{path}: no problems\n")
    return worst
