"""``dra-metadata lint``: interoperability problems in files, for driver authors."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .._errors import DecodeError
from .._read import read_bytes, read_found
from . import Commands, add_command, add_files, check_each, mounted_files

if TYPE_CHECKING:
    from .._lint import LintProblem

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
            "path rules can run. Without a FILE, every metadata file mounted under the\n"
            "root (--root, $DRA_METADATA_ROOT, else the container directory)."
        ),
    )
    add_files(parser)
    parser.set_defaults(handler=_lint)


def _lint(args: argparse.Namespace) -> int:
    """Lint every file; the exit code is the highest any file earned."""
    # loaded when the command runs: --help and completion build every parser without it
    from .._lint import lint

    named = set(args.files)
    paths, worst = (args.files, 0) if args.files else mounted_files(args)

    def check(path: str) -> tuple[list[LintProblem], str]:
        # A FILE the user named may be a link; one found below a directory is not followed.
        data = read_bytes(path) if path in named else read_found(path)
        try:
            return lint(data, path=path), "no problems"
        except DecodeError as err:
            raise DecodeError(f"{path}: {err}", path=path) from None

    return check_each(paths, check, worst=worst)
