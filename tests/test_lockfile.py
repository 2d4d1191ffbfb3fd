"""Claim locks on their own: a bounded wait, the holder named, and nothing a child keeps.

Every lock here is a real ``flock`` held by a real process: a helper process that
holds the file, a child made with ``os.fork()``, a program started with
``subprocess``. The publisher's use of the lock is tested in tests/test_publish.py
and tests/adversarial/test_publish_faults.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata._publish._call import Call
from dra_metadata._publish._lock import ClaimLock, lock_holders
from dra_metadata._safedir import SafeDir, made

HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("locked", flush=True)
    sys.stdin.readline()
    """
)


@contextmanager
def held_elsewhere(path: Path | str) -> Iterator[subprocess.Popen[str]]:
    """Another process holding an exclusive flock on ``path`` until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "locked\n"
        yield proc
    finally:
        proc.communicate("\n", timeout=30)


def can_lock(path: Path | str) -> bool:
    """Whether a fresh open of ``path`` gets the exclusive lock at once (let go right after)."""
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def opened(path: Path) -> SafeDir:
    """``path`` opened as a root, as the publisher opens its directories."""
    return made(SafeDir.open_root(str(path), "prepare", create=False))


def claim_lock(directory: SafeDir, timeout: float = 20.0) -> ClaimLock:
    """The lock ``c.lock`` in ``directory``, for a call on ml/c that waits ``timeout`` s."""
    call = Call("prepare", dm.ClaimRef(name="c", namespace="ml", uid="u"), None, timeout)
    return ClaimLock(directory, "c.lock", call, "the claim's lock")


def test_a_lock_held_elsewhere_times_out_naming_the_file_and_the_holder(tmp_path: Path) -> None:
    """Past the timeout: PublishError naming the lock file, the holder's PID and command."""
    with held_elsewhere(tmp_path / "c.lock") as holder, opened(tmp_path) as directory:
        started = time.monotonic()
        lock = claim_lock(directory, 0.3)
        with pytest.raises(dm.PublishError) as err, lock:
            lock.acquire()
        waited = time.monotonic() - started
    assert 0.3 <= waited < 5
    assert str(err.value).startswith(
        f"prepare ml/c: {tmp_path / 'c.lock'}: still locked after 0.3 s"
    )
    assert f"held by process {holder.pid} ({sys.executable} -c " in str(err.value)
    assert err.value.path == str(tmp_path / "c.lock")


def test_lock_holders_maps_the_inode_to_the_pid_in_proc_locks(tmp_path: Path) -> None:
    """/proc/locks names the holder of this file, and nobody for a file no one locks."""
    (tmp_path / "free").write_bytes(b"")
    with held_elsewhere(tmp_path / "held") as holder:
        fd = os.open(tmp_path / "held", os.O_RDONLY)
        free = os.open(tmp_path / "free", os.O_RDONLY)
        try:
            assert lock_holders(fd) == [holder.pid]
            assert lock_holders(free) == []
        finally:
            os.close(fd)
            os.close(free)


def test_a_wait_ends_as_soon_as_the_holder_lets_go(tmp_path: Path) -> None:
    """A lock let go during the wait is taken then, well before the deadline."""
    with opened(tmp_path) as directory:
        first = claim_lock(directory, 1)
        first.acquire()
        timer = threading.Timer(0.2, first.release)
        timer.start()
        second = claim_lock(directory)
        started = time.monotonic()
        second.acquire()
        assert time.monotonic() - started < 5
        timer.join()
        second.release()


def test_a_lock_file_removed_by_its_holder_is_opened_anew_by_the_waiter(tmp_path: Path) -> None:
    """The holder removes the file as it lets go: the waiter locks the file there now."""
    with opened(tmp_path) as directory:
        first = claim_lock(directory, 1)
        first.acquire()
        first.remove = True
        timer = threading.Timer(0.2, first.release)
        timer.start()
        second = claim_lock(directory)
        second.acquire()
        timer.join()
        assert (tmp_path / "c.lock").exists()
        assert not can_lock(tmp_path / "c.lock")  # the waiter holds the file that is there
        second.remove = True
        second.release()
    assert not (tmp_path / "c.lock").exists()


def test_a_forked_child_does_not_keep_the_lock_once_it_is_released(tmp_path: Path) -> None:
    """A child forked while the lock is held shares it; release (LOCK_UN) frees it for all."""
    with opened(tmp_path) as directory:
        lock = claim_lock(directory, 1)
        lock.acquire()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only sleeps
            time.sleep(30)
            os._exit(0)
        try:
            assert not can_lock(tmp_path / "c.lock")
            lock.release()
            assert can_lock(tmp_path / "c.lock")  # the child still lives, with its copy
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)


LIST_FDS = textwrap.dedent(
    """
    import json, os
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    print(json.dumps(targets), flush=True)
    """
)


def test_a_program_executed_while_the_lock_is_held_does_not_inherit_it(tmp_path: Path) -> None:
    """The lock's descriptor is close-on-exec: a child started without closing fds has none."""
    with opened(tmp_path) as directory:
        lock = claim_lock(directory, 1)
        lock.acquire()
        try:
            done = subprocess.run(
                [sys.executable, "-c", LIST_FDS],
                close_fds=False,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
        finally:
            lock.release()
    targets = json.loads(done.stdout)
    assert any(target.startswith("pipe:") for target in targets)  # it lists what it inherited
    assert str(tmp_path / "c.lock") not in targets
    assert str(tmp_path) not in targets  # nor the directory's descriptor
