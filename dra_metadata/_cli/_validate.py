"""``dra-metadata validate``: check files against the Kubernetes validation rules."""

from __future__ import annotations

import argparse

from .._errors import DRAMetadataError
from ._common import EXIT_FALSE, EXIT_OK, Commands, add_command, exit_code_for, fail, write_text

__all__ = ["register"]


def register(commands: Commands) -> None:
    """Add ``validate`` to ``commands``."""
    parser = add_command(
        commands,
        "validate",
        summary="check files against the Kubernetes validation rules",
        description="Decode each FILE and print its validation errors, Go style.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    """Validate every file; the exit code is the highest any file earned."""
    from .. import validate
    from .._read import read_file

    worst = EXIT_OK
    for path in args.files:
        try:
            md = read_file(path)
        except DRAMetadataError as err:
            fail(str(err))
            worst = max(worst, exit_code_for(err))
            continue
        errors = validate(md)
        for error in errors:
            write_text(f"{path}: {error}\n")
        if errors:
            worst = max(worst, EXIT_FALSE)
        else:
            write_text(f"{path}: valid ({md.api_version})\n")
    return worst
