"""The ``dra-metadata`` command line: a function from arguments to an exit code.

Each command lives in its own module with a ``register(commands)`` function
that adds its parser and sets ``handler``; a handler takes the parsed
arguments and returns an exit code (the table below).
Command modules import only the standard library at import time, so building
the parser stays cheap; what a command needs it imports when it runs. And
:func:`main` imports and builds only the module of the command it runs (the
others would cost an init container's ``env`` a good part of its run time), so
every module's commands are listed in :data:`_COMMANDS`; a command missing
there still works, by building them all.

What every command shares lives here too: exit codes, options, errors.

Exit codes (the same for every command; the usage, data and input codes are
the BSD ``sysexits.h`` values, so scripts can tell the cases apart):

====  ==============================================================
0     success: the condition holds, the files are valid
1     the condition is false: invalid or lint-failing files, an absent
      attribute, a ``wait`` that timed out
64    usage error: bad option, unsafe claim/request/driver name
65    a metadata file does not decode (or is over the size limit), or
      metadata that cannot become environment variables (``env``)
66    not found: no such file, request directory or claim (or unreadable)
69    cannot happen here: ``wait`` for a claim this container has not
      mounted, or for a change to a file the node replaced (stale)
74    the output could not be written (a full disk behind stdout)
130   interrupted (SIGINT), as shells report it
====  ==============================================================

Errors are one line on stderr, prefixed ``dra-metadata: ``.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn, TypeAlias

from .. import __version__
from .._errors import (
    AttributeNotFoundError,
    DecodeError,
    DRAMetadataError,
    EnvError,
    FileTooLargeError,
    InvalidNameError,
    MalformedAttributeError,
    MetadataNotFoundError,
    NotMountedError,
    StaleMetadataError,
)
from .._paths import METADATA_FILE_SUFFIX, NODE_METADATA_FILE

if TYPE_CHECKING:
    from .._inventory import Inventory
    from .._select import Question

__all__ = [
    "EPILOG",
    "EXIT_FALSE",
    "EXIT_INTERRUPTED",
    "EXIT_IOERR",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_OSERR",
    "EXIT_UNAVAILABLE",
    "EXIT_UNDECODABLE",
    "EXIT_USAGE",
    "ONE_SHOT_COMMANDS",
    "PROG",
    "Commands",
    "HelpFormatter",
    "OutputError",
    "Parser",
    "add_command",
    "add_files",
    "add_format",
    "add_root",
    "add_selection",
    "build_parser",
    "check_each",
    "console_main",
    "exit_code_for",
    "expand_paths",
    "fail",
    "json_text",
    "main",
    "mounted_files",
    "parse",
    "selected_claim",
    "selected_inventory",
    "selected_question",
    "terminal_width",
    "write_stdout",
    "write_text",
]


EXIT_OK: Final = 0
EXIT_FALSE: Final = 1
EXIT_USAGE: Final = 64
EXIT_UNDECODABLE: Final = 65
EXIT_NOT_FOUND: Final = 66
EXIT_UNAVAILABLE: Final = 69
EXIT_OSERR: Final = 71
EXIT_IOERR: Final = 74
EXIT_INTERRUPTED: Final = 130

PROG: Final = "dra-metadata"

EPILOG: Final = """\
exit codes: 0 success, 1 condition false or invalid, 64 usage error,
65 not decodable, 66 not found, 69 cannot happen here (wait), 71 out of memory,
74 output not written, 130 interrupted.
The root defaults to $DRA_METADATA_ROOT, else /var/run/kubernetes.io/dra-device-attributes.
"""


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors exit with :data:`EXIT_USAGE`.

    Options are never abbreviated (``--req`` is not ``--request``: a later
    option starting the same way would change its meaning), and an unknown
    option, command or choice is named with the closest known one
    ("did you mean").
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if not message.startswith("unrecognized arguments"):
            # A misspelt option often shows first as a missing one (--clam for --claim):
            # name the misspelling, which is the cause.
            unknown = [
                arg
                for arg in self._seen
                if arg.startswith("--") and arg.partition("=")[0] not in self._option_string_actions
            ]
            if unknown:
                hint = _unrecognized(unknown, self, None)
                if "did you mean" in hint:
                    message = hint
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    _seen: Sequence[str] = ()

    def parse_known_args(  # type: ignore[override]  # the same contract, narrower types
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._seen = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def parse_args(  # type: ignore[override]  # the same contract, narrower types
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._command_parser(parsed)
            (command or self).error(_unrecognized(extras, self, command))
        return parsed

    def _command_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser | None:
        """The parser of the command ``parsed`` names, if this parser has commands."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                name = getattr(parsed, action.dest, None)
                found: argparse.ArgumentParser | None = (
                    action.choices.get(name) if isinstance(name, str) else None
                )
                return found
        return None

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            names = [str(choice) for choice in choices]
            text = f"invalid choice: {value!r} (choose from {', '.join(names)})"
            from .._text import did_you_mean  # on the way to an error

            raise argparse.ArgumentError(action, text + did_you_mean(str(value), names))


def _unrecognized(
    extras: list[str], top: argparse.ArgumentParser, command: argparse.ArgumentParser | None
) -> str:
    """The usage error for arguments no option took, naming the closest option."""
    from .._text import did_you_mean  # on the way to an error

    text = f"unrecognized arguments: {' '.join(extras)}"
    parsers = [top] if command is None else [command, top]
    if command is None:  # before the command: any command's option may have been meant
        for action in top._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
    options = list(
        dict.fromkeys(
            option
            for parser in parsers
            for action in parser._actions
            for option in action.option_strings
            if option.startswith("--")
        )
    )
    for extra in extras:
        if extra.startswith("-"):
            hint = did_you_mean(extra.partition("=")[0], options)
            if hint:
                return text + hint
    return text


def terminal_width() -> int:
    """Columns of the terminal: ``$COLUMNS``, else stdout's terminal, else 80 (as shutil)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        stdout = sys.__stdout__
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout else 0
        except (ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help as written (descriptions keep their lines), as wide as :func:`terminal_width`.

    Given a width, argparse's formatter does not ask :mod:`shutil` for one, and
    importing shutil (with zlib, bz2 and lzma) is a good part of the start-up
    time of ``env``: argparse builds a formatter for every option it adds.
    """

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        super().__init__(
            prog,
            indent_increment,
            max_help_position,
            terminal_width() - 2 if width is None else width,
        )

    def add_argument(self, action: argparse.Action) -> None:
        """Measure each command at its own indentation, as Python 3.13 does on every version.

        Python 3.11 and 3.12 leave a sub-command's indentation out of the measure, so
        ``completion`` wraps its summary there and not on 3.13: one help text for all.
        """
        if action.help is argparse.SUPPRESS:
            return
        invocation = self._format_action_invocation
        lengths = [len(invocation(action)) + self._current_indent]
        for subaction in self._iter_indented_subactions(action):
            lengths.append(len(invocation(subaction)) + self._current_indent)
        self._action_max_length = max(self._action_max_length, *lengths)
        self._add_item(self._format_action, [action])


#: What ``add_subparsers()`` returns; each command module's ``register()`` adds to it.
Commands: TypeAlias = "argparse._SubParsersAction[Parser]"


def add_command(commands: Commands, name: str, *, summary: str, description: str) -> Parser:
    """Add the sub-command ``name`` with the shared epilog and formatting."""
    return commands.add_parser(
        name,
        help=summary,
        description=description,
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )


def add_format(
    parser: argparse.ArgumentParser,
    choices: Sequence[str],
    *,
    help: str,  # noqa: A002 - argparse's name for it
    shorthands: Sequence[tuple[Sequence[str], str, str]] = (),
) -> None:
    """Add ``--format {choices}`` (the first is the default), the one output option.

    ``--json`` is added as a shorthand for ``--format json`` where json is a
    choice; ``shorthands`` adds others (``(("-0", "--null"), "null", help)``).
    They all set ``args.format``.
    """
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--format", choices=choices, default=choices[0], help=help)
    if "json" in choices:
        group.add_argument(
            "--json", dest="format", action="store_const", const="json", help="--format json"
        )
    for flags, value, text in shorthands:
        group.add_argument(*flags, dest="format", action="store_const", const=value, help=text)


def add_files(parser: argparse.ArgumentParser) -> None:
    """Add ``[FILE...]`` and ``--root`` to the file-checking commands (see :func:`check_each`).

    Without a FILE, they check every metadata file mounted under the root, as
    the other commands read it (:func:`mounted_files`).
    """
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="a metadata file, or a directory: every metadata file below it; "
        "none: every metadata file mounted under the root",
    )
    add_root(parser)


def mounted_files(args: argparse.Namespace) -> tuple[list[str], int]:
    """The metadata files of the root (``--root``), found by layout as every command finds them.

    Returns the paths and the worst exit code of what could not be listed
    (said on stderr). A missing or empty root raises the not-found every
    command gives.
    """
    inv = selected_inventory(args)
    worst = EXIT_OK
    for problem in inv.problems:
        if not problem.driver:  # a claim or request directory: no file to check
            fail(problem.message)
            worst = max(worst, exit_code_for(problem.error))
    return [file.path for file in inv.files if file.driver], worst


def add_root(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """Add ``--root DIR``; it may come before or after the command.

    The top-level parser's ``--root`` sets the default; a command's, given after
    it, wins (``default=SUPPRESS`` keeps the command from resetting it).
    """
    parser.add_argument(
        "--root",
        metavar="DIR",
        help="metadata root directory",
        **({"default": None} if top else {"default": argparse.SUPPRESS}),
    )


def add_selection(
    parser: argparse.ArgumentParser, *, required: bool, request_required: bool | None = None
) -> None:
    """Add ``--claim``/``--template-claim``, ``--request``, ``--driver`` and ``--root``.

    With ``required`` one claim must be given, and the request too unless
    ``request_required`` is false (then every request of the claim is read);
    without it they narrow down what the command looks at.
    """
    if request_required is None:
        request_required = required
    which = parser.add_mutually_exclusive_group(required=required)
    which.add_argument(
        "--claim", metavar="NAME", help="a claim referenced by name (resourceclaims/NAME)"
    )
    which.add_argument(
        "--template-claim",
        metavar="NAME",
        help="a claim made from a template, by its pod-spec name (resourceclaimtemplates/NAME)",
    )
    parser.add_argument(
        "--request",
        required=request_required,
        metavar="NAME",
        help="request name (req or req/sub)"
        + ("" if request_required else "; every request of the claim when left out"),
    )
    parser.add_argument("--driver", metavar="NAME", help="only this driver's file")
    add_root(parser)


def selected_claim(
    args: argparse.Namespace,
) -> tuple[Literal["claim", "template"] | None, str | None]:
    """The claim kind and name that ``--claim`` or ``--template-claim`` chose, if any."""
    claim = getattr(args, "claim", None)
    template_claim = getattr(args, "template_claim", None)
    if claim is not None:
        return "claim", str(claim)
    if template_claim is not None:
        return "template", str(template_claim)
    return None, None


def selected_question(args: argparse.Namespace) -> Question:
    """The question the selection options (``add_selection``) ask, names checked."""
    # the walk and the inventory: only where a root is read (not --help)
    from .._select import ask

    kind, claim = selected_claim(args)
    return ask(
        kind=kind,
        claim=claim,
        request=getattr(args, "request", None),
        driver=getattr(args, "driver", None),
    )


def selected_inventory(args: argparse.Namespace) -> Inventory:
    """The inventory of what the selection options (``add_selection``) pick, read by layout.

    Asked of the one resolver (:func:`dra_metadata._inventory.mounted`), as every
    door asks: raises :class:`~dra_metadata.MetadataNotFoundError` when the root
    is missing or empty, a named claim, request or driver is not there, or a
    subrequest was not allocated.
    """
    # the walk and the inventory: only where a root is read (not --help)
    from .._inventory import mounted

    return mounted(selected_question(args), getattr(args, "root", None))


def expand_paths(paths: Sequence[str]) -> Iterator[str | MetadataNotFoundError]:
    """``paths`` with each directory replaced by the metadata files below it.

    Below a directory, files named ``*-metadata.json`` (the container layout) or
    ``metadata.json`` (the kubelet plugin's node layout) are taken, in byte
    order of their paths; symbolic links below it are not followed. A directory
    with none gives a :class:`~dra_metadata.MetadataNotFoundError` instead.
    """

    for path in paths:
        if not os.path.isdir(path):
            yield path
            continue
        found: list[str] = []
        for directory, subdirs, files in os.walk(path):  # os.walk follows no link below
            subdirs.sort(key=os.fsencode)
            found.extend(
                os.path.join(directory, name)
                for name in files
                if (name.endswith(METADATA_FILE_SUFFIX) or name == NODE_METADATA_FILE)
                and not os.path.islink(os.path.join(directory, name))
            )
        if not found:
            yield MetadataNotFoundError(
                f"{path}: no *{METADATA_FILE_SUFFIX} (or node-side {NODE_METADATA_FILE}) file "
                "below this directory",
                path=path,
            )
        yield from sorted(found, key=os.fsencode)


def check_each(
    paths: Sequence[str], check: Callable[[str], tuple[Sequence[object], str]], *, worst: int = 0
) -> int:
    """Run ``check`` on every file and print ``PATH: finding`` lines; the worst code wins.

    A directory stands for the metadata files below it (:func:`expand_paths`).

    ``check(path)`` returns the findings and the line for a file without any; a
    :class:`DRAMetadataError` it raises is one stderr line and that error's code.
    Findings make the exit code :data:`EXIT_FALSE`; ``worst`` is the code so far.
    """
    for path in expand_paths(paths):
        if isinstance(path, DRAMetadataError):
            fail(str(path))
            worst = max(worst, exit_code_for(path))
            continue
        try:
            findings, clean = check(path)
        except DRAMetadataError as err:
            fail(str(err))
            worst = max(worst, exit_code_for(err))
            continue
        for finding in findings:
            write_text(f"{path}: {finding}\n")
        if findings:
            worst = max(worst, EXIT_FALSE)
        else:
            write_text(f"{path}: {clean}\n")
    return worst


def fail(message: str) -> None:
    """Print one error line on stderr, whatever the message holds (escaped by ``one_line``).

    Never anywhere else: with stderr closed (``2>&-``) the message is dropped, and
    a stderr that cannot be written (``2>/dev/full``) is given up on, silently.
    """
    from .._text import one_line  # on the way to a message: a command that succeeds never needs it

    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(f"{PROG}: {one_line(message)}\n")
        stream.flush()
    except (OSError, ValueError):
        sys.stderr = None  # nothing more is said, and the flush at exit is skipped


def json_text(text: str) -> str:
    r"""``text`` escaped as ``one_line`` does, with backslashes doubled: unambiguous.

    For names printed by ``ls`` and ``watch``: a directory named ``a<newline>b``
    is ``a\nb`` and one named ``a\nb`` (a backslash, then ``n``) is ``a\\nb``; a
    byte that is not UTF-8 is ``\xNN``, a literal ``\xff`` is ``\\xff``. The
    result is always valid UTF-8, so JSON output stays JSON.

    >>> print(json_text("a\nb"), json_text("a\\nb"), json_text("x\udcff"))
    a\nb a\\nb x\xff
    """
    if text.isprintable() and "\\" not in text:
        return text
    # only on the way to a message
    from .._text import escape_char

    return "".join(
        "\\\\" if char == "\\" else char if char.isprintable() else escape_char(char)
        for char in text
    )


class OutputError(Exception):
    """Standard output could not be written (other than a closed pipe); one line for stderr."""


def write_text(text: str) -> None:
    """Write ``text`` to stdout as UTF-8, names that are not UTF-8 as their own bytes."""
    write_stdout(text.encode("utf-8", "surrogateescape"))


def write_stdout(data: bytes) -> None:
    """Write ``data`` to stdout as is (UTF-8 whatever the locale), and flush.

    A closed pipe (``dra-metadata env | head``) re-raises ``BrokenPipeError``
    for :func:`main` to handle, any other write error raises :class:`OutputError`,
    after pointing stdout at ``/dev/null`` so that the flush at exit does not
    complain again.
    """
    if sys.stdout is None:  # started with stdout closed (>&-), outside main()
        raise OutputError("write standard output: bad file descriptor")
    out = getattr(sys.stdout, "buffer", None)
    if out is None:  # stdout replaced by a text stream (contextlib.redirect_stdout)
        sys.stdout.write(data.decode("utf-8", "surrogateescape"))
        return
    try:
        sys.stdout.flush()
        out.write(data)
        out.flush()
    except OSError as err:
        # Whatever is still buffered would fail again at exit: drop it with the stream.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        if isinstance(err, BrokenPipeError):
            raise
        reason = os.strerror(err.errno).lower() if err.errno is not None else str(err)
        raise OutputError(f"write standard output: {reason}") from None


def exit_code_for(err: DRAMetadataError) -> int:
    """The exit code for an error a command did not handle itself."""
    if isinstance(err, InvalidNameError):
        return EXIT_USAGE
    if isinstance(err, NotMountedError | StaleMetadataError):
        return EXIT_UNAVAILABLE
    if isinstance(err, DecodeError | FileTooLargeError | EnvError | MalformedAttributeError):
        return EXIT_UNDECODABLE
    if isinstance(err, AttributeNotFoundError):
        return EXIT_FALSE
    if isinstance(err, MetadataNotFoundError):
        return EXIT_NOT_FOUND
    # Anything else comes from the file system: exists but cannot be read.
    return EXIT_NOT_FOUND


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
    ("_completion", ("completion",)),
)


#: Commands that read, print and end (``watch`` and ``wait`` run on). From the
#: console script they run with the garbage collector off, and end without the
#: interpreter's teardown once their output is flushed (see :func:`console_main`).
ONE_SHOT_COMMANDS: Final = frozenset(
    {"show", "ls", "get", "env", "validate", "lint", "topology", "doctor", "completion"}
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
    name) and nothing else. Not building it saves ``env`` and ``get`` 1-2 M
    instructions, about 1 % of their start-up. ``None`` when the first argument
    is no command, or when the command's parser leaves an argument
    unrecognised: that error is the whole parser's (its usage, and the closest
    option of either).
    """
    command = arguments[0] if arguments else ""
    if not any(command in names for _, names in _COMMANDS):
        return None
    # argparse's own holder of a parser's commands, made without the parser above it
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
    return argparse.Namespace(**{"root": None, "command": command, **vars(parsed)})


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
        from ._closed import ClosedStdout  # only when started with stdout closed

        sys.stdout = ClosedStdout()


def overview() -> str:
    """What a bare ``dra-metadata`` prints: the usage, then every command on one line."""
    parser = build_parser()
    commands = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    listed = [(choice.dest, choice.help or "") for choice in commands._choices_actions]
    width = max(len(name) for name, _ in listed)
    lines = [
        f"usage: {PROG} [--root DIR] COMMAND [options]",
        "",
        parser.description or "",
        "",
        "commands:",
        *(f"  {name:<{width}}  {summary}" for name, summary in listed),
        "",
        f"'{PROG} COMMAND --help' shows a command's options, '{PROG} --help' the rest.",
    ]
    return "\n".join(lines) + "\n"


def _run(arguments: list[str]) -> int:
    if arguments[:1] == ["__complete"]:  # what the completion scripts ask (not a command)
        # Loaded as every command module is (see _register): it imports this package.
        complete = __import__(f"{__name__}._completion", fromlist=["complete"]).complete
        try:
            # A name that is not UTF-8 goes back to the shell as the bytes it was read from.
            lines = "".join(f"{word}\n" for word in complete(arguments[1:]))
            write_stdout(lines.encode("utf-8", "surrogateescape"))
        except OutputError:
            return EXIT_IOERR
        return EXIT_OK
    if not arguments:  # as kubectl, gh and pip do: what there is to run, and exit 0
        try:
            write_stdout(overview().encode("utf-8"))
        except OutputError as err:
            fail(str(err))
            return EXIT_IOERR
        return EXIT_OK
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
    out_of_memory = False
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
    except MemoryError:
        out_of_memory = True  # said below, once the exception (and what it holds) is gone
    if out_of_memory:
        fail(
            "out of memory: raise the memory limit (a container's, or ulimit -v), or read "
            "less at a time (--claim, --request, --driver)"
        )
        return EXIT_OSERR
    return code
