"""The I/O side of a watch: what is followed, how it is looked at, and the two drivers.

A :class:`Plan` is the caller's selection and options, checked; every public
function builds one with :func:`plan`, and :meth:`Plan.run` makes the
:class:`Run` that :func:`iterate` (blocking) or :func:`aiterate` (asyncio)
drives. A run opens a notifier (:mod:`._backends`), keeps the deadline and
the stop event, and hands each batch of notifications to its
:class:`Session`, which stats and reads the files, keeps the directory
watches in place, runs the safety-net rescan and turns the
:class:`~._state.FileState` decisions into :class:`~._events.WatchEvent`
objects with the merged view.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import AsyncGenerator, Generator
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

import msgspec

from .._decode import decode
from .._errors import DecodeError, DRAMetadataError, MetadataNotFoundError
from .._model import DeviceMetadata, MergedDeviceMetadata
from .._paths import (
    RESOURCE_CLAIM_TEMPLATES_SUBDIR,
    RESOURCE_CLAIMS_SUBDIR,
    RootArg,
    driver_of,
    metadata_file_name,
    request_dir,
)
from .._read import merge, metadata_files, read_bytes
from ._backends import Backend, BackendError, Notifier, check_backend, open_notifier
from ._conditions import Condition
from ._events import WatchEvent
from ._state import Change, FileState

if TYPE_CHECKING:
    import logging

__all__ = [
    "DEFAULT_RESCAN_INTERVAL",
    "Options",
    "Plan",
    "Run",
    "Session",
    "StopEvent",
    "Target",
    "Tracked",
    "aiterate",
    "iterate",
    "logger",
    "plan",
    "signature",
]

#: Seconds between the safety-net re-reads of every file (events come much sooner).
DEFAULT_RESCAN_INTERVAL: Final = 2.0

# The safety net skips reading a file whose stat is unchanged and whose last change
# was at least this many seconds before the last read (timestamps are coarse).
_SETTLED: Final = 2.0
# A stop event is looked at least this often (seconds).
_STOP_POLL: Final = 0.05


def logger() -> logging.Logger:
    """The ``dra_metadata`` logger (:mod:`..._log`), imported when there is something to say."""
    from .._log import logger as package_logger

    return package_logger()


@runtime_checkable
class StopEvent(Protocol):
    """Anything with ``is_set()``: a ``threading.Event``, an ``asyncio.Event`` ..."""

    def is_set(self) -> bool:
        """Whether the watch should end."""


# --- what is watched ---------------------------------------------------------------------


class Target(msgspec.Struct, frozen=True):
    """The request directory a watch follows, and the one driver's file if one is asked for."""

    directory: str  # the request directory, as built from the caller's root
    absolute: str  # the same, absolute (the ancestor walk needs it)
    driver: str | None
    file_name: str | None  # <driver>-metadata.json when one driver is watched


class Options(msgspec.Struct, frozen=True):
    """How a watch looks: the safety net's period, the error deadline, the size cap, the backend."""

    rescan_interval: float
    error_timeout: float
    max_size: int
    backend: Backend


class Plan(msgspec.Struct, frozen=True):
    """What one watch follows and how, checked when the caller called."""

    target: Target
    options: Options

    def run(self, *, stop_event: StopEvent | None, timeout: float | None) -> Run:
        """A run of this plan (not started): until ``stop_event`` is set or ``timeout``."""
        return Run(self, stop_event=stop_event, timeout=timeout)


def plan(
    claim: str | None,
    pod_claim: str | None,
    request: str,
    driver: str | None,
    root: RootArg,
    rescan_interval: float,
    error_timeout: float,
    max_size: int,
    backend: str,
) -> Plan:
    """The :class:`Plan` for the public functions' arguments, in their signatures' order.

    Checks the selection first (names, exactly one of ``claim`` and
    ``pod_claim``), then the options: every public function fails when it is
    called, not when it is iterated.
    """
    if (claim is None) == (pod_claim is None):
        raise TypeError("give exactly one of claim= and pod_claim=")
    if claim is not None:
        directory = request_dir(RESOURCE_CLAIMS_SUBDIR, claim, request, root=root)
    else:
        directory = request_dir(RESOURCE_CLAIM_TEMPLATES_SUBDIR, pod_claim, request, root=root)
    file_name = None if driver is None else metadata_file_name(driver)
    target = Target(directory, os.path.abspath(directory), driver, file_name)
    if not rescan_interval > 0:
        raise ValueError(f"rescan_interval must be positive, got {rescan_interval!r}")
    if not error_timeout >= 0:
        raise ValueError(f"error_timeout must not be negative, got {error_timeout!r}")
    options = Options(
        float(rescan_interval), float(error_timeout), max_size, check_backend(backend)
    )
    return Plan(target, options)


# --- the session: looks at files and directories, shared by both drivers ----------------


class Tracked:
    """A file the session follows: its decisions plus what the I/O side remembers."""

    __slots__ = ("identity", "raw", "raw_md", "read_at", "signature", "state")

    def __init__(self, state: FileState) -> None:
        self.state = state
        self.identity: tuple[int, int] | None = None  # (st_dev, st_ino) the watch is on
        self.raw: bytes | None = None  # the last bytes that decoded, and what they gave
        self.raw_md: DeviceMetadata | None = None
        # What stat said when those bytes were read, and when (wall clock, as mtimes are).
        self.signature: tuple[int, ...] | None = None
        self.read_at = 0.0

    def unchanged(self, info: os.stat_result) -> bool:
        """Whether ``info`` proves the file still holds the bytes last read.

        Same inode, size, link count and times, and the last read came long enough
        after the last change that a write in the same timestamp tick (the kernel's
        clock is coarse) could not hide behind an equal mtime.
        """
        return (
            self.signature == signature(info)
            and self.read_at - max(info.st_mtime_ns, info.st_ctime_ns) / 1e9 >= _SETTLED
        )


def signature(info: os.stat_result) -> tuple[int, ...]:
    return (
        info.st_dev,
        info.st_ino,
        info.st_size,
        info.st_nlink,
        info.st_mtime_ns,
        info.st_ctime_ns,
    )


def _deepest_dir(path: str) -> tuple[str, tuple[int, int] | None]:
    """The deepest existing directory on the way to ``path`` (absolute), and its identity."""
    current = path
    while True:
        try:
            info = os.stat(current)
        except OSError:
            pass
        else:
            if stat.S_ISDIR(info.st_mode):
                return current, (info.st_dev, info.st_ino)
        parent = os.path.dirname(current)
        if parent == current:
            return current, None
        current = parent


class Session:
    """One request directory watched: the files, the directory watch, the timers.

    Every notification is just a reason to look again: at a file (it changed,
    its links or its mount changed) or at the directory (entries came or went).
    A look stats and reads the file and tells its :class:`FileState`.
    """

    def __init__(self, target: Target, options: Options, notifier: Notifier) -> None:
        self.target = target
        self.options = options
        self.notifier = notifier
        self.files: dict[str, Tracked] = {}
        self.dir_path: str | None = None
        self.dir_identity: tuple[int, int] | None = None
        self.next_rescan = 0.0
        self._warned: set[str] = set()

    # The directory side.

    def _sync_dirs(self) -> None:
        """Watch the request directory, or its deepest existing ancestor until it exists."""
        for _attempt in range(64):
            path, identity = _deepest_dir(self.target.absolute)
            # Also when the kernel dropped the watch (IN_IGNORED) and the path shows
            # the same (device, inode) again: a recreated directory may reuse the number.
            if (path, identity) != (
                self.dir_path,
                self.dir_identity,
            ) or not self.notifier.watching(path):
                if self.dir_path is not None and self.dir_path != path:
                    self.notifier.remove(self.dir_path)
                problem = self.notifier.add(path, directory=True)
                if problem in (errno.ENOENT, errno.ENOTDIR):
                    continue  # it went away meanwhile: walk again
                if problem:
                    self._warn(path, problem)
                self.dir_path, self.dir_identity = path, identity
            # The watch is in place before this second look, so nothing created in
            # between goes unnoticed: either this look sees it, or an event will.
            if _deepest_dir(self.target.absolute) == (path, identity):
                return

    def _listing(self) -> set[str]:
        if self.dir_path != self.target.absolute:
            return set()
        paths = metadata_files(self.target.directory)
        if self.target.file_name is not None:
            wanted = os.path.join(self.target.directory, self.target.file_name)
            return {wanted} if wanted in paths else set()
        return set(paths)

    def _reconcile(self) -> set[str]:
        """Start following new files; return the new ones and the ones not listed."""
        present = self._listing()
        to_look = {path for path in self.files if path not in present}
        for path in present:
            if path not in self.files:
                self.files[path] = Tracked(
                    FileState(path, error_timeout=self.options.error_timeout)
                )
                to_look.add(path)
        return to_look

    # The file side.

    def _look(self, path: str, now: float, *, lazy: bool = False) -> list[Change]:
        """Stat and read ``path``; tell its state. ``lazy``: skip the read if stat allows."""
        tracked = self.files[path]
        state = tracked.state
        try:
            info = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return self._gone(path, now)
        except OSError as err:
            return state.broken(
                DRAMetadataError(f"stat {path}: {err.strerror}", path=path), now=now
            )
        identity = (info.st_dev, info.st_ino)
        if identity != tracked.identity or not self.notifier.watching(path):
            # New, or the path shows another inode now (a mount appeared over it, or it
            # was replaced), or the kernel dropped the watch (IN_IGNORED: deleted, and
            # maybe recreated under the same inode number): point the watch at the path.
            problem = self.notifier.add(path, directory=False)
            tracked.identity = identity if not problem else None
            if problem and problem not in (errno.ENOENT, errno.ENOTDIR):
                self._warn(path, problem)
        if lazy and not state.broken_now and tracked.unchanged(info):
            return []
        read_at = time.time()
        try:
            data = read_bytes(path, max_size=self.options.max_size)
        except MetadataNotFoundError:
            return self._gone(path, now)
        except DRAMetadataError as err:
            return state.broken(err, nlink=info.st_nlink, now=now)
        if data == tracked.raw and tracked.raw_md is not None:
            md = tracked.raw_md
        else:
            try:
                md = decode(data)
            except (DecodeError, RecursionError) as err:  # nesting too deep for the decoder
                error = DecodeError(f"{path}: {err}", path=path)
                return state.broken(error, nlink=info.st_nlink, now=now)
            tracked.raw, tracked.raw_md = data, md
        tracked.signature, tracked.read_at = signature(info), read_at
        return state.decoded(md, nlink=info.st_nlink, now=now)

    def _gone(self, path: str, now: float) -> list[Change]:
        changes = self.files.pop(path).state.absent(now=now)
        self.notifier.remove(path)
        return changes

    def _warn(self, path: str, problem: int) -> None:
        if path not in self._warned:
            self._warned.add(path)
            logger().warning(
                "cannot watch %s (%s); it is looked at every %gs instead",
                path,
                os.strerror(problem),
                self.options.rescan_interval,
            )

    # Rounds.

    def begin(self, now: float) -> list[WatchEvent]:
        """Set up the watches and look at everything: the initial ``update`` events."""
        self.next_rescan = now + self.options.rescan_interval
        self._sync_dirs()
        self._reconcile()
        return self._round(set(self.files), now)

    def process(self, triggers: set[str], overflow: bool, now: float) -> list[WatchEvent]:
        """Look at what the notifications name, what is due for a retry, and (when due) all."""
        to_look = {path for path in triggers if path in self.files}
        rescan = overflow or now >= self.next_rescan
        if rescan:
            self.next_rescan = now + self.options.rescan_interval
        if rescan or len(to_look) < len(triggers):  # a directory (or a dropped file) spoke
            self._sync_dirs()
            to_look |= self._reconcile()
        for path, tracked in self.files.items():
            retry_at = tracked.state.retry_at
            if retry_at is not None and retry_at <= now:
                to_look.add(path)
        if overflow:  # notifications were lost: read everything
            to_look.update(self.files)
        lazy = set(self.files) - to_look if rescan else set()
        return self._round(to_look, now, lazy=lazy)

    def _round(
        self, to_look: set[str], now: float, *, lazy: set[str] | None = None
    ) -> list[WatchEvent]:
        found: list[tuple[str, Change]] = []
        lazy = lazy or set()
        for path in sorted(to_look | lazy, key=os.fsencode):
            if path in self.files:
                changes = self._look(path, now, lazy=path in lazy)
                found.extend((path, change) for change in changes)
        if not found:
            return []
        merged = self.merged()
        return [
            WatchEvent(
                kind=change.kind,
                path=path,
                driver=driver_of(path),
                generation=change.generation,
                claim_uid=change.claim_uid,
                metadata=change.metadata,
                merged=merged,
                message=change.message,
                error=change.error,
            )
            for path, change in found
        ]

    def merged(self) -> MergedDeviceMetadata | None:
        """The request merged over each present file's last delivered object."""
        good = [
            (path, self.files[path].state.good)
            for path in sorted(self.files, key=os.fsencode)
            if self.files[path].state.good is not None
        ]
        if not good:
            return None
        return merge([(path, md) for path, md in good if md is not None])

    def next_wait(self, now: float) -> float:
        """Seconds until the next timer (a retry or the rescan)."""
        due = self.next_rescan
        for tracked in self.files.values():
            retry_at = tracked.state.retry_at
            if retry_at is not None and retry_at < due:
                due = retry_at
        return max(0.0, due - now)

    def describe(self, condition: Condition) -> str:
        """What was last seen, for a timeout message."""
        if not self.files:
            what = self.target.file_name or "metadata file"
            if self.dir_path != self.target.absolute:
                return f"no {what} (no directory {self.target.directory})"
            return f"no {what} in {self.target.directory}"
        parts = []
        for path in sorted(self.files, key=os.fsencode):
            state = self.files[path].state
            name = os.path.basename(path)
            if state.broken_now:
                parts.append(f"{name} does not decode: {state.bad_error}")
            elif state.good is None:
                parts.append(f"{name} not read yet")
            else:
                text = f"{name} generation {state.good.metadata.generation}"
                reason = condition.why_not(state.good)
                if reason:
                    text += f" {reason}"
                if state.stale:
                    text += " (stale: replaced on the node after the container started)"
                parts.append(text)
        return "; ".join(parts)


# --- the run: the session plus the notifier, a deadline and a stop event ----------------


class Run:
    """One watch from start to end; what both twins share apart from the waiting."""

    def __init__(self, plan: Plan, *, stop_event: StopEvent | None, timeout: float | None) -> None:
        if timeout is not None and not timeout >= 0:
            raise ValueError(f"timeout must not be negative, got {timeout!r}")
        self.target = plan.target
        self.options = plan.options
        self.stop_event = stop_event
        self.timeout = timeout
        self.deadline: float | None = None
        self.session: Session | None = None
        self.notifier: Notifier | None = None

    def open(self) -> Notifier:
        """Start: create the notifier (the deadline counts from here)."""
        now = time.monotonic()
        self.deadline = None if self.timeout is None else now + self.timeout
        self.notifier = open_notifier(self.options.backend)
        self.session = Session(self.target, self.options, self.notifier)
        return self.notifier

    def begin(self) -> list[WatchEvent]:
        """Set up the watches and look at everything: the initial events."""
        assert self.session is not None
        return self.session.begin(time.monotonic())

    def next_wait(self) -> float | None:
        """Seconds to wait for notifications, or ``None`` when the watch is over."""
        assert self.session is not None
        if self.stop_event is not None and self.stop_event.is_set():
            return None
        now = time.monotonic()
        wait = self.session.next_wait(now)
        if self.deadline is not None:
            if now >= self.deadline:
                return None
            wait = min(wait, self.deadline - now)
        if self.stop_event is not None:
            wait = min(wait, _STOP_POLL)
        return wait

    def step(self, triggers: set[str], overflow: bool) -> list[WatchEvent]:
        """One round: what the notifier reported, what is due, and (when due) the rescan."""
        assert self.session is not None
        return self.session.process(triggers, overflow, time.monotonic())

    def fallback(self, err: BackendError) -> Notifier:
        """The backend stopped working: poll instead (``"auto"``), else raise ``err``.

        The new notifier watches nothing yet; the next round, an overflow, puts
        every watch back and looks at everything, so nothing is missed.
        """
        from ._backends.base import polling_fallback

        assert self.session is not None
        if self.options.backend != "auto":
            raise err
        if self.notifier is not None:
            self.notifier.close()
        self.notifier = self.session.notifier = polling_fallback(str(err))
        return self.notifier

    def close(self) -> None:
        """Close the notifier (every watch goes with it)."""
        if self.notifier is not None:
            self.notifier.close()


# --- the drivers: how a run waits ------------------------------------------------------


def iterate(run: Run) -> Generator[WatchEvent, None, None]:
    """The synchronous driver: block in the notifier between rounds."""
    notifier = run.open()
    try:
        yield from run.begin()
        while (wait := run.next_wait()) is not None:
            try:
                found = notifier.wait(wait)
            except BackendError as err:
                notifier = run.fallback(err)
                found = (set(), True)
            yield from run.step(*found)
    finally:
        run.close()


async def aiterate(run: Run) -> AsyncGenerator[WatchEvent, None]:
    """The asyncio driver: the loop watches the descriptor; a timer covers the timeouts."""
    import asyncio

    loop = asyncio.get_running_loop()
    notifier = run.open()
    fd = notifier.fileno()
    waiting: list[asyncio.Future[None]] = []

    def wake() -> None:
        if waiting and not waiting[0].done():
            waiting[0].set_result(None)

    def readable() -> None:
        notifier.drain()  # read now, so the descriptor does not stay readable
        wake()

    if fd is not None:
        loop.add_reader(fd, readable)
    try:
        for event in run.begin():
            yield event
        while (wait := run.next_wait()) is not None:
            if fd is None:  # watchfiles, polling: the blocking wait runs in the default executor
                try:
                    found = await loop.run_in_executor(None, notifier.wait, wait)
                except BackendError as err:
                    notifier = run.fallback(err)
                    found = (set(), True)
            else:
                found = notifier.take()
                if not found[0] and not found[1]:
                    future = loop.create_future()
                    waiting[:] = [future]
                    timer = loop.call_later(wait, wake)
                    try:
                        await future
                    finally:
                        timer.cancel()
                        waiting.clear()
                    found = notifier.take()
            for event in run.step(*found):
                yield event
    finally:
        if fd is not None:
            loop.remove_reader(fd)
        run.close()
