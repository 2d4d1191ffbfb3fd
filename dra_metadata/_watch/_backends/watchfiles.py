"""The watchfiles backend: the fallback where inotify is not available.

:class:`WatchfilesNotifier` meets :class:`~.base.Notifier` over watchfiles'
blocking iterator. ``watchfiles`` itself is imported when a notifier is
created, never when this module is: ``import dra_metadata`` stays free of it.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Final

from .base import BackendError, Handles, one_line_reason

if TYPE_CHECKING:
    from watchfiles import Change

__all__ = ["WatchfilesNotifier"]

# Its loop's step (ms) and how often it hands control back (ms).
_STEP_MS: Final = 50
_TICK_MS: Final = 50


class WatchfilesNotifier:
    """The fallback where inotify is not available: watchfiles over the current paths.

    watchfiles watches a fixed set of paths per call, so the watch restarts
    whenever a path is added, removed or moved to another inode; a restart
    reports an overflow so that the session looks at everything once (nothing
    that happened during the restart is lost). Waits are as precise as its
    loop's step (50 ms).
    """

    def __init__(self) -> None:

        try:
            # watchfiles: only this backend, and only when it is chosen
            import watchfiles
            from watchfiles._rust_notify import RustNotify

            # Start (and stop) one watcher now, so that a backend which cannot start
            # (no inotify instance left for it either) fails here, not mid-watch.
            with RustNotify([os.path.abspath(os.sep)], False, False, 300, False, False):
                pass
        except Exception as err:  # the Rust side raises its own errors, ImportError ...
            raise BackendError(f"cannot watch with watchfiles: {one_line_reason(err)}") from None
        self._watchfiles = watchfiles
        self._paths: dict[str, str] = {}  # absolute path -> key the session knows it by
        self._gen: Generator[set[tuple[Change, str]], None, None] | None = None
        self._dirty = True
        self._lock = threading.Lock()
        self._busy = False
        self._closed = False

    def fileno(self) -> int | None:
        return None

    def add(
        self, path: str, *, directory: bool, follow: bool = False, entries: str | None = None
    ) -> int:
        try:
            info = os.stat(path) if follow else os.lstat(path)
        except OSError as err:
            return err.errno or errno.ENOENT
        if directory and not stat.S_ISDIR(info.st_mode):
            return errno.ENOTDIR
        self._paths[os.path.abspath(path)] = path
        self._dirty = True
        return 0

    def remove(self, path: str) -> None:
        if self._paths.pop(os.path.abspath(path), None) is not None:
            self._dirty = True

    def watching(self, path: str) -> bool:
        return os.path.abspath(path) in self._paths

    def handles(self, path: str) -> Handles | None:
        """Nothing is known about writers here: a change is read twice before it counts."""
        return None

    def due(self) -> float | None:
        """Nothing is named without a report here."""
        return None

    def drain(self) -> None:
        pass

    def take(self) -> tuple[set[str], bool]:
        return set(), False

    def wait(self, timeout: float) -> tuple[set[str], bool]:
        with self._lock:
            if self._closed:
                return set(), False
            self._busy = True
        try:
            return self._wait(timeout)
        finally:
            with self._lock:
                self._busy = False
                if self._closed:
                    self._stop()

    def _wait(self, timeout: float) -> tuple[set[str], bool]:
        try:
            return self._watch(timeout)
        except Exception as err:  # WatchfilesRustInternalError, OSError ...
            self._stop()
            raise BackendError(f"watching with watchfiles failed: {one_line_reason(err)}") from None

    def _watch(self, timeout: float) -> tuple[set[str], bool]:
        restarted = False
        if self._dirty or self._gen is None:
            self._stop()
            self._dirty = False
            restarted = True
            self._gen = self._watchfiles.watch(
                *self._paths,
                watch_filter=None,
                step=_STEP_MS,
                rust_timeout=_TICK_MS,
                yield_on_timeout=True,
                recursive=False,
            )
        end = time.monotonic() + timeout
        found: set[str] = set()
        while not found and not self._closed:
            for _change, raw in next(self._gen):
                found.add(self._key(raw))
            if time.monotonic() >= end:
                break
        return found, restarted

    def _key(self, raw: str) -> str:
        absolute = os.path.abspath(raw)
        key = self._paths.get(absolute)
        if key is not None:
            return key
        parent = self._paths.get(os.path.dirname(absolute))
        return parent if parent is not None else absolute

    def _stop(self) -> None:
        if self._gen is not None:
            self._gen.close()
            self._gen = None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if not self._busy:
                self._stop()
