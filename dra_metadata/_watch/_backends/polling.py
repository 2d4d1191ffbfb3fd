"""The polling backend: ``lstat`` of every watched path at a short interval.

The last resort, when neither inotify nor watchfiles can start: the user's
inotify instances are used up (``fs.inotify.max_user_instances``, counted
across every process of that user on the node), or the platform has neither.
``backend="auto"`` falls back to it and says so on the ``dra_metadata``
logger; ``backend="polling"`` asks for it.

:class:`PollingNotifier` meets :class:`~.base.Notifier`: every
:data:`INTERVAL` seconds it ``lstat``\\ s each watched path (a directory also
has its entry names compared) and reports the paths whose answer changed. It
needs no descriptor, no thread and no kernel resource; it costs one
``lstat`` per watched path per interval, and an update arrives within about
one interval. It never follows a symbolic link and never opens a file.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from typing import Final

from .base import Handles

__all__ = ["INTERVAL", "PollingNotifier"]

#: Seconds between two looks at every watched path.
INTERVAL: Final = 0.02

_Look = tuple[int, ...] | int  # what lstat (and a listing) said, or the errno


def _look(path: str, directory: bool, follow: bool) -> tuple[_Look, frozenset[str] | None]:
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError as err:
        return err.errno or -1, None
    summary = (
        info.st_mode,
        info.st_dev,
        info.st_ino,
        info.st_nlink,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
    )
    names = None
    if directory and stat.S_ISDIR(info.st_mode):
        try:
            names = frozenset(os.listdir(path))
        except OSError:
            names = None
    return summary, names


class PollingNotifier:
    """Watches by looking: ``lstat`` (and, for a directory, its names) every :data:`INTERVAL`.

    Mount changes, content changes, renames and removals all change what
    ``lstat`` says, except a same-size write within one timestamp tick; the
    session's stable-read rule and its safety-net rescan cover that one.
    """

    def __init__(self, interval: float = INTERVAL) -> None:
        self._interval = interval
        self._watched: dict[str, tuple[bool, bool, tuple[_Look, frozenset[str] | None]]] = {}
        self._pending: set[str] = set()
        self._closed = threading.Event()
        self._next = time.monotonic()

    def fileno(self) -> int | None:
        return None

    def add(
        self, path: str, *, directory: bool, follow: bool = False, entries: str | None = None
    ) -> int:
        if "\x00" in path:
            return errno.EINVAL
        seen = _look(path, directory, follow)
        if isinstance(seen[0], int):
            return seen[0]
        if directory and seen[1] is None:
            return errno.ENOTDIR
        self._watched[path] = (directory, follow, seen)
        return 0

    def remove(self, path: str) -> None:
        self._watched.pop(path, None)

    def watching(self, path: str) -> bool:
        return path in self._watched

    def handles(self, path: str) -> Handles | None:
        """Nothing is known about writers here: a change is read twice before it counts."""
        return None

    def due(self) -> float | None:
        """Nothing is named without a report here."""
        return None

    def drain(self) -> None:
        """Look at every watched path once; remember those that changed."""
        for path, (directory, follow, before) in list(self._watched.items()):
            now = _look(path, directory, follow)
            if now != before:
                self._pending.add(path)
                if isinstance(now[0], int):
                    del self._watched[path]  # gone: the session adds it again when it is back
                else:
                    self._watched[path] = (directory, follow, now)

    def take(self) -> tuple[set[str], bool]:
        pending, self._pending = self._pending, set()
        return pending, False

    def wait(self, timeout: float) -> tuple[set[str], bool]:
        end = time.monotonic() + max(0.0, timeout)
        while not self._pending and not self._closed.is_set():
            now = time.monotonic()
            if now >= self._next:
                self._next = now + self._interval
                self.drain()
                continue
            if now >= end:
                break
            self._closed.wait(min(self._next, end) - now)
        return self.take()

    def close(self) -> None:
        self._closed.set()
        self._watched.clear()
