"""Claim locks: an exclusive ``flock`` on a lock file, waited for no longer than a timeout.

The publisher serialises the calls on one claim, across threads and processes,
with a lock file in its own directory (and a second one in the CDI directory,
which every publisher of the driver shares). :class:`ClaimLock` holds one:

* the file is opened relative to its directory (:class:`~._safedir.SafeDir`:
  never through a link) and close-on-exec, so a program the driver executes
  never inherits it;
* the wait tries ``LOCK_EX | LOCK_NB`` with a growing pause (0.5 ms, doubling up
  to 20 ms) until a deadline; past it a :class:`~dra_metadata.PublishError` names
  the lock file and the processes ``/proc/locks`` says hold it;
* the lock is let go with ``LOCK_UN`` before the descriptor is closed: a child
  forked while the lock was held shares the open file description, and closing
  the parent's descriptor alone would leave the claim locked for the child's
  lifetime;
* the holder may remove the file while it holds it (nothing is left to
  serialise); a waiter that then gets the removed file's lock lets it go and
  opens the file anew.
"""

from __future__ import annotations

import os
import time
from typing import Final

from ._errors import PublishError
from ._safedir import SafeDir

__all__ = ["DEFAULT_LOCK_TIMEOUT", "ClaimLock", "lock_holders"]

#: How long, in seconds, a publisher call waits for a claim's lock by default.
DEFAULT_LOCK_TIMEOUT: Final = 30.0

_FIRST_PAUSE: Final = 0.0005
_LONGEST_PAUSE: Final = 0.02
_LOCK_MODE: Final = 0o600
_PROC_LOCKS: Final = "/proc/locks"


class ClaimLock:
    """An exclusive lock on the file ``name`` in ``directory``, held from :meth:`acquire` on."""

    def __init__(self, directory: SafeDir, name: str) -> None:
        self._dir = directory
        self.name = name
        self._fd = -1

    @property
    def path(self) -> str:
        """The lock file's path."""
        return os.path.join(self._dir.path, self.name)

    def acquire(self, *, deadline: float, timeout: float) -> None:
        """Take the lock (the file made 0600 if missing), or fail at ``deadline`` (monotonic).

        ``timeout`` is the wait the caller allowed, for the message.
        """
        import fcntl

        while True:
            fd = self._dir.open_file(self.name, os.O_RDWR | os.O_CREAT, _LOCK_MODE)
            try:
                self._wait(fd, deadline, timeout)
                if self._dir.same_file(self.name, fd):
                    self._fd = fd
                    return
                fcntl.flock(fd, fcntl.LOCK_UN)
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # removed by the holder we waited for: open the one there now

    def release(self, *, remove: bool = False) -> None:
        """Let the lock go (``LOCK_UN``, then close); with ``remove``, remove the file first."""
        import fcntl

        fd, self._fd = self._fd, -1
        if fd < 0:
            return
        try:
            if remove:
                self._dir.unlink(self.name)
        finally:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def _wait(self, fd: int, deadline: float, timeout: float) -> None:
        import fcntl

        pause = _FIRST_PAUSE
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            except OSError as err:
                raise self._dir.failure(err, self.name) from err
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._timed_out(fd, timeout)
            time.sleep(min(pause, left))
            pause = min(pause * 2, _LONGEST_PAUSE)

    def _timed_out(self, fd: int, timeout: float) -> PublishError:
        holders = [_describe_process(pid) for pid in lock_holders(fd)]
        held_by = " and ".join(holders) if holders else "a process /proc/locks does not name"
        return PublishError(
            f"{self._dir.what}: {self.path}: still locked after {timeout:g} s, held by "
            f"{held_by}: a call on this claim has not ended, or a process that inherited "
            "the lock holds it; end that process, or give lock_timeout more time",
            path=self.path,
        )


def lock_holders(fd: int) -> list[int]:
    """The processes holding a ``flock`` on the file open as ``fd``, as ``/proc/locks`` says.

    The kernel lists each lock with the ID of the process that took it (in the
    reader's PID namespace); waiters (``->``) are left out. Empty when Linux does
    not say (no ``/proc``, or a holder outside this PID namespace).
    """
    info = os.fstat(fd)
    inode = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open(_PROC_LOCKS, encoding="ascii", errors="replace") as locks:
            lines = locks.read().splitlines()
    except OSError:
        return []
    pids: list[int] = []
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or fields[5] != inode:
            continue
        try:
            pid = int(fields[4])
        except ValueError:
            continue
        if pid > 0 and pid not in pids:
            pids.append(pid)
    return pids


def _describe_process(pid: int) -> str:
    """``process 1234 (python3 driver.py)``; a holder that is gone says so."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            raw = cmdline.read(200)
    except OSError:
        return f"process {pid} (gone: a child it forked may hold the lock now)"
    command = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    command = "".join(char if char.isprintable() else "?" for char in command)
    if not command:
        try:
            with open(f"/proc/{pid}/comm", "rb") as comm:
                command = comm.read().strip().decode("utf-8", "replace")
        except OSError:
            command = "?"
    me = ", this process" if pid == os.getpid() else ""
    return f"process {pid} ({command}{me})"
