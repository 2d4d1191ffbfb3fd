"""``dra-metadata env``: environment variables for every request, safe to source."""

from __future__ import annotations

import argparse
from typing import Final

from .._env import DEFAULT_PREFIX, collect_into
from .._envtext import FORMATS, Renderer, render, valid_prefix
from .._errors import DRAMetadataError, EnvError
from . import (
    EXIT_OK,
    Commands,
    add_command,
    add_format,
    add_selection,
    exit_code_for,
    fail,
    selected_inventory,
    write_stdout,
)

__all__ = ["register"]

_DESCRIPTION: Final = """\
Print environment variables for every request under the root (or the ones
--claim, --template-claim, --request and --driver select):

  DRA_<CLAIM>_<REQUEST>_COUNT, _DEVICES, _DRIVERS, _REQUEST
  DRA_<CLAIM>_<REQUEST>_<ATTR>       values every device has, comma-joined
  DRA_<CLAIM>_<REQUEST>_<i>_NAME, _DRIVER, _POOL, _<ATTR>,
      _INTERFACE_NAME, _IPS, _HARDWARE_ADDRESS          device i (0-based)

Names are upper-cased, every other character becomes "_", attribute names go
camelCase -> UPPER_SNAKE (pciBusID -> PCI_BUS_ID) and are qualified with their
domain when two would collide. Two sources that map to one name are an error
naming both (neither is written), as is a value holding a NUL character.

Formats: shell (default) writes "export NAME='value'" lines, safe to eval or
source in sh, bash and zsh with every value exact; dotenv writes docker compose
env_file lines; json writes one object.

A request whose file does not decode gets no variables; the others are printed
and the exit code is 65, as it is for a name collision or a value the format
cannot hold. A missing or empty root, nothing matching a selection, or a
subrequest that was not allocated prints nothing on stdout (it stays safe to
source), says so on stderr and exits 66, as every command does.
"""


def _prefix(text: str) -> str:
    if not valid_prefix(text):
        raise argparse.ArgumentTypeError(f"{text!r} cannot start a variable name")
    return text


def _profiles(text: str) -> list[str]:
    """The profiles one ``--profile`` names (``cuda,nccl``); an unknown one is a usage error."""
    # loaded when the command runs: --help and completion build every parser without it
    from .._profiles import profile_names

    try:
        return profile_names(text)
    except EnvError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def register(commands: Commands) -> None:
    """Add ``env`` to ``commands``."""
    parser = add_command(
        commands,
        "env",
        summary="print environment variables for every request (shell, dotenv or json)",
        description=_DESCRIPTION,
    )
    add_selection(parser, required=False)
    add_format(
        parser,
        FORMATS,
        help="shell: export lines (default); dotenv: compose env_file lines; json: one object",
    )
    parser.add_argument(
        "--prefix",
        type=_prefix,
        default=DEFAULT_PREFIX,
        metavar="TEXT",
        help=f"start of every name (default {DEFAULT_PREFIX})",
    )
    parser.add_argument(
        "--profile",
        action="extend",
        type=_profiles,
        metavar="NAME",
        help="print a framework's variables instead: cuda, rocm, nccl, dpdk or numa; "
        "several comma-separated (cuda,nccl) or repeated; see docs/topology.md",
    )
    parser.set_defaults(handler=_env)


def _env(args: argparse.Namespace) -> int:

    inventory = selected_inventory(args)
    problems: list[DRAMetadataError] = []
    if args.profile:
        # loaded when the command runs: --help and completion build every parser without it
        from .._profiles import profile_variables

        data, refused = render(profile_variables(inventory, args.profile), args.format)
        write_stdout(data)
    else:
        # A request at a time, written in blocks: the text of 10,000 files is never
        # held at once.
        out = _BlockWriter()
        renderer = Renderer(args.format, out.write)
        problems = collect_into(inventory, renderer.add, prefix=args.prefix)
        refused = renderer.close()
        out.flush()
    worst = EXIT_OK
    for problem in [*problems, *refused]:
        fail(str(problem))
        worst = max(worst, exit_code_for(problem))
    return worst


class _BlockWriter:
    """Gathers output and hands it to ``write_stdout`` in blocks of about 64 KiB."""

    _BLOCK: Final = 65536

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0

    def write(self, data: bytes) -> None:
        self._parts.append(data)
        self._size += len(data)
        if self._size >= self._BLOCK:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            write_stdout(b"".join(self._parts))
            self._parts.clear()
            self._size = 0
