"""``dra-metadata validate``: check files against the Kubernetes validation rules."""

from __future__ import annotations

import argparse

from .._field_error import FieldError
from .._read import decode_file, read_bytes, read_found
from . import Commands, add_command, add_files, check_each, mounted_files

__all__ = ["register"]


def register(commands: Commands) -> None:
    """Add ``validate`` to ``commands``."""
    parser = add_command(
        commands,
        "validate",
        summary="check files against the Kubernetes validation rules",
        description=(
            "Decode each FILE and print its validation errors, Go style. Without a FILE,\n"
            "every metadata file mounted under the root (--root, $DRA_METADATA_ROOT, else\n"
            "the container directory), found by the layout as the other commands find them."
        ),
    )
    add_files(parser)
    parser.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    """Validate every file; the exit code is the highest any file earned."""
    # loaded when the command runs: --help and completion build every parser without it
    from .. import validate

    named = set(args.files)
    paths, worst = (args.files, 0) if args.files else mounted_files(args)

    def check(path: str) -> tuple[list[FieldError], str]:
        # A FILE the user named may be a link; one found below a directory is not followed.
        data = read_bytes(path) if path in named else read_found(path)
        md = decode_file(path, data)
        del data
        return validate(md), f"valid ({md.api_version})"

    return check_each(paths, check, worst=worst)
