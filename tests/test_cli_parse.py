"""The command line's two ways of parsing give one answer.

Arguments that start with a command are parsed by that command's parser alone
(``dra_metadata._cli._parse_command``); the whole parser is what it stands in
for. Every outcome is compared: the parsed arguments, or the exit code and
everything printed (help, usage errors, did-you-mean hints).
"""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dra_metadata import _cli
from tests.exploration import examples

Outcome = tuple[str, object, str, str]


def outcome(parse: Callable[[], argparse.Namespace | None]) -> Outcome | None:
    """What ``parse`` gives: ("parsed", its arguments) or ("exit", code), and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            parsed = parse()
        except SystemExit as done:
            return ("exit", done.code, out.getvalue(), err.getvalue())
    if parsed is None:
        return None
    return ("parsed", vars(parsed), out.getvalue(), err.getvalue())


def whole(arguments: list[str]) -> Outcome | None:
    """The whole parser's outcome: what the command line did before the shortcut."""
    return outcome(lambda: _cli.build_parser(_cli._command_of(arguments)).parse_args(arguments))


ROOT = "examples/dra-device-attributes"
CASES = [
    ["env", "--root", ROOT],
    ["env", "--root", ROOT, "--format", "json", "--prefix", "X_"],
    ["env", "--prefix", "1bad"],
    ["env", "--format", "yaml"],
    ["env", "--profile", "cuda", "--profile", "numa"],
    ["env", "--profil", "cuda"],
    ["env", "--claim", "a", "--template-claim", "b"],
    ["env", "--version"],
    ["env", "-h"],
    ["env", "extra"],
    ["get", "--root", ROOT, "--template-claim", "gpu", "--request", "gpu", "uuid"],
    ["get", "--template-claim", "gpu", "uuid"],
    ["get", "--clam", "gpu", "--request", "gpu", "uuid"],
    ["get", "--help"],
    ["show", "--claim", "nic", "--request", "eth", "--format", "summary"],
    ["show", "--claim", "nic"],
    ["ls", "--root", ROOT, "--json"],
    ["ls", "--root=" + ROOT],
    ["ls", "--", "x"],
    ["watch", "--claim", "nic", "--request", "eth", "--timeout", "1s"],
    ["wait", "--claim", "nic", "--request", "eth", "--generation", "x"],
    ["validate", ROOT],
    ["lint", "--help"],
    ["topology", "--kind", "nope"],
    ["doctor", "--root", ROOT],
]


@pytest.mark.parametrize("arguments", CASES, ids=" ".join)
def test_a_command_parsed_alone_answers_as_the_whole_parser(
    arguments: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parsed arguments, help, usage errors and their hints are the whole parser's."""
    monkeypatch.setenv("COLUMNS", "100")
    alone = outcome(lambda: _cli._parse_command(arguments))
    expected = whole(arguments)
    if alone is None:  # left to the whole parser: only an argument the command does not know
        assert expected is not None
        assert expected[0] == "exit"
        assert "unrecognized" in expected[3]
    else:
        assert alone == expected
    assert outcome(lambda: _cli.parse(arguments)) == expected


def test_arguments_that_do_not_start_with_a_command_go_to_the_whole_parser() -> None:
    """``--root DIR env``, ``--version`` and a misspelt command are the whole parser's."""
    for arguments in (["--root", ROOT, "env"], ["--version"], ["evn"], [], ["-h"]):
        assert _cli._parse_command(arguments) is None
    parsed = _cli.parse(["--root", ROOT, "env", "--format", "json"])
    assert (parsed.root, parsed.command, parsed.format) == (ROOT, "env", "json")


WORDS = st.sampled_from(
    [
        "env", "get", "show", "ls", "watch", "wait", "validate", "lint", "topology", "doctor",
        "--root", "--claim", "--template-claim", "--request", "--driver", "--format", "--json",
        "--prefix", "--profile", "--timeout", "--generation", "--kind", "--version", "-h",
        "--help", "--", "-", "--clam", "--root=x", "json", "shell", "cuda", "gpu", "1s",
        "uuid", "x", "-1", "A_",
    ]
)  # fmt: skip


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(WORDS, max_size=7))
def test_any_command_line_gets_the_whole_parsers_answer(arguments: list[str]) -> None:
    """Over arbitrary arguments, the shortcut changes no outcome."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", "100")
        assert outcome(lambda: _cli.parse(arguments)) == whole(arguments)


@pytest.mark.parametrize("columns", [None, "", "120", " 90", "0", "-3", "wide"])
@pytest.mark.parametrize("stdout", ["pipe", "terminal", "closed"])
def test_help_is_as_wide_as_shutil_says(
    columns: str | None, stdout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """terminal_width() answers as shutil.get_terminal_size() (which it spares the import of)."""
    import fcntl
    import os
    import pty
    import shutil
    import struct
    import termios

    from dra_metadata._cli import terminal_width

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    leader = -1
    if stdout == "terminal":
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 132, 0, 0))
        stream = open(follower, "w")  # noqa: SIM115 - closed below
    else:
        read_end, write_end = os.pipe()
        os.close(read_end)
        stream = open(write_end, "w")  # noqa: SIM115 - closed below
        if stdout == "closed":
            stream.close()
    monkeypatch.setattr("sys.__stdout__", stream)
    try:
        assert terminal_width() == shutil.get_terminal_size().columns
        if stdout == "terminal" and not columns:
            assert terminal_width() == 132
    finally:
        stream.close()
        if leader >= 0:
            os.close(leader)
