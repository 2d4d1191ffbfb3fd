"""The ``dra-metadata`` command line: a function from arguments to an exit code.

Each command lives in its own module with a ``register(commands)`` function
that adds its parser and sets ``handler``; a handler takes the parsed
arguments and returns an exit code (see :mod:`._common` for the table).
Command modules import only the standard library at import time, so building
the parser stays cheap; what a command needs it imports when it runs. And
:func:`main` imports and builds only the module of the command it runs (the
others would cost an init container's ``env`` a good part of its run time), so
every module's commands are listed in :data:`_COMMANDS`; a command missing
there still works, by building them all.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from typing import Final

from .._errors import DRAMetadataError
from ._common import (
    EPILOG,
    EXIT_INTERRUPTED,
    EXIT_IOERR,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    Commands,
    HelpFormatter,
    OutputError,
    Parser,
    add_root,
    exit_code_for,
    fail,
    write_stdout,
)

__all__ = ["ONE_SHOT_COMMANDS", "build_parser", "console_main", "main", "parse"]

#: The command modules (of this package), in the order ``--help`` lists them,
#: each with the commands it registers.
_COMMANDS: Final = (
    ("_show", ("show",)),
    ("_ls", ("ls",)),
    ("_get", ("get",)),
    ("_env", ("env",)),
    ("_watch", ("watch", "wait")),
    ("_validate", ("validate",)),
    ("_lint", ("lint",)),
    ("_topology", ("topology",)),
    ("_doctor", ("doctor",)),
)


#: Commands that read, print and end (``watch`` and ``wait`` run on). From the
#: console script they run with the garbage collector off, and end without the
#: interpreter's teardown once their output is flushed (see :func:`console_main`).
ONE_SHOT_COMMANDS: Final = frozenset(
    {"show", "ls", "get", "env", "validate", "lint", "topology", "doctor"}
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser (exposed so the README's ``--help`` text can be tested).

    With ``command``, only the module that registers it is imported and asked
    to register; when that does not give the command, or for ``None``, all are.
    """
    parser = Parser(
        prog=PROG,
        description="Read the DRA device metadata Kubernetes mounts into containers.",
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_root(parser, top=True)
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=Parser
    )
    _register(commands, command)
    if command is not None and command not in commands.choices:
        return build_parser()
    return parser


def _register(commands: Commands, command: str | None) -> None:
    """Add the commands of the module that registers ``command`` (of every module for ``None``)."""
    for module, names in _COMMANDS:
        if command is None or command in names:
            # __import__ rather than importlib.import_module: -X importtime then lists it.
            __import__(f"{__name__}.{module}", fromlist=["register"]).register(commands)


def parse(arguments: list[str]) -> argparse.Namespace:
    """``arguments`` parsed as the command line; raises :class:`SystemExit` as argparse does.

    Arguments that start with a command are parsed by that command's parser
    alone (:func:`_parse_command`); the others, and those it leaves
    unrecognised, by the whole parser (:func:`build_parser`).
    """
    parsed = _parse_command(arguments)
    if parsed is None:
        parsed = build_parser(_command_of(arguments)).parse_args(arguments)
    return parsed


def _parse_command(arguments: list[str]) -> argparse.Namespace | None:
    """``arguments`` parsed by the parser of the command they start with, or ``None``.

    The whole parser hands everything after the command to the command's
    parser, so that parser alone gives the same answer, and the same help and
    usage errors (it is the same parser, with the same ``prog``); the top-level
    parser adds its own defaults (``--root``'s ``None`` and the command's
    name) and nothing else. Not building it saves ``env`` and ``get`` a tenth
    of their start-up. ``None`` when the first argument is no command, or
    when the command's parser leaves an argument unrecognised: that error is
    the whole parser's (its usage, and the closest option of either).
    """
    command = arguments[0] if arguments else ""
    if not any(command in names for _, names in _COMMANDS):
        return None
    commands: Commands = argparse._SubParsersAction(
        option_strings=[], prog=PROG, parser_class=Parser, dest="command", metavar="COMMAND"
    )
    _register(commands, command)
    parser = commands.choices.get(command)
    if parser is None:
        return None
    parsed, extras = parser.parse_known_args(arguments[1:])
    if extras:
        return None
    found = argparse.Namespace(root=None, command=command)
    for name, value in vars(parsed).items():
        setattr(found, name, value)
    return found


def _command_of(arguments: list[str]) -> str | None:
    """The command named in ``arguments``, looking past a leading ``--root DIR``."""
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if argument == "--root":
            index += 2
        elif argument.startswith("--root="):
            index += 1
        else:
            return None if argument.startswith("-") else argument
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    >>> main(["show", "--root", "examples/dra-device-attributes", "--claim", "nope",
    ...       "--request", "r"])
    66
    """
    try:
        reserve_standard_streams()
        return _run(sys.argv[1:] if argv is None else list(argv))
    except KeyboardInterrupt:
        fail("interrupted")
        return EXIT_INTERRUPTED


def console_main() -> int:
    """:func:`main` for the console script and ``python -m dra_metadata``.

    A one-shot command (:data:`ONE_SHOT_COMMANDS`) runs with the garbage
    collector off: what it builds lives until it ends and holds no cycles worth
    collecting. When it is done and stdout and stderr are flushed, the process
    ends at once with its exit code: the interpreter's teardown (a final
    collection, every module torn down) is about a sixth of a short command's
    time and has nothing left to do. Anything that does not flush cleanly takes
    the ordinary way out instead, as ``watch`` and ``wait`` always do.
    """
    arguments = sys.argv[1:]
    one_shot = _command_of(arguments) in ONE_SHOT_COMMANDS
    if one_shot:
        gc.disable()
    code = main(arguments)
    if one_shot:
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            return code
        except KeyboardInterrupt:  # after the command's own handler: the same answer
            fail("interrupted")
            return EXIT_INTERRUPTED
        os._exit(code)
    return code


def reserve_standard_streams() -> None:
    """Put ``/dev/null`` on descriptors 0-2 that were closed when the process started.

    No file opened later can then take one of those numbers and receive what was
    meant for a standard stream. A closed stdout becomes a :class:`ClosedStdout`
    (every write fails: exit 74, and nothing lands on stderr instead); with
    stderr closed, messages are dropped.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stdout is None:
        # argparse prints --help and --version to stderr when stdout is None.
        from ._closed import ClosedStdout

        sys.stdout = ClosedStdout()


def _run(arguments: list[str]) -> int:
    try:
        args = parse(arguments)
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else EXIT_USAGE
        if status == EXIT_OK:  # --help or --version was printed: it must have been written
            try:
                write_stdout(b"")
            except OutputError as err:
                fail(str(err))
                return EXIT_IOERR
        return status
    try:
        code: int = args.handler(args)
    except DRAMetadataError as err:
        fail(str(err))
        return exit_code_for(err)
    except BrokenPipeError:
        return EXIT_OK
    except OutputError as err:
        fail(str(err))
        return EXIT_IOERR
    return code
