"""Rewrite the "Help texts" section of docs/cli.md from this checkout's command line.

Run ``python docs/_ext/cli_help.py`` after changing a command's options or help;
``tests/test_readme.py`` fails until the page shows what ``--help`` prints. The
texts are taken at 100 columns, the width the test runs them at. The section runs
to the end of the page.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "cli.md"
HEADING = "## Help texts"


def help_text(command: str) -> str:
    """What ``dra-metadata [COMMAND] --help`` prints, 100 columns wide."""
    args = [command] if command else []
    return subprocess.run(
        [sys.executable, "-m", "dra_metadata", *args, "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env=dict(os.environ, COLUMNS="100", PYTHONPATH=str(REPO)),
    ).stdout


def commands() -> list[str]:
    """The commands, in the order ``dra-metadata --help`` lists them."""
    sys.path.insert(0, str(REPO))
    from dra_metadata._cli import build_parser

    (action,) = [a for a in build_parser()._actions if a.dest == "command"]
    return list(action.choices or ())


def section() -> str:
    parts = [f"{HEADING}\n\nEach command's `--help`, as printed in a terminal 100 columns wide.\n"]
    for command in ["", *commands()]:
        title = f"{command} --help" if command else "dra-metadata --help"
        line = f"$ dra-metadata {command} --help" if command else "$ dra-metadata --help"
        parts.append(f"\n### `{title}`\n\n```console\n{line}\n{help_text(command)}```\n")
    return "".join(parts)


def main() -> None:
    text = PAGE.read_text(encoding="utf-8")
    head, found, _ = text.partition(HEADING)
    if not found:
        raise SystemExit(f"{PAGE}: no {HEADING!r} section")
    PAGE.write_text(head + section(), encoding="utf-8")


if __name__ == "__main__":
    main()
