"""The fence: how an in-place writer keeps every reader from seeing half an object.

A driver that updates a metadata file in place (the same inode, so that running
containers see it through their bind mounts) writes it in several steps; a
reader in between would see an empty file, or the first part of the new object
over the rest of the old one. The fence is a lock protocol on the metadata
file itself (``docs/writing.md``, "Updating a file in place"):

* the **writer** takes a *write* lock over the whole file (``fcntl``
  ``F_OFD_SETLK``, ``F_WRLCK``, start 0, length 0 = to the end) on its write
  descriptor before its first byte, waiting at most :data:`WRITER_WAIT` for
  readers to finish, and lets it go (``F_UNLCK``) after its last byte, before
  it closes the descriptor; past the wait it writes unfenced;
* a **reader** takes a *read* lock over the whole file on its read descriptor
  for the length of its read only. A writer's lock held means a write is under
  way: a watch looks again later (:func:`shared` with ``wait=0``), a one-shot
  read waits up to :data:`READER_WAIT`.

Why a record lock (``fcntl``) and not ``flock``: a write lock can only be taken
through a descriptor open for writing, and a container sees the file through a
read-only bind mount. So a write lock held on the file is, by construction, a
writer's: the reader may wait for it. A process in the container can hold a
read lock (any reader can), so the writer's wait for readers is bounded: no
container can hold a driver back. Why the open-file-description kind
(``F_OFD_*``, Linux 3.15): a classic POSIX lock belongs to the process, so a
reader in the writer's own process would never see it, and closing any other
descriptor of the file would drop it. Both kinds conflict with each other, so
a writer using the classic ``F_SETLK`` (``syscall.FcntlFlock`` in Go) is fenced
as well. The lock lives on the inode: it reaches through bind mounts and
across mount namespaces.

Where the file system keeps no locks (``ENOLCK``, ``EINVAL``, ``EOPNOTSUPP``)
or the platform has no ``F_OFD_SETLK``, there is no fence: writer and reader go
on as if they held it, and the watch's rule for unfenced writers applies.
``fcntl`` is a shared library: it is loaded by the first call, not on import.
"""

from __future__ import annotations

import contextlib
import errno
import struct
import sys
import time
from typing import Final

__all__ = ["READER_WAIT", "WRITER_WAIT", "exclusive", "release", "shared"]

#: Seconds an in-place writer waits for readers' read locks before it writes unfenced.
#: A reader holds one for the length of one read (microseconds); a process that holds
#: one longer cannot delay a driver more than this.
WRITER_WAIT: Final = 0.1
#: Seconds a one-shot read (``read_*``, ``get``, ``env`` ...) waits for a writer's fence
#: before it reads anyway (the bytes are then checked as any others: decoded or refused).
READER_WAIT: Final = 1.0

# struct flock on Linux LP64: l_type, l_whence (short), l_start, l_len (off_t), l_pid.
_FLOCK: Final = struct.Struct("@hhqqi4x")
_F_RDLCK, _F_WRLCK, _F_UNLCK = 0, 1, 2
_BUSY: Final = frozenset({errno.EAGAIN, errno.EACCES})
_FIRST_PAUSE: Final = 0.00005
_LONGEST_PAUSE: Final = 0.005
_SUPPORTED: Final = sys.platform == "linux" and _FLOCK.size == 32
_READ, _WRITE, _UNLOCK = (_FLOCK.pack(kind, 0, 0, 0, 0) for kind in (_F_RDLCK, _F_WRLCK, _F_UNLCK))


def _try(fd: int, request: bytes) -> bool:
    """One non-blocking attempt: True when taken (or there is nothing to take)."""
    import fcntl  # a shared library: loaded by the first read, not by ``import dra_metadata``

    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, request)
    except OSError as err:
        return err.errno not in _BUSY  # not busy: no locks on this file system, no fence
    return True


def _take(fd: int, request: bytes, wait: float) -> bool:
    if not _SUPPORTED:
        return True
    if _try(fd, request):
        return True
    if wait <= 0:
        return False
    deadline = time.monotonic() + wait
    pause = _FIRST_PAUSE
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, _LONGEST_PAUSE)
        if _try(fd, request):
            return True


def shared(fd: int, *, wait: float) -> bool:
    """Take a read lock over ``fd``'s whole file; False when a writer holds it after ``wait`` s.

    ``fd`` is open for reading. The lock goes with the descriptor's close (or
    :func:`release`). ``wait=0``: one attempt.
    """
    return _take(fd, _READ, wait)


def exclusive(fd: int, *, wait: float = WRITER_WAIT) -> bool:
    """Take the writer's lock over ``fd``'s whole file; False when readers hold it after ``wait`` s.

    ``fd`` is open for writing. The caller writes either way (False: unfenced)
    and calls :func:`release` after its last byte, before it closes ``fd``.
    """
    return _take(fd, _WRITE, wait)


def release(fd: int) -> None:
    """Let go of the lock ``fd`` holds, if any: before closing it (its close wakes readers)."""
    if _SUPPORTED:
        # fcntl: only where a lock is let go (a read that took none never needs it)
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _UNLOCK)
