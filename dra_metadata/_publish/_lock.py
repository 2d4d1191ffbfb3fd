"""The claim's locks: an exclusive ``flock`` on a lock file, waited for no longer than the call.

The publisher serialises the calls on one claim, across threads and processes,
with a lock file in its own directory (and a second one in the CDI directory,
which every publisher of the driver shares). :class:`ClaimLock` holds one:

* the file is opened relative to its directory (:class:`~.._safedir.SafeDir`:
  never through a link), read-only (a lock needs no more, so an immutable or
  append-only file there still serves) and close-on-exec, so a program the
  driver executes never inherits it;
* what is at the name and is no lock file of ours (a link, a FIFO, a socket, a
  second name of another file) is removed and the lock made anew; a directory
  there is refused with its fix (``rm -r``): no call takes the lock while it is
  there, and :meth:`ClaimLock.acquire` says so;
* the wait tries ``LOCK_EX | LOCK_NB`` with a growing pause (0.5 ms, doubling up
  to 20 ms) until the call's deadline, a safe point for signals between tries
  (:meth:`~._call.Call.checkpoint`); past the deadline a
  :class:`~dra_metadata.PublishError` names the lock file and the processes
  ``/proc/locks`` says hold it;
* the lock is let go with ``LOCK_UN`` before the descriptor is closed: a child
  forked while the lock was held shares the open file description, and closing
  the parent's descriptor alone would leave the claim locked for the child's
  lifetime;
* the holder may remove the file while it holds it (nothing is left to
  serialise); a waiter that then gets the removed file's lock (its link count
  is 0) lets it go and opens the file anew.

The call runs with its signals held back (:mod:`._call`): no ``KeyboardInterrupt``
lands between taking the lock and the ``with`` block that lets it go.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from typing import Final

from .._errors import PublishError
from .._safedir import SafeDir
from ._call import Call

__all__ = ["DEFAULT_LOCK_TIMEOUT", "ClaimLock", "lock_holders"]

#: How long, in seconds, a publisher call waits for a claim's lock by default.
DEFAULT_LOCK_TIMEOUT: Final = 30.0

_FIRST_PAUSE: Final = 0.0005
_LONGEST_PAUSE: Final = 0.02
_LOCK_MODE: Final = 0o600
_PROC_LOCKS: Final = "/proc/locks"
#: Tries at a name where something else keeps appearing before the call gives up.
_MAX_CLEARS: Final = 8


class ClaimLock:
    """An exclusive lock on the file ``name`` in ``directory``, for one call.

    ``belongs`` names the lock in errors (``the claim's lock``). Enter it as a
    context manager, then :meth:`acquire`: leaving the block lets go of whatever
    was taken, also when the wait itself was cut short.
    """

    def __init__(self, directory: SafeDir, name: str, call: Call, belongs: str) -> None:
        self._dir = directory
        self.name = name
        self._call = call
        self._belongs = belongs
        self._fd = -1
        #: Whether leaving the block removes the file (nothing left to serialise).
        self.remove = False
        #: Why the file could not be removed when the lock was let go (None: it was, or stays).
        self.left: PublishError | None = None

    @property
    def path(self) -> str:
        """The lock file's path."""
        return os.path.join(self._dir.path, self.name)

    @property
    def held(self) -> bool:
        """Whether the lock is held."""
        return self._fd >= 0

    def acquire(self, *, create: bool = True) -> bool:
        """Take the lock (the file made 0600 if missing), or fail at the call's deadline.

        Without ``create``, a missing file is not made: False, and nothing is held.
        """
        for _ in range(_MAX_CLEARS):
            fd = self._open(create)
            if fd is None:
                return False
            if fd < 0:  # something else was at the name, and is gone now
                continue
            self._fd = fd
            self._wait()
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
                return True
            self._let_go()
            if info.st_nlink:  # a FIFO, or a second name of another file
                self._clear()
            # else: removed by the holder we waited for: open the one there now
        raise self._dir.blocked(self.name, self._belongs)

    def _open(self, create: bool) -> int | None:
        """The lock file's descriptor; None: missing (not ``create``); -1: something cleared."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            return os.open(
                self.name, flags | (os.O_CREAT if create else 0), _LOCK_MODE, dir_fd=self._dir.fd
            )
        except FileNotFoundError as err:
            if create:
                raise self._dir.failure(err, self.name) from err
            return None
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # a link, socket, dir
                self._clear()
                return -1
            raise self._dir.failure(err, self.name) from err

    def _clear(self) -> None:
        # logging loads only when something is logged
        from .._log import logger

        if self._dir.clear(self.name, self._belongs):
            logger().warning(
                "%s: %s: not a lock file of this publisher where %s belongs: removed",
                self._call.label,
                self.path,
                self._belongs,
            )

    def __enter__(self) -> ClaimLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """Let the lock go (``LOCK_UN``, then close); with :attr:`remove`, remove the file first.

        A file that cannot be removed (immutable, say) is kept, with the reason in
        :attr:`left`; the lock is let go all the same.
        """
        if self._fd < 0:
            return
        try:
            if self.remove:
                try:
                    self._dir.clear(self.name, self._belongs)
                except PublishError as err:
                    self.left = err
        finally:
            self._let_go()

    def _let_go(self) -> None:
        fd, self._fd = self._fd, -1
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _wait(self) -> None:
        pause = _FIRST_PAUSE
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            except OSError as err:
                self._let_go()
                raise self._dir.failure(err, self.name) from err
            left = self._call.deadline - time.monotonic()
            if left <= 0:
                error = self._timed_out()
                self._let_go()
                raise error
            self._call.checkpoint()
            time.sleep(min(pause, left))
            pause = min(pause * 2, _LONGEST_PAUSE)

    def _timed_out(self) -> PublishError:
        holders = [_describe_process(pid) for pid in lock_holders(self._fd)]
        held_by = " and ".join(holders) if holders else "a process /proc/locks does not name"
        return PublishError(
            f"{self._call.label}: {self.path}: still locked after {self._call.timeout:g} s, "
            f"held by {held_by}: a call on this claim has not ended, or a process that "
            "inherited the lock holds it; end that process, or give lock_timeout more time",
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
