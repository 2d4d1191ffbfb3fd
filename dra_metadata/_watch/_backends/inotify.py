"""The inotify backend: Linux inotify through ``ctypes``, per-path watches on one descriptor.

Why not a file-watching library: a container sees each metadata file as a
single-file bind mount, so only a watch on the file path itself hears a host
writer; a watch must move when a path starts to show another inode (a mount
appears over a file); and a watcher that waits for deferred data should cost
nothing while nothing happens. inotify gives all three: the descriptor is
readable exactly when something happened, a watch is added or moved by one
system call, and waiting is a plain ``poll()`` (or the asyncio loop's reader)
with no periodic wake-up.

:class:`Inotify` meets :class:`~.base.Notifier`: it only says *which watched
path* saw something; what happened is found out by looking at the path again
(see :mod:`dra_metadata._watch._session`). A queue overflow (the kernel dropped events) is
reported as such, so the caller can look at everything again.

It also keeps, per watched file, what the kernel said of its handles and
writes (:class:`~.base.Handles`): that is how a watch reads a change the moment
its writer closes the file, and waits when it cannot be sure. Only what can
change what a look would find wakes a watch up: a write does not (its close
does, or the end of the wait for it), nor does an open, a read, or a reader's
close, unless it ends the wait of bytes written before.

Importing this module loads ``ctypes``; the package's
:func:`~dra_metadata._watch._backends.open_notifier` imports it only when a
watch starts.
"""

from __future__ import annotations

import ctypes
import errno
import math
import os
import select
import struct
import sys
import time
from typing import Final

from .base import Handles

__all__ = ["Inotify", "InotifyUnavailableError"]

# <sys/inotify.h>
_IN_ACCESS: Final = 0x00000001
_IN_MODIFY: Final = 0x00000002
_IN_ATTRIB: Final = 0x00000004
_IN_CLOSE_WRITE: Final = 0x00000008
_IN_CLOSE_NOWRITE: Final = 0x00000010
_IN_OPEN: Final = 0x00000020
_IN_MOVED_FROM: Final = 0x00000040
_IN_MOVED_TO: Final = 0x00000080
_IN_CREATE: Final = 0x00000100
_IN_DELETE: Final = 0x00000200
_IN_DELETE_SELF: Final = 0x00000400
_IN_MOVE_SELF: Final = 0x00000800
_IN_Q_OVERFLOW: Final = 0x00004000
_IN_IGNORED: Final = 0x00008000
_IN_ONLYDIR: Final = 0x01000000
_IN_DONT_FOLLOW: Final = 0x02000000
_IN_NONBLOCK: Final = os.O_NONBLOCK
_FS_ENCODING: Final = sys.getfilesystemencoding()
_FS_ERRORS: Final = sys.getfilesystemencodeerrors()
_IN_CLOEXEC: Final = os.O_CLOEXEC

#: A metadata file: its content changed (each write, and the writer's close), its
#: link count or mode changed (a host rename over it leaves ``st_nlink == 0``),
#: or it went away; and every open and close, which :class:`Handles` counts.
#: ``IN_ACCESS`` (a read) tells a reader's handle from one that may write.
#: ``IN_UNMOUNT`` and ``IN_IGNORED`` come without asking.
FILE_MASK: Final = (
    _IN_ACCESS
    | _IN_MODIFY
    | _IN_CLOSE_WRITE
    | _IN_CLOSE_NOWRITE
    | _IN_OPEN
    | _IN_ATTRIB
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
)
#: A directory: entries appeared or went away, or the directory itself did. No
#: ``IN_MODIFY``: the files' own watches report content changes.
DIR_MASK: Final = (
    _IN_CREATE
    | _IN_MOVED_TO
    | _IN_MOVED_FROM
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
)

_EVENT: Final = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)
_EVENT_SIZE: Final = _EVENT.size
_READ_SIZE: Final = 64 * 1024
# The longest wait poll() takes, in milliseconds (a C int); longer waits just wake up once.
_MAX_POLL_MS: Final = 2**31 - 1


class InotifyUnavailableError(OSError):
    """inotify cannot be used here (not Linux, no libc symbol, or the instance limit)."""


class _Libc:
    """The three inotify entry points of the C library, typed."""

    def __init__(self) -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init1 = libc.inotify_init1
            add_watch = libc.inotify_add_watch
            rm_watch = libc.inotify_rm_watch
        except (OSError, AttributeError) as err:
            raise InotifyUnavailableError(f"inotify is not available: {err}") from None
        init1.argtypes = [ctypes.c_int]
        init1.restype = ctypes.c_int
        add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        add_watch.restype = ctypes.c_int
        rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        rm_watch.restype = ctypes.c_int
        self.init1 = init1
        self.add_watch = add_watch
        self.rm_watch = rm_watch


_libc: _Libc | None = None


def _get_libc() -> _Libc:
    global _libc  # loaded once, on first use
    if _libc is None:
        _libc = _Libc()
    return _libc


class Inotify:
    """One inotify instance; watches are keyed by the path they were asked for.

    :meth:`add` (re)points a path's watch at the inode the path shows now;
    :meth:`drain` reads what the kernel queued and :meth:`take` hands out the
    set of paths that saw something. :meth:`wait` does both after blocking up
    to a timeout; the asyncio driver instead calls :meth:`drain` from the
    loop's reader callback on :meth:`fileno`.
    """

    def __init__(self) -> None:
        self._libc = _get_libc()
        fd: int = self._libc.init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise InotifyUnavailableError(code, f"inotify_init1: {os.strerror(code)}")
        self._fd = fd
        self._path_of: dict[int, str] = {}
        self._wd_of: dict[str, int] = {}
        self._pending: set[str] = set()
        self._overflow = False
        self._handles: dict[int, Handles] = {}  # file watches only
        # Per directory watch that reports some entries only, how their names end.
        self._entries: dict[int, bytes] = {}
        # Watches replaced by a newer one on the same path, removed before the next wait.
        self._dropped: list[int] = []
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)

    def fileno(self) -> int:
        """The descriptor, readable when events are queued."""
        return self._fd

    def add(
        self, path: str, *, directory: bool, follow: bool = False, entries: str | None = None
    ) -> int:
        """Watch the inode ``path`` shows now; 0 on success, else the ``errno``.

        Adding a path again moves its watch to the inode the path shows now (a
        mount appeared over it, or it was replaced); a watch on the same inode
        stays. A directory watch is refused (``ENOTDIR``) for anything else. A
        link is not followed (``IN_DONT_FOLLOW``) unless ``follow``. A
        directory's entries whose names do not end with ``entries`` (when
        given) wake nobody and are not reported: a writer that writes a
        temporary file and renames it costs one wake-up, the rename's.
        """
        mask = DIR_MASK if directory else FILE_MASK
        if not follow:
            mask |= _IN_DONT_FOLLOW
        try:
            encoded = path.encode(_FS_ENCODING, _FS_ERRORS)  # os.fsencode, for a str
        except UnicodeError:
            return errno.EINVAL
        if b"\x00" in encoded:
            return errno.EINVAL
        wd = self._libc.add_watch(self._fd, encoded, mask)
        if wd < 0:
            code: int = ctypes.get_errno()
            return code or errno.EIO
        old = self._wd_of.get(path)
        if old is not None and old != wd:
            # The path shows another inode (replaced, or a mount over it): its old watch
            # is forgotten now and removed from the kernel before the next wait, so that
            # the look that moved the watch reads the new file first.
            self._forget(old, later=True)
        if not directory and wd not in self._handles:
            self._handles[wd] = Handles()
        other = self._path_of.get(wd)
        if other is not None and other != path:
            # The same inode under two paths (a hard link, a bind mount of a directory
            # seen twice): the newest path wins the mapping, the other one is dropped.
            self._wd_of.pop(other, None)
        self._path_of[wd] = path
        self._wd_of[path] = wd
        if directory:
            if entries is None:
                self._entries.pop(wd, None)
            else:
                self._entries[wd] = os.fsencode(entries)
        return 0

    def remove(self, path: str) -> None:
        """Stop watching ``path`` (nothing happens when it is not watched)."""
        wd = self._wd_of.get(path)
        if wd is not None:
            self._forget(wd)

    def _forget(self, wd: int, *, later: bool = False) -> None:
        """Drop what is known of watch ``wd`` and remove it (``later``: before the next wait).

        Its events that are still queued name no path any more and are skipped.
        """
        self._handles.pop(wd, None)
        self._entries.pop(wd, None)
        path = self._path_of.pop(wd, None)
        if path is not None and self._wd_of.get(path) == wd:
            del self._wd_of[path]
        if later:
            self._dropped.append(wd)
        else:
            self._libc.rm_watch(self._fd, wd)  # fails harmlessly if the kernel dropped it

    def _remove_dropped(self) -> None:
        """Remove from the kernel the watches :meth:`add` replaced."""
        dropped, self._dropped = self._dropped, []
        for wd in dropped:
            if wd not in self._path_of:  # not handed out again meanwhile
                self._libc.rm_watch(self._fd, wd)

    def watching(self, path: str) -> bool:
        """Whether ``path`` has a watch the kernel has not dropped."""
        return path in self._wd_of

    def handles(self, path: str) -> Handles | None:
        """What the kernel said of ``path``'s handles; ``None`` when no file watch has it."""
        wd = self._wd_of.get(path)
        return None if wd is None else self._handles.get(wd)

    def watched(self) -> dict[str, int]:
        """Path -> watch descriptor, for tests and debugging."""
        return dict(self._wd_of)

    def drain(self) -> None:
        """Read every queued event without blocking; remember the paths they name."""
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                return
            except InterruptedError:  # pragma: no cover - PEP 475 retries os.read itself
                continue
            self._parse(data)
            if len(data) < _READ_SIZE // 2:
                # The queue was emptied (a read hands out what is queued, up to the
                # size): what comes later makes the descriptor readable again.
                return

    def _parse(self, data: bytes) -> None:
        offset, end = 0, len(data)
        unpack = _EVENT.unpack_from
        all_handles, pending, entries = self._handles, self._pending, self._entries
        now = time.monotonic()
        while offset + _EVENT_SIZE <= end:  # the kernel hands out whole events
            wd, mask, _cookie, length = unpack(data, offset)
            offset += _EVENT_SIZE + length
            handles = all_handles.get(wd)
            if handles is None:
                if length:
                    # A directory's entry came, went or was renamed.
                    name = data[offset - length : offset].rstrip(b"\x00")
                    ending = entries.get(wd)
                    if ending is None or name.endswith(ending):
                        self._other(wd, mask, name)
                    # else nothing the watch follows (a writer's temporary file)
                else:
                    self._other(wd, mask, b"")
            elif mask & _IN_MODIFY:
                handles.modified(now)
            elif mask & _IN_OPEN:
                handles.opened(now)
            elif mask & (_IN_CLOSE_WRITE | _IN_CLOSE_NOWRITE):
                if handles.closed(wrote=bool(mask & _IN_CLOSE_WRITE), now=now):
                    pending.add(self._path_of[wd])
            elif mask & _IN_ACCESS:
                if handles.accessed(now):
                    pending.add(self._path_of[wd])
            elif mask & _IN_IGNORED:
                self._other(wd, mask, b"")
            else:  # links or mode changed, moved or deleted: a look
                pending.add(self._path_of[wd])

    def _other(self, wd: int, mask: int, name: bytes) -> None:
        """One event that counts no handle: an entry of a directory, a file's links, a loss."""
        if mask & _IN_Q_OVERFLOW:
            self._overflow = True
            now = time.monotonic()
            for lost in self._handles.values():  # counts lost: read once quiet
                lost.lost(now)
            return
        path = self._path_of.get(wd)
        if path is None:
            return  # a watch we already dropped
        if name:
            # A directory's entry came, went or was renamed: name the entry, the path
            # given to add() joined to the name as os.path.join would (a name has no
            # "/"), decoded as os.fsdecode would.
            text = name.decode(_FS_ENCODING, _FS_ERRORS)
            self._pending.add(path + text if path.endswith("/") else f"{path}/{text}")
            return
        self._pending.add(path)
        if mask & _IN_IGNORED:
            # The kernel removed the watch (file deleted, unmounted): forget it.
            del self._path_of[wd]
            self._handles.pop(wd, None)
            self._entries.pop(wd, None)
            if self._wd_of.get(path) == wd:
                del self._wd_of[path]

    def take(self) -> tuple[set[str], bool]:
        """The paths that saw events since the last call, and whether events were lost.

        A file whose bytes became ready by the clock (:meth:`Handles.announce`) is
        named too.
        """
        if self._dropped:  # the asyncio driver takes before it waits
            self._remove_dropped()
        now = time.monotonic()
        for wd, handles in self._handles.items():
            if handles.written_at is not None and handles.announce(now):
                self._pending.add(self._path_of[wd])
        pending, overflow = self._pending, self._overflow
        self._pending, self._overflow = set(), False
        return pending, overflow

    def wait(self, timeout: float) -> tuple[set[str], bool]:
        """Block until events worth a look arrive or ``timeout`` seconds pass; then :meth:`take`.

        Events that change nothing a look would find (opens, reads, writes not
        closed yet) do not end the wait.
        """
        if self._dropped:
            self._remove_dropped()
        end = time.monotonic() + timeout
        while not (self._pending or self._overflow):
            now = time.monotonic()
            due = self.due()
            if due is not None and due <= now:
                break  # take() names the file whose bytes are ready
            left = max(0.0, min(end, due if due is not None else end) - now)
            if not self._poll.poll(math.ceil(min(left * 1000, _MAX_POLL_MS))) and now + left >= end:
                break  # the time is up
            self.drain()
        return self.take()

    def due(self) -> float | None:
        """When the first file's bytes become ready by the clock (monotonic), or ``None``."""
        now = time.monotonic()
        due = None
        for handles in self._handles.values():
            at = handles.due(now)
            if at is not None and (due is None or at < due):
                due = at
        return due

    def close(self) -> None:
        """Close the descriptor (every watch goes with it). Safe to call twice."""
        if self._fd >= 0:
            self._dropped.clear()
            self._entries.clear()
            self._poll.unregister(self._fd)
            os.close(self._fd)
            self._fd = -1
            self._path_of.clear()
            self._wd_of.clear()
            self._handles.clear()
