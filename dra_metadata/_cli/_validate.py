"""``dra-metadata validate``: check files against the Kubernetes validation rules."""

from __future__ import annotations

import argparse

from .._errors import FieldError
from ._common import Commands, add_command, add_files, check_each

__all__ = ["register"]


def register(commands: Commands) -> None:
    """Add ``validate`` to ``commands``."""
    parser = add_command(
        commands,
        "validate",
        summary="check files against the Kubernetes validation rules",
        description="Decode each FILE and print its validation errors, Go style.",
    )
    add_files(parser)
    parser.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    """Validate every file; the exit code is the highest any file earned."""
    from .. import validate
    from .._read import decode_file, read_bytes, read_found

    named = set(args.files)

    def check(path: str) -> tuple[list[FieldError], str]:
        # A FILE the user named may be a link; one found below a directory is not followed.
        data = read_bytes(path) if path in named else read_found(path)
        md = decode_file(path, data)
        del data
        return validate(md), f"valid ({md.api_version})"

    return check_each(args.files, check)
