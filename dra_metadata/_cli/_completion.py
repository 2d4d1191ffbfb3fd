"""``dra-metadata completion bash|zsh|fish``: shell completion, answered by the parser itself.

Each shell's script is a few lines that ask the program what fits
(``dra-metadata __complete WORD... CURRENT``, one candidate per line): the
commands, a command's options, an option's choices (``--format``, ``--for``),
and, read from the root (``--root`` on the line, else ``$DRA_METADATA_ROOT``,
else the container's directory), the claims, template claims, requests and
drivers mounted there. Nothing is kept in the scripts, so they never go out of
date with the parser; a name that is not there is simply not offered.
"""

from __future__ import annotations

import argparse
import os
from typing import Final

from .._paths import default_root
from . import Commands, add_command, build_parser, write_stdout

__all__ = ["complete", "register"]

_SCRIPTS: Final = {
    "bash": """\
# dra-metadata completion for bash: source <(dra-metadata completion bash)
_dra_metadata() {
    local IFS=$'\\n'
    COMPREPLY=($(dra-metadata __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _dra_metadata dra-metadata
""",
    "zsh": """\
#compdef dra-metadata
# dra-metadata completion for zsh: source <(dra-metadata completion zsh)
_dra_metadata() {
    local -a candidates
    candidates=("${(@f)$(dra-metadata __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if (( ${#candidates} )) && [[ -n ${candidates[1]} ]]; then
        compadd -- "${candidates[@]}"
    else
        _files
    fi
}
compdef _dra_metadata dra-metadata
""",
    "fish": """\
# dra-metadata completion for fish: dra-metadata completion fish | source
complete -c dra-metadata -f \\
    -a '(dra-metadata __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
""",
}

_DESCRIPTION = """\
Print a script that completes dra-metadata's commands, options and (read from the
root) claim, request and driver names in bash, zsh or fish. Install it with:

  bash:  source <(dra-metadata completion bash)       (in ~/.bashrc)
  zsh:   source <(dra-metadata completion zsh)        (in ~/.zshrc, after compinit)
  fish:  dra-metadata completion fish > ~/.config/fish/completions/dra-metadata.fish"""


def register(commands: Commands) -> None:
    """Add ``completion`` to ``commands``."""
    parser = add_command(
        commands,
        "completion",
        summary="print a shell completion script (bash, zsh or fish)",
        description=_DESCRIPTION,
    )
    parser.add_argument("shell", choices=sorted(_SCRIPTS), metavar="SHELL", help="bash|zsh|fish")
    parser.set_defaults(handler=_completion)


def _completion(args: argparse.Namespace) -> int:
    write_stdout(_SCRIPTS[args.shell].encode("utf-8"))
    return 0


def complete(words: list[str]) -> list[str]:
    """What fits the last of ``words`` (the line after the program's name; the last is partial)."""

    *before, current = words or [""]
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = next((word for word in before if word in commands.choices), None)
    target = parser if command is None else commands.choices[command]
    options = {o: a for a in target._actions for o in a.option_strings}
    previous = before[-1] if before else ""
    if previous in options and options[previous].nargs != 0:
        return _values(options[previous], before, current)
    if current.startswith("-"):
        return sorted(o for o in options if o.startswith(current) and o.startswith("--"))
    if command is None:
        return [name for name in commands.choices if name.startswith(current)]
    choices = [a.choices for a in target._actions if not a.option_strings and a.choices]
    return [str(c) for found in choices if found for c in found if str(c).startswith(current)]


def _values(action: argparse.Action, before: list[str], current: str) -> list[str]:
    """The values of an option: its choices, or the names mounted under the root."""
    if action.choices:
        return [str(c) for c in action.choices if str(c).startswith(current)]
    root = _option(before, "--root") or default_root()
    kind = {"--claim": "resourceclaims", "--template-claim": "resourceclaimtemplates"}
    option = action.option_strings[-1]
    if option in kind:
        names = _dirs(os.path.join(root, kind[option]))
    elif option in ("--request", "--driver"):
        claim_dirs = [
            os.path.join(root, kind[flag], name) for flag in kind if (name := _option(before, flag))
        ]
        requests = [os.path.join(claim, r) for claim in claim_dirs for r in _dirs(claim)]
        if option == "--request":
            names = [os.path.basename(r) for r in requests]
        else:
            wanted = _option(before, "--request")
            names = [
                name.removesuffix("-metadata.json")
                for r in requests
                if wanted is None or os.path.basename(r) == wanted.partition("/")[0]
                for name in _files(r)
                if name.endswith("-metadata.json")
            ]
    else:
        return []  # a directory, a number, a duration: the shell's own completion
    # One candidate per line: a name holding a line break cannot be offered.
    return sorted({n for n in names if n.startswith(current) and "\n" not in n})


def _option(words: list[str], flag: str) -> str | None:
    """The value given to ``flag`` (``--flag V`` or ``--flag=V``), the last one."""
    found = None
    for index, word in enumerate(words):
        if word == flag and index + 1 < len(words):
            found = words[index + 1]
        elif word.startswith(flag + "="):
            found = word.partition("=")[2]
    return found


def _dirs(directory: str) -> list[str]:
    try:
        with os.scandir(directory) as entries:
            return [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _files(directory: str) -> list[str]:
    try:
        with os.scandir(directory) as entries:
            return [e.name for e in entries if e.is_file(follow_symlinks=False)]
    except OSError:
        return []
