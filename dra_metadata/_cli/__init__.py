"""The ``dra-metadata`` command line: a function from arguments to an exit code.

Each command lives in its own module with a ``register(commands)`` function
that adds its parser and sets ``handler``; a handler takes the parsed
arguments and returns an exit code (see :mod:`._common` for the table).
Command modules import only the standard library at import time, so building
the parser stays cheap; what a command needs it imports when it runs.
"""

from __future__ import annotations

# isort: off
from . import _argparse  # noqa: F401 - first of all: argparse without gettext (see there)

# isort: on
import argparse
from collections.abc import Sequence

from .._errors import DRAMetadataError
from . import _env, _get, _lint, _ls, _show, _validate, _watch
from ._common import EPILOG, EXIT_OK, EXIT_USAGE, PROG, Parser, exit_code_for, fail

__all__ = ["build_parser", "main"]

#: The command modules, in the order ``--help`` lists them.
_COMMANDS = (_show, _ls, _get, _env, _watch, _validate, _lint)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed so the README's ``--help`` text can be tested)."""
    parser = Parser(
        prog=PROG,
        description="Read the DRA device metadata Kubernetes mounts into containers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=Parser
    )
    for module in _COMMANDS:
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    >>> main(["show", "--root", "examples/dra-device-attributes", "--claim", "nope",
    ...       "--request", "r"])
    66
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else EXIT_USAGE
    try:
        code: int = args.handler(args)
    except DRAMetadataError as err:
        fail(str(err))
        return exit_code_for(err)
    except BrokenPipeError:
        return EXIT_OK
    return code
