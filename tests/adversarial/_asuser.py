"""Run a function in a real child process under another uid (fork, then setuid).

The interpreter lives where another user may not read it (``/root/.pyenv``), so
the child cannot ``exec`` a fresh Python as that user: it is forked with every
module it needs already imported, then drops to the uid and runs the function.
What it writes to descriptors 1 and 2 comes back, with its exit status.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
import warnings
from collections.abc import Callable
from typing import NamedTuple

import pytest

#: Spare uids for the tests (no account needs to exist): each test its own, so that
#: exhausting one uid's inotify instances disturbs nothing else running on the machine.
INOTIFY_UID = 64123
CHMOD_UID = 65534


class Result(NamedTuple):
    status: int  # the exit code, or -signal
    stdout: bytes
    stderr: bytes


def need_root() -> None:
    """Skip unless the tests run as root (they need to become another user)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to run the child as another uid")


class Child:
    """A forked child running ``func()`` as ``uid``; its exit code is ``func``'s return value."""

    def __init__(self, uid: int, func: Callable[[], int]) -> None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        with warnings.catch_warnings():  # 3.12+ warns about fork in a threaded process
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 70
            try:
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                code = func()
            except BaseException as err:
                os.write(2, f"child failed: {type(err).__name__}: {err}\n".encode())
                code = 70
            finally:
                os._exit(code)
        os.close(out_w)
        os.close(err_w)
        self.pid = pid
        self._pipes = {out_r: bytearray(), err_r: bytearray()}
        self._out, self._err = out_r, err_r
        self._status: int | None = None

    def read_line(self, timeout: float) -> bytes:
        """The next line the child writes on stdout (``b""`` when it ends first)."""
        end = time.monotonic() + timeout
        buffer = self._pipes[self._out]
        while b"\n" not in buffer:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no line from the child in {timeout}s: {bytes(buffer)!r}")
            ready, _, _ = select.select(list(self._pipes), [], [], left)
            if not self._pump(ready) and self._out not in self._pipes:
                break
        line, sep, rest = bytes(buffer).partition(b"\n")
        buffer[:] = rest
        return line + sep

    def _pump(self, ready: list[int]) -> bool:
        got = False
        for fd in ready:
            chunk = os.read(fd, 65536)
            if chunk:
                self._pipes[fd] += chunk
                got = True
        return got

    def wait(self, timeout: float) -> Result:
        """Collect everything until the child exits (killed after ``timeout`` seconds)."""
        end = time.monotonic() + timeout
        out, err = bytearray(), bytearray()
        open_fds = {self._out: out, self._err: err}
        out += self._pipes[self._out]
        err += self._pipes[self._err]
        while open_fds:
            left = end - time.monotonic()
            if left <= 0:
                self.kill()
                end = time.monotonic() + 5
                continue
            ready, _, _ = select.select(list(open_fds), [], [], left)
            for fd in ready:
                chunk = os.read(fd, 65536)
                if chunk:
                    open_fds[fd] += chunk
                else:
                    os.close(fd)
                    del open_fds[fd]
        _, status = os.waitpid(self.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        return Result(code, bytes(out), bytes(err))

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


def run_as(uid: int, func: Callable[[], int], *, timeout: float = 60) -> Result:
    """Run ``func()`` in a child as ``uid`` and wait for it."""
    return Child(uid, func).wait(timeout)
