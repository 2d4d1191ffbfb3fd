"""An unreadable request directory (a transient ``chmod 000``) met by a watcher of another uid.

The watcher runs in a real child process as an unprivileged uid (root reads
through any mode); the test, as root, takes the directory's permissions away,
adds a file meanwhile (so that the watcher must list the directory) and gives
them back. A directory that cannot be read is retried like a file that does
not decode: nothing ends the watch, and only a directory unreadable for
``error_timeout`` seconds gives one ``error`` event, for the directory.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import dra_metadata as dm
from dra_metadata._cli import main as cli_main
from tests.adversarial._asuser import CHMOD_UID, Child, need_root
from tests.adversarial.test_watch_hostile import (
    md,
    public_root,
    request_dir,
    warm_up,
    write,
)

__all__ = ["public_root"]  # the fixture, shared with the other watch tests

A_FILE = "a.example.com-metadata.json"
B_FILE = "b.example.com-metadata.json"


def say(text: str) -> None:
    """In the child: one line on stdout, at once."""
    os.write(1, (text.replace("\n", " ") + "\n").encode())


def watch_until_b(root: Path, error_timeout: float) -> int:
    """In the child: watch, say each event, stop at b's file."""
    events = dm.watch(
        claim="c", request="r", root=str(root), timeout=30, error_timeout=error_timeout
    )
    for event in events:
        say(f"{event.kind} {event.driver or '-'} {event.generation} {event.message}")
        if event.driver == "b.example.com":
            return 0
    return 3


def revoke(directory: Path, seconds: float) -> None:
    """``chmod 000`` the directory, add b's file (the watcher must list), restore it."""
    directory.chmod(0)
    try:
        write(directory / B_FILE, md(1))
        time.sleep(seconds)
    finally:
        directory.chmod(0o755)


def test_watch_carries_on_through_a_transient_chmod_000(public_root: Path) -> None:
    """Half a second without permission: no error, no end, b's file delivered after."""
    need_root()
    directory = request_dir(public_root)
    write(directory / A_FILE, md(1))
    warm_up(public_root)
    child = Child(CHMOD_UID, lambda: watch_until_b(public_root, 2.0))
    try:
        assert child.read_line(30).startswith(b"update a.example.com 1")
        revoke(directory, 0.5)
        result = child.wait(30)
    finally:
        child.kill()
    assert result.status == 0, result
    assert b"error" not in result.stdout, result
    assert result.stdout.splitlines()[-1].startswith(b"update b.example.com 1"), result


def test_a_directory_unreadable_longer_than_error_timeout_is_one_error_event(
    public_root: Path,
) -> None:
    """Past error_timeout: one error event naming the directory; the watch still goes on."""
    need_root()
    directory = request_dir(public_root)
    write(directory / A_FILE, md(1))
    warm_up(public_root)
    child = Child(CHMOD_UID, lambda: watch_until_b(public_root, 0.3))
    try:
        assert child.read_line(30).startswith(b"update a.example.com 1")
        directory.chmod(0)
        try:
            write(directory / B_FILE, md(1))
            line = child.read_line(30)
            assert line.startswith(b"error - None not readable for 0.3s"), line
            assert b"permission denied" in line.lower(), line
        finally:
            directory.chmod(0o755)
        result = child.wait(30)
    finally:
        child.kill()
    assert result.status == 0, result
    assert result.stdout.splitlines()[-1].startswith(b"update b.example.com 1"), result


def test_wait_for_and_cli_wait_ride_out_a_transient_chmod_000(public_root: Path) -> None:
    """``wait_for`` and ``dra-metadata wait`` return once b's file is readable (no exit 66)."""
    need_root()
    directory = request_dir(public_root)
    write(directory / A_FILE, md(1))
    warm_up(public_root)

    def wait_for_b() -> int:
        merged = dm.wait_for(
            claim="c", request="r", driver="b.example.com", root=str(public_root), timeout=20
        )
        say(f"got {merged.sources[0].driver}")
        args = ["wait", "--root", str(public_root), "--claim", "c", "--request", "r"]
        return cli_main([*args, "--timeout", "20"])

    directory.chmod(0)  # from the start: the first listing already fails
    try:
        child = Child(CHMOD_UID, wait_for_b)
        time.sleep(0.3)
        write(directory / B_FILE, md(1))
        time.sleep(0.5)
    finally:
        directory.chmod(0o755)
    result = child.wait(30)
    assert result.status == 0, result
    assert result.stdout == b"got b.example.com\n", result


def test_cli_watch_keeps_watching_through_a_transient_chmod_000(public_root: Path) -> None:
    """``dra-metadata watch`` prints b's update after the directory is readable again, exit 0."""
    need_root()
    directory = request_dir(public_root)
    write(directory / A_FILE, md(1))
    warm_up(public_root)

    def watch() -> int:
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child's own stdout, for good
        args = ["watch", "--root", str(public_root), "--claim", "c", "--request", "r"]
        return cli_main([*args, "--timeout", "3"])

    child = Child(CHMOD_UID, watch)
    try:
        assert b'"driver":"a.example.com"' in child.read_line(30)
        revoke(directory, 0.5)
        result = child.wait(30)
    finally:
        child.kill()
    assert result.status == 0, result
    assert b'"driver":"b.example.com"' in result.stdout, result
    assert b'"event":"error"' not in result.stdout, result
