"""Hostile plumbing: closed and full standard streams, control characters, early SIGINT.

Every test runs the real command line in a subprocess, with real closed descriptors,
a real ``/dev/full`` and real signals. Counts are bounded; the long versions
(``-m adversarial_long``) are for a developer to run by hand.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest

import dra_metadata as dm
from dra_metadata.testing import MetadataTree
from tests.conftest import REPO, SAMPLE_ROOT

ROOT = str(SAMPLE_ROOT)
#: The console script's entry, run from the checkout as the installed script runs it.
ENTRY = ("-c", "import sys; from dra_metadata_cli import main; sys.exit(main())")


def sh(script: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """Run ``script`` in a real sh, with the checkout's CLI as ``$DRA``."""
    wrapper = cwd / "dra-metadata"
    entry = "import sys; from dra_metadata_cli import main; sys.exit(main())"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -c "{entry}" "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO), "DRA": str(wrapper)}
    return subprocess.run(["sh", "-c", script], cwd=cwd, capture_output=True, env=env, timeout=60)


def cli(*args: str, **streams: int | IO[bytes]) -> subprocess.CompletedProcess[bytes]:
    """The CLI through its console entry, from the checkout (stdout/stderr may be given)."""
    if not streams:
        streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    done: subprocess.CompletedProcess[bytes] = subprocess.run(
        [sys.executable, *ENTRY, *args], cwd=REPO, timeout=60, check=False, **streams
    )  # type: ignore[call-overload] # stdout=/stderr= only
    return done


def assert_clean_lines(stderr: bytes, count: int | None = None) -> list[str]:
    """Every stderr line is one 'dra-metadata: ' line with no control character."""
    lines = stderr.decode("utf-8").splitlines()
    for line in lines:
        assert line.startswith("dra-metadata: "), line
        assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in line), repr(line)
    if count is not None:
        assert len(lines) == count, lines
    return lines


# --------------------------------------------------------------------------- closed stderr


def test_a_closed_stderr_never_sends_error_text_into_the_output(tmp_path: Path) -> None:
    """env 2>&- > dra.env with a hostile claim name and a broken file: sourcing runs nothing."""
    claim = tmp_path / "root" / "resourceclaims" / "x$(touch${IFS}PWNED)" / "r"
    claim.mkdir(parents=True)
    (claim / "d.example.com-metadata.json").write_bytes(b'{"kind":"DeviceMeta')
    good = MetadataTree(tmp_path / "root")
    good.claim("ok").request("r").device("d.example.com", "p", "d0")
    good.write()
    done = sh('$DRA env --root root 2>&- > dra.env; echo "rc=$?"; . ./dra.env', tmp_path)
    assert not (tmp_path / "PWNED").exists()
    assert b"rc=65" in done.stdout
    text = (tmp_path / "dra.env").read_text()
    assert "dra-metadata" not in text
    assert text.startswith("export DRA_OK_R_COUNT=1\n")


def test_a_full_stderr_keeps_the_exit_code(tmp_path: Path) -> None:
    """2>/dev/full: the message cannot be written, the exit code is still 66."""
    with open("/dev/full", "wb") as full:
        done = cli("ls", "--root", str(tmp_path / "absent"), stderr=full, stdout=subprocess.PIPE)
    assert done.returncode == 66


# --------------------------------------------------------------------------- closed stdout


@pytest.mark.parametrize(
    "args",
    [
        ("env", "--root", ROOT),
        ("ls", "--root", ROOT),
        ("show", "--root", ROOT, "--claim", "nic", "--request", "eth"),
        ("get", "--root", ROOT, "--claim", "nic", "--request", "eth", "ips"),
        ("validate", ROOT),
        ("lint", ROOT),
        ("--help",),
        ("--version",),
    ],
)
def test_a_closed_stdout_is_exit_74_and_one_line(args: tuple[str, ...]) -> None:
    """>&-: no traceback, exit 74, one line on stderr, nothing printed in stdout's place."""
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, *ENTRY, *args],
        cwd=REPO,
        stderr=subprocess.PIPE,
        timeout=60,
    )
    assert done.returncode == 74
    (line,) = assert_clean_lines(done.stderr)
    assert line == "dra-metadata: write standard output: bad file descriptor"


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_to_a_full_disk_are_exit_74(flag: str) -> None:
    """--help > /dev/full is an output error, not success."""
    with open("/dev/full", "wb") as full:
        done = cli(flag, stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 74
    assert_clean_lines(done.stderr, 1)


# --------------------------------------------------------------------------- injection


EVIL_VERSION = "evil/v1\u001b[2J\u001b]0;owned\u0007\nFAKE LINE"


@pytest.fixture
def hostile_root(tmp_path: Path) -> Path:
    """A root whose names and content carry newlines, ESC and BEL."""
    root = tmp_path / "root"
    for claim in ("nl\nclaim", "esc\x1b[31mred"):
        directory = root / "resourceclaims" / claim / "r"
        directory.mkdir(parents=True)
        entry = json.dumps({"kind": "DeviceMetadata", "apiVersion": EVIL_VERSION})
        (directory / "d.example.com-metadata.json").write_text(entry)
    return root


@pytest.mark.parametrize(
    "args",
    [
        ("ls",),
        ("env",),
        ("show", "--claim", "nl\nclaim", "--request", "r"),
        ("get", "--claim", "esc\x1b[31mred", "--request", "r", "uuid"),
        ("wait", "--claim", "nl\nclaim", "--request", "r", "--timeout", "0.3s"),
        ("wait", "--claim", "no\x07such", "--request", "r", "--timeout", "0.3s"),
    ],
)
def test_every_message_is_one_escaped_line_whatever_the_node_wrote(
    hostile_root: Path, args: tuple[str, ...]
) -> None:
    """An apiVersion or a name full of control characters never reaches the terminal raw."""
    done = cli(args[0], "--root", str(hostile_root), *args[1:])
    assert done.returncode != 0
    assert assert_clean_lines(done.stderr)  # no line can start with what the node wrote


@pytest.mark.parametrize("command", ["validate", "lint"])
def test_validate_and_lint_escape_what_the_file_says(hostile_root: Path, command: str) -> None:
    """File-checking commands escape hostile text too, on stderr and on stdout."""
    done = cli(command, str(hostile_root))
    assert done.returncode != 0
    assert_clean_lines(done.stderr)
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        assert "\x1b" not in line and "\x07" not in line  # noqa: PT018 - one property


def test_ls_json_names_are_unambiguous_and_valid_json(tmp_path: Path) -> None:
    """a<newline>b and a literal a\\nb, x<0xff> and a literal x\\xff, all differ in ls --json."""
    root = tmp_path / "root"
    names = [b"a\nb", b"a\\nb", b"x\xff", b"x\\xff"]
    tree = MetadataTree(root)
    tree.claim("ok").request("r").device("d.example.com", "p", "d0")
    tree.write()
    source = (root / "resourceclaims/ok/r/d.example.com-metadata.json").read_bytes()
    for name in names:
        directory = os.fsencode(root / "resourceclaims") + b"/" + name + b"/r"
        os.makedirs(directory)
        with open(directory + b"/d.example.com-metadata.json", "wb") as out:
            out.write(source)
    done = cli("ls", "--root", str(root), "--json")
    assert done.returncode == 0
    rows = json.loads(done.stdout.decode("utf-8"))  # valid UTF-8 JSON
    claims = [row["claim"] for row in rows]
    assert len(set(claims)) == len(claims) == 5
    assert {"a\\nb", "a\\\\nb", "x\\xff", "x\\\\xff"} <= set(claims)


def test_get_null_delimited_refuses_a_value_holding_nul(tmp_path: Path) -> None:
    """get -0 would print a value with a NUL as two records: refused, exit 65, like env."""
    tree = MetadataTree(tmp_path / "root")
    tree.claim("c").request("r").device("d.example.com", "p", "d0", uuid="a\x00b")
    tree.write()
    done = cli("get", "--root", str(tree.root), "--claim", "c", "--request", "r", "uuid", "-0")
    assert (done.returncode, done.stdout) == (65, b"")
    assert "holds a NUL character" in assert_clean_lines(done.stderr, 1)[0]


def test_validate_of_something_else_is_a_clear_type_error() -> None:
    """dm.validate(None) raises TypeError naming what it takes."""
    with pytest.raises(TypeError, match="takes a DeviceMetadata, not NoneType"):
        dm.validate(None)  # type: ignore[arg-type] # the point of the test


# --------------------------------------------------------------------------- early SIGINT

#: Where a traceback frame names its file, line and function.
_FRAME = re.compile(r'File "(?P<file>[^"]*)", line (?P<line>-?\d+), in (?P<function>\S+)')
#: The line where ``main()`` starts: a SIGINT that arrived while the interpreter was still
#: loading the entry point is raised there, before its first statement (no code can stop
#: that); anywhere later in the entry point, a traceback is ours.
_MAIN_LINE = importlib.import_module("dra_metadata_cli").main.__code__.co_firstlineno


def ours(frame: str) -> bool:
    """Whether a traceback frame line is in our code: the package, or the entry point once
    ``main()`` has started."""
    if f"{os.sep}dra_metadata{os.sep}" in frame:
        return True
    found = _FRAME.search(frame)
    return (
        found is not None
        and os.path.basename(found["file"]) == "dra_metadata_cli.py"
        and found["function"] != "<module>"
        and int(found["line"]) != _MAIN_LINE
    )


def _interrupt_early(args: tuple[str, ...], runs: int, latest: float) -> list[str]:
    """Run the command ``runs`` times, each sent SIGINT at a random time up to ``latest`` s.

    Returns a description of every run that broke a promise: a crash, partial
    output with exit 0, output that is not a prefix of the real output with exit
    130, a traceback from our code (:func:`ours`), an exit code other than 0 (it
    finished) or 130 (interrupted), or more than our one line on stderr.
    A SIGINT that lands before the entry point's ``main()`` has started meets only
    the interpreter's own start-up; such runs (ended by the signal, or by its
    KeyboardInterrupt in start-up code) are accepted. From ``main()`` on, every
    KeyboardInterrupt is the command's: one line and exit 130. Python 3.13 can also
    report that KeyboardInterrupt as a fatal error of an interpreter start-up stage
    (``init_import_site``, ``init_sys_streams``) with no Python frame; 3.11 and 3.12
    print the frames.
    """
    complete = cli(*args).stdout
    broken = []
    moments = random.Random(" ".join(args))  # the same moments every run
    for index in range(runs):
        process = subprocess.Popen(
            [sys.executable, *ENTRY, *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(moments.uniform(0.0, latest))
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
        text = err.decode("utf-8", "replace")
        frames = [line for line in text.splitlines() if line.strip().startswith("File ")]
        mine = [line for line in frames if ours(line)]
        in_startup = text.startswith("Fatal Python error: init_") and (
            "\nKeyboardInterrupt\n" in text
        )
        if process.returncode == -signal.SIGSEGV or mine:
            broken.append(f"run {index}: rc {process.returncode}: {text[-300:]}")
        elif process.returncode == 0:
            if out != complete:
                broken.append(f"run {index}: partial output {out[:80]!r}")
        elif process.returncode == 130:
            # Interrupted while (or after) writing: what was written is the start of
            # the real output, never anything else; exit 130 tells the caller to drop it.
            if text != "dra-metadata: interrupted\n" or not complete.startswith(out):
                broken.append(f"run {index}: {text!r} {out[:80]!r}")
        elif process.returncode not in (-signal.SIGINT, 1) or (
            process.returncode == 1 and not (frames or in_startup)
        ):
            broken.append(f"run {index}: rc {process.returncode}: {text[-300:]}")
    return broken


@pytest.mark.parametrize(
    "args",
    [
        ("env", "--root", ROOT),
        ("show", "--root", ROOT, "--claim", "nic", "--request", "eth"),
        ("get", "--root", ROOT, "--claim", "nic", "--request", "eth", "ips"),
        ("ls", "--root", ROOT),
    ],
)
def test_sigint_in_the_first_milliseconds_never_crashes_or_prints_our_traceback(
    args: tuple[str, ...],
) -> None:
    """50 early SIGINTs per command (200 in all): exit 0 or 130 with one line, never a crash."""
    assert _interrupt_early(args, runs=50, latest=0.07) == []


#: The entry point run with a SIGINT that arrives at one chosen moment (``sys.argv[1]``):
#: just before SIGINT is blocked (Python raises it as the blocking call returns), just
#: after it is released, or as the command starts (before its own handler is in place).
_SIGINT_AT = """
import os, signal, sys
# Python's own handler, as a terminal gives it: a background job (a shell without job
# control) starts its children with SIGINT ignored, and Python then installs none.
signal.signal(signal.SIGINT, signal.default_int_handler)
import dra_metadata_cli as entry
moment = sys.argv.pop(1)
real = entry.signal

def interrupt():
    os.kill(os.getpid(), signal.SIGINT)

class Signals:
    def __getattr__(self, name):
        return getattr(real, name)

    def pthread_sigmask(self, how, mask):
        if moment == "block" and how == real.SIG_BLOCK:
            interrupt()
        done = real.pthread_sigmask(how, mask)
        if moment == "unblock" and how == real.SIG_UNBLOCK:
            interrupt()
        return done

entry.signal = Signals()
if moment == "start":
    import dra_metadata._cli as cli
    command = cli.console_main
    def console_main():
        interrupt()
        return command()
    cli.console_main = console_main
sys.exit(entry.main())
"""


@pytest.mark.parametrize("moment", ["block", "unblock", "start"])
def test_a_sigint_at_each_moment_of_the_entry_point_is_one_line_and_130(moment: str) -> None:
    """Blocking, releasing, starting the command: a SIGINT there is 'interrupted', exit 130."""
    done = subprocess.run(
        [sys.executable, "-c", _SIGINT_AT, moment, "env", "--root", ROOT],
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (130, b""), done.stderr
    assert done.stderr == b"dra-metadata: interrupted\n"


def test_the_entry_point_loads_no_module_before_sigint_is_held() -> None:
    """Importing dra_metadata_cli runs no importlib code: every module it needs is loaded."""
    code = (
        "import sys; before = set(sys.modules); import dra_metadata_cli; "
        "print(sorted(set(sys.modules) - before - {'dra_metadata_cli'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")


def test_a_traceback_frame_is_ours_from_the_first_statement_of_main() -> None:
    """The early-SIGINT check counts the entry point's frames after main() has started."""
    path = os.path.join(str(REPO), "dra_metadata_cli.py")
    assert ours(f'  File "{path}", line {_MAIN_LINE + 20}, in main')
    assert ours(f'  File "{REPO}{os.sep}dra_metadata{os.sep}_cli{os.sep}__init__.py", line 3, in x')
    assert not ours(f'  File "{path}", line {_MAIN_LINE}, in main')
    assert not ours(f'  File "{path}", line 12, in <module>')
    assert not ours('  File "<frozen importlib._bootstrap>", line 1176, in _find_and_load')


@pytest.mark.adversarial_long
def test_sigint_in_the_first_milliseconds_long() -> None:
    """The long version: 2,000 runs of env."""
    assert _interrupt_early(("env", "--root", ROOT), runs=2000, latest=0.1) == []


def test_msgspec_alone_survives_an_early_sigint_once_datetime_is_imported() -> None:
    """The guard's reason: with datetime imported first, msgspec's init cannot be left half done.

    (Without the guard, 2 of 100 such runs died with SIGSEGV on this machine.)
    """
    code = "import datetime, msgspec; msgspec.json.Decoder(dict).decode(b'{}')"
    crashes = 0
    moments = random.Random(100)  # the same moments every run
    for _ in range(100):
        process = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
        time.sleep(moments.uniform(0.005, 0.06))
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        crashes += process.returncode == -signal.SIGSEGV
    assert crashes == 0


# --------------------------------------------------------------------------- deep nesting


@pytest.mark.parametrize("depth", [900, 990, 3000, 9000])
def test_lint_finds_an_unknown_key_whatever_its_value_nests_to(depth: int) -> None:
    """An unknown key holding a value nested as deep as Go reads is still reported."""
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", generation=1), requests=(dm.DeviceMetadataRequest("r"),)
    )
    text = dm.encode(md, [dm.V1BETA1]).decode()
    deep = '{"a":' * depth + "1" + "}" * depth
    data = text.replace('"requests"', f'"extra": {deep}, "requests"', 1)
    assert [(p.code, p.field) for p in dm.lint(data)] == [("DRA114", "extra")]
