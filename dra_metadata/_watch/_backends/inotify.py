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

It also keeps, per watched file, what the kernel said about its writers
(:class:`Writes`): the handles opened and not closed yet, a write not yet
followed by a close, the closes after a write, and how far that count can be
trusted (the kernel merges identical events queued back to back, so two opens
can be heard as one). That is how a watch delivers a change the moment its
writer closes the file, with one read. Only what can change the content wakes a
watch up: an open, a read by anyone (the watch's own reads included), or a close
with no write since the last one does not, nor does a write (its close does, or
the end of the wait for it, :data:`CLOSE_WAIT`).

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

from .base import CLOSE_WAIT, Writes

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
#: or it went away; and every open and close, which count the handles open on it.
#: ``IN_ACCESS`` (a read) only keeps another event from merging into an open of the
#: watch's own. ``IN_UNMOUNT`` and ``IN_IGNORED`` come without asking.
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
#: The events of a file that only count handles: they wake nobody up.
_HANDLES: Final = _IN_OPEN | _IN_CLOSE_NOWRITE
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
_WD: Final = struct.Struct("i")
_CLOSES: Final = _IN_CLOSE_WRITE | _IN_CLOSE_NOWRITE
#: The events of a file that its :class:`Writes` count.
_COUNTED: Final = _HANDLES | _IN_MODIFY | _IN_CLOSE_WRITE
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
        # Writes waiting for their close: watch descriptor -> when the wait is over.
        self._close_waits: dict[int, float] = {}
        self._writes: dict[int, Writes] = {}  # file watches only
        # Entries that arrived by a rename (IN_MOVED_TO), heard since the last take() and
        # in the round before it: a file added in that round starts with known counts.
        self._arrived: set[str] = set()
        self._arrived_before: set[str] = set()
        # Per directory watch that reports some entries only, how their names end.
        self._entries: dict[int, bytes] = {}
        # Per directory watch, its absolute path ending in "/" (an arrived entry's prefix).
        self._absolute: dict[int, str] = {}
        # A file's path as given to add() -> its absolute path (the cwd does not change).
        self._absolute_of: dict[str, str] = {}
        # Files that arrived by a rename, whose watch is added before the next wait:
        # path -> (the path encoded, the mask, what their writers will be counted in).
        self._deferred: dict[str, tuple[bytes, int, Writes]] = {}
        # Per file watch, the bytes of an open, a read and a close without a write (a read);
        # of an open and a close by a handle that could write, and by one that could not.
        self._units: dict[int, tuple[bytes, ...]] = {}
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
        if not directory and self._arrived_here(path):
            # Renamed into place: written whole before it came, so it is read at once,
            # and its watch is added after that read is delivered (the system call is
            # no small part of the delay); then it is looked at once more, so that
            # nothing written in between goes unheard.
            old = self._wd_of.get(path)
            if old is not None:
                self._forget(old, later=True)
            if path not in self._deferred:
                self._deferred[path] = (encoded, mask, Writes(whole=True))
            return 0
        self._deferred.pop(path, None)
        return self._add_now(path, encoded, mask, directory=directory, entries=entries)

    def _arrived_here(self, path: str) -> bool:
        """Whether a file arrived at ``path`` by a rename, heard in this round or the last."""
        if not (self._arrived or self._arrived_before):
            return False
        absolute = self._absolute_of.get(path)
        if absolute is None:
            absolute = self._absolute_of[path] = os.path.abspath(path)
        return absolute in self._arrived or absolute in self._arrived_before

    def _add_now(
        self,
        path: str,
        encoded: bytes,
        mask: int,
        *,
        directory: bool,
        entries: str | None = None,
        writes: Writes | None = None,
    ) -> int:
        """Add the watch (one system call) and map it; 0, or the ``errno``."""
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
        if not directory and wd not in self._writes:
            self._writes[wd] = writes if writes is not None else Writes()
            opened, read = _EVENT.pack(wd, _IN_OPEN, 0, 0), _EVENT.pack(wd, _IN_ACCESS, 0, 0)
            self._units[wd] = (
                opened + read + _EVENT.pack(wd, _IN_CLOSE_NOWRITE, 0, 0),
                opened + _EVENT.pack(wd, _IN_CLOSE_WRITE, 0, 0),
                opened + _EVENT.pack(wd, _IN_CLOSE_NOWRITE, 0, 0),
            )
        other = self._path_of.get(wd)
        if other is not None and other != path:
            # The same inode under two paths (a hard link, a bind mount of a directory
            # seen twice): the newest path wins the mapping, the other one is dropped.
            self._wd_of.pop(other, None)
        self._path_of[wd] = path
        self._wd_of[path] = wd
        if directory:
            self._absolute[wd] = os.path.join(os.path.abspath(path), "")
            if entries is None:
                self._entries.pop(wd, None)
            else:
                self._entries[wd] = os.fsencode(entries)
        return 0

    def _add_deferred(self) -> None:
        """Add the watches :meth:`add` put off; name their files, to be looked at again.

        A file that cannot be watched now (removed meanwhile) is named too: the
        look finds out, and adds the watch again if the file is there.
        """
        deferred, self._deferred = self._deferred, {}
        for path, (encoded, mask, writes) in deferred.items():
            self._add_now(path, encoded, mask, directory=False, writes=writes)
            self._pending.add(path)

    def remove(self, path: str) -> None:
        """Stop watching ``path`` (nothing happens when it is not watched)."""
        self._deferred.pop(path, None)
        self._absolute_of.pop(path, None)
        wd = self._wd_of.get(path)
        if wd is not None:
            self._forget(wd)

    def _forget(self, wd: int, *, later: bool = False) -> None:
        """Drop what is known of watch ``wd`` and remove it (``later``: before the next wait).

        Its events that are still queued name no path any more and are skipped.
        """
        self._writes.pop(wd, None)
        self._close_waits.pop(wd, None)
        self._units.pop(wd, None)
        self._entries.pop(wd, None)
        self._absolute.pop(wd, None)
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
        return path in self._wd_of or path in self._deferred

    def writes(self, path: str) -> Writes | None:
        """What the kernel said about ``path``'s writers; ``None`` when no file watch has it."""
        wd = self._wd_of.get(path)
        if wd is None:
            deferred = self._deferred.get(path)
            return None if deferred is None else deferred[2]
        return self._writes.get(wd)

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
        units = self._units.get(_WD.unpack_from(data)[0]) if len(data) >= _EVENT_SIZE else None
        if units is not None:
            if data == units[0]:
                # One open, read and close without a write of a watched file, alone in
                # the queue (the watch's own read, nearly always): the counts end where
                # they were and nobody is woken, so there is nothing to do.
                return
            data = self._one_of_many(data, units)
        offset, end = 0, len(data)
        unpack = _EVENT.unpack_from
        all_writes, pending, entries = self._writes, self._pending, self._entries
        now = time.monotonic()
        while offset + _EVENT_SIZE <= end:  # the kernel hands out whole events
            wd, mask, _cookie, length = unpack(data, offset)
            offset += _EVENT_SIZE + length
            writes = all_writes.get(wd)
            if mask == _IN_ACCESS and writes is not None:
                continue  # a read of a followed file changes nothing
            if writes is None or not mask & _COUNTED:
                if length:
                    # A directory's entry came, went or was renamed.
                    name = data[offset - length : offset].rstrip(b"\x00")
                    ending = entries.get(wd)
                    if ending is None or name.endswith(ending):
                        self._other(wd, mask, name)
                    # else nothing the watch follows (a writer's temporary file)
                elif writes is None or mask & _IN_IGNORED:
                    self._other(wd, mask, b"")
                else:  # a followed file's links or mode changed, or it was moved or deleted
                    pending.add(self._path_of[wd])
            # An open, a write or a close of a followed file: counted. Only what
            # changes what a look would decide names the file.
            elif mask & _IN_OPEN:
                writes.opened(now)
            elif mask & _CLOSES:
                # A close after a write: the bytes changed (a close with no write since
                # the last one changed nothing, and is not worth a read).
                if writes.closed(wrote=bool(mask & _IN_CLOSE_WRITE), now=now):
                    self._close_waits.pop(wd, None)
                    pending.add(self._path_of[wd])
            # A write: its close brings the look (the session times the wait for it
            # from dirty_at); a write is worth a look when no close came within the
            # wait (the session reads twice then, as for a writer that keeps the file
            # open).
            elif writes.modified(now):
                self._close_waits[wd] = now + CLOSE_WAIT
            elif writes.dirty_at is not None and now - writes.dirty_at >= CLOSE_WAIT:
                pending.add(self._path_of[wd])

    def _one_of_many(self, data: bytes, units: tuple[bytes, ...]) -> bytes:
        """``data``, or one unit of it when it is that unit over and over.

        A process opening and closing a file in a loop without writing (or reading
        it) queues the same open and close again and again; when no handle is
        counted and no write is pending, many of them leave the counts as one does,
        so one is parsed (a comparison of bytes instead of a loop).
        """
        for unit in units:
            count, rest = divmod(len(data), len(unit))
            if count > 1 and not rest and data.startswith(unit) and data == unit * count:
                writes = self._writes[_WD.unpack_from(unit)[0]]
                if not writes.handles() and writes.dirty_at is None:
                    return unit
                break
        return data

    def _other(self, wd: int, mask: int, name: bytes) -> None:
        """One event that counts no handle: an entry of a directory, a file's links, a loss."""
        if mask & _IN_Q_OVERFLOW:
            self._overflow = True
            now = time.monotonic()
            for lost in self._writes.values():  # counts lost: no close is final for a while
                lost.lost(now)
            self._close_waits.clear()
            return
        path = self._path_of.get(wd)
        if path is None:
            return  # a watch we already dropped
        if name:
            # A directory's entry came, went or was renamed: name the entry, the path
            # given to add() joined to the name as os.path.join would (a name has no
            # "/"), decoded as os.fsdecode would: those, and abspath, are each a cold
            # stretch of code for a watcher that has slept.
            text = name.decode(_FS_ENCODING, _FS_ERRORS)
            entry = path + text if path.endswith("/") else f"{path}/{text}"
            if mask & _IN_MOVED_TO:
                self._arrived.add(self._absolute[wd] + text)
            self._pending.add(entry)
            return
        self._pending.add(path)
        if mask & _IN_IGNORED:
            # The kernel removed the watch (file deleted, unmounted): forget it.
            del self._path_of[wd]
            self._writes.pop(wd, None)
            self._close_waits.pop(wd, None)
            self._units.pop(wd, None)
            self._entries.pop(wd, None)
            self._absolute.pop(wd, None)
            if self._wd_of.get(path) == wd:
                del self._wd_of[path]

    def take(self) -> tuple[set[str], bool]:
        """The paths that saw events since the last call, and whether events were lost.

        A file whose write was not followed by a close within :data:`CLOSE_WAIT`
        is named too.
        """
        if self._dropped:  # the asyncio driver takes before it waits
            self._remove_dropped()
        if self._deferred:
            self._add_deferred()
        if self._close_waits:
            now = time.monotonic()
            for wd, at in list(self._close_waits.items()):
                if at <= now:  # no close came: the path is looked at (and read twice)
                    del self._close_waits[wd]
                    path = self._path_of.get(wd)
                    if path is not None:
                        self._pending.add(path)
        pending, overflow = self._pending, self._overflow
        self._pending, self._overflow = set(), False
        self._arrived_before, self._arrived = self._arrived, set()
        return pending, overflow

    def wait(self, timeout: float) -> tuple[set[str], bool]:
        """Block until events worth a look arrive or ``timeout`` seconds pass; then :meth:`take`.

        Events that only count handles (opens, reads closed) do not end the wait.
        """
        if self._dropped:
            self._remove_dropped()
        if self._deferred:
            self._add_deferred()
        end = time.monotonic() + timeout
        while not (self._pending or self._overflow):
            now = time.monotonic()
            due = self.due()
            if due is not None and due <= now:
                break  # take() names the file whose close did not come
            left = max(0.0, min(end, due if due is not None else end) - now)
            if not self._poll.poll(math.ceil(min(left * 1000, _MAX_POLL_MS))) and now + left >= end:
                break  # the time is up
            self.drain()
        return self.take()

    def due(self) -> float | None:
        """When the first wait for a writer's close is over (monotonic), or ``None``."""
        return min(self._close_waits.values()) if self._close_waits else None

    def close(self) -> None:
        """Close the descriptor (every watch goes with it). Safe to call twice."""
        if self._fd >= 0:
            self._dropped.clear()
            self._units.clear()
            self._entries.clear()
            self._absolute.clear()
            self._deferred.clear()
            self._poll.unregister(self._fd)
            os.close(self._fd)
            self._fd = -1
            self._path_of.clear()
            self._wd_of.clear()
            self._writes.clear()
            self._close_waits.clear()
