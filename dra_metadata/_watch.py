"""Watching a request's metadata files, and waiting for deferred metadata.

Network drivers write a request's metadata twice: at prepare, generation 1
with the devices' identity; shortly after (normally before the containers
start) the whole stream again with interface names, IPs and MAC, generation 2
or later. :func:`wait_for` lets an init container wait for that; :func:`watch`
and :func:`awatch` (twins with identical parameters) and
:class:`MetadataWatcher` (handlers called from a thread) let a running
service react when a file changes.

How a container sees the files decides how they are watched. Each file is a
read-only single-file bind mount, so:

* a host writer that rewrites a file in place is heard only by a watch on the
  file path itself (a directory watch hears nothing), and a read racing the
  writer can see an empty or half-written file;
* a host writer that replaces the file by rename is never seen: the mount keeps
  the old inode, whose link count drops to 0.

So every metadata file is watched itself, the request directory (or, until it
exists, its deepest existing ancestor) for files that come and go, and a slow
re-read of everything (``rescan_interval``, 2 s by default) catches whatever
the kernel did not report. A read that does not decode is retried with a
short, bounded backoff; only whole objects are delivered, and a file that
stays undecodable for ``error_timeout`` seconds becomes an ``error`` event. For
one claim UID a generation is delivered at most once and never goes backwards;
a new UID (the claim was prepared again) is a new object. A file whose
``st_nlink`` is 0 gets one ``stale`` event: later updates cannot reach this
container.

On Linux the watcher uses inotify directly (:mod:`._inotify`): it sleeps until
the kernel has something to say (or the safety net is due), and delivers an
update well under a millisecond after the write at the median. Elsewhere it
uses watchfiles, whose loop wakes every 50 ms. ``benchmarks/bench_watch.py``
measures both. The per-file decisions (:class:`FileState`) do no I/O and are
shared by both twins; only the waiting differs.
"""

from __future__ import annotations

import enum
import errno
import os
import stat
import time
from collections.abc import AsyncGenerator, Callable, Generator
from typing import (
    TYPE_CHECKING,
    Final,
    Literal,
    Protocol,
    Self,
    TypeAlias,
    TypeVar,
    cast,
)

import msgspec

from ._decode import decode
from ._errors import DecodeError, DRAMetadataError, MetadataNotFoundError, WaitTimeoutError
from ._model import DeviceMetadata, MergedDeviceMetadata, NetworkDeviceData
from ._paths import (
    RESOURCE_CLAIM_TEMPLATES_SUBDIR,
    RESOURCE_CLAIMS_SUBDIR,
    RootArg,
    driver_of,
    metadata_file_name,
    request_dir,
)
from ._read import DEFAULT_MAX_SIZE, merge, metadata_files, read_bytes

if TYPE_CHECKING:
    import logging
    import threading
    from types import TracebackType

    from watchfiles import Change as _WatchfilesChange

    class _StopEvent(Protocol):
        """Anything with ``is_set()``: a ``threading.Event``, an ``asyncio.Event`` ..."""

        def is_set(self) -> bool: ...

    class _Notifier(Protocol):
        """What the session needs from a notification mechanism."""

        def fileno(self) -> int | None: ...
        def add(self, path: str, *, directory: bool) -> int: ...
        def remove(self, path: str) -> None: ...
        def watching(self, path: str) -> bool: ...
        def drain(self) -> None: ...
        def take(self) -> tuple[set[str], bool]: ...
        def wait(self, timeout: float) -> tuple[set[str], bool]: ...
        def close(self) -> None: ...


__all__ = [
    "DEFAULT_ERROR_TIMEOUT",
    "DEFAULT_RESCAN_INTERVAL",
    "Backend",
    "Change",
    "FileState",
    "MetadataWatcher",
    "WatchEvent",
    "WatchEventKind",
    "await_for",
    "awatch",
    "has_attribute",
    "has_generation",
    "has_network_data",
    "wait_for",
    "watch",
]

#: Seconds between the safety-net re-reads of every file (events come much sooner).
DEFAULT_RESCAN_INTERVAL: Final = 2.0
#: Seconds a file may stay undecodable (empty, half written) before an ``error`` event.
DEFAULT_ERROR_TIMEOUT: Final = 2.0

#: Which notification mechanism a watch uses. ``"auto"``: inotify on Linux, else watchfiles.
Backend: TypeAlias = Literal["auto", "inotify", "watchfiles"]

# First retry of an undecodable read after this many seconds, doubling up to _RETRY_MAX.
_RETRY_FIRST: Final = 0.001
_RETRY_MAX: Final = 0.1
# The safety net skips reading a file whose stat is unchanged and whose last change
# was at least this many seconds before the last read (timestamps are coarse).
_SETTLED: Final = 2.0
# A stop event is looked at least this often (seconds).
_STOP_POLL: Final = 0.05
# The watchfiles fallback: its loop's step (ms) and how often it hands control back (ms).
_WATCHFILES_STEP_MS: Final = 50
_WATCHFILES_TICK_MS: Final = 50


def _logger() -> logging.Logger:
    import logging  # only when there is something to say: logging is slow to import

    return logging.getLogger("dra_metadata")


# --- what a watch delivers ---------------------------------------------------------------


class WatchEventKind(enum.StrEnum):
    """What happened to a metadata file."""

    #: A complete object with a new generation (or a new claim UID) was read.
    UPDATE = "update"
    #: The file was replaced or removed on the node after this container started: the
    #: bind mount keeps the old file (``st_nlink == 0``); later updates cannot arrive.
    STALE = "stale"
    #: The file is gone (the claim was unprepared, or the request directory removed).
    REMOVED = "removed"
    #: The file stayed undecodable (or unreadable) for ``error_timeout`` seconds.
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


class WatchEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One thing that happened to one metadata file of the watched request.

    ``generation`` and ``claim_uid`` describe the object the event is about: the
    new one for ``update``, the last one delivered for the others (``None`` when
    there was none). ``metadata`` is this file's object for ``update``, the one
    the container keeps for ``stale`` (``None`` when that one does not decode),
    else ``None``. ``merged`` is the whole request merged across its files as
    :func:`~dra_metadata.read_request_dir` merges them, from each present file's
    last delivered object (``None`` when there is none). ``message`` explains
    ``stale`` and ``error`` events; ``error`` is the read or decode error of an
    ``error`` event.
    """

    kind: WatchEventKind
    path: str
    driver: str
    generation: int | None = None
    claim_uid: str | None = None
    metadata: DeviceMetadata | None = None
    merged: MergedDeviceMetadata | None = None
    message: str = ""
    error: DRAMetadataError | None = None


# --- conditions for wait_for ---------------------------------------------------------------


def has_network_data(md: DeviceMetadata) -> bool:
    """Whether every device of ``md`` has network data (and there is a device).

    Network data counts when at least one of interface name, IPs and hardware
    address is filled in. The usual condition for :func:`wait_for`.

    >>> import dra_metadata as dm
    >>> md = dm.read_resource_claim("nic", "eth", root="examples/dra-device-attributes")
    >>> dm.has_network_data(md)
    True
    >>> dm.has_network_data(dm.read_resource_claim_template(
    ...     "gpu", "gpu", root="examples/dra-device-attributes"))
    False
    """
    found = False
    for _request, device in md.devices():
        if not _has_network(device.network_data):
            return False
        found = True
    return found


def _has_network(net: NetworkDeviceData | None) -> bool:
    return isinstance(net, NetworkDeviceData) and bool(
        net.interface_name or net.ips or net.hardware_address
    )


class _Condition:
    """A named condition on metadata that can say why one file does not meet it."""

    def __init__(
        self,
        description: str,
        holds: Callable[[DeviceMetadata], bool],
        why_not: Callable[[DeviceMetadata], str | None],
    ) -> None:
        self.description = description
        self._holds = holds
        self._why_not = why_not
        self.__doc__ = f"Whether the metadata has {description}."

    def __call__(self, md: DeviceMetadata) -> bool:
        return self._holds(md)

    def why_not(self, md: DeviceMetadata) -> str | None:
        """Why one file's object does not meet the condition, or ``None``."""
        return self._why_not(md)

    def __repr__(self) -> str:
        return f"<condition: {self.description}>"


def _lacking_network(md: DeviceMetadata) -> str | None:
    devices = [device for _request, device in md.devices()]
    if not devices:
        return "without devices"
    for device in devices:
        if not _has_network(device.network_data):
            return f"without network data (device {device.pool}/{device.name})"
    return None


_NETWORK: Final = _Condition("network data on every device", has_network_data, _lacking_network)
_EXISTS: Final = _Condition("metadata", lambda md: True, lambda md: None)


def has_generation(generation: int) -> Callable[[DeviceMetadata], bool]:
    """A condition: every file has reached ``generation`` (1 is the first write).

    For a merged read each file's generation counts (see ``sources``); for one
    file its ``metadata.generation``.

    >>> import dra_metadata as dm
    >>> md = dm.read_resource_claim("nic", "eth", root="examples/dra-device-attributes")
    >>> dm.has_generation(2)(md), dm.has_generation(3)(md)
    (True, False)
    """
    if isinstance(generation, bool) or not isinstance(generation, int):
        raise TypeError(f"generation must be an int, not {type(generation).__name__}")

    def holds(md: DeviceMetadata) -> bool:
        if isinstance(md, MergedDeviceMetadata):
            return bool(md.sources) and all(s.generation >= generation for s in md.sources)
        return md.metadata.generation >= generation

    def why_not(md: DeviceMetadata) -> str | None:
        return None if holds(md) else f"(waiting for generation {generation})"

    return _Condition(f"generation {generation} or later", holds, why_not)


def has_attribute(name: str) -> Callable[[DeviceMetadata], bool]:
    """A condition: every device has the attribute ``name`` (and there is a device).

    Names resolve as :meth:`~dra_metadata.Device.attribute` resolves them: an
    unqualified name lives in each device's driver domain.

    >>> import dra_metadata as dm
    >>> md = dm.read_resource_claim_template("gpu", "gpu", root="examples/dra-device-attributes")
    >>> dm.has_attribute("uuid")(md), dm.has_attribute("gpu.example.com/uuid")(md)
    (True, True)
    >>> dm.has_attribute("resource.kubernetes.io/pciBusID")(md)
    False
    """
    if not isinstance(name, str):
        raise TypeError(f"the attribute name must be a str, not {type(name).__name__}")
    if not name:
        raise ValueError("the attribute name must not be empty")

    def missing(md: DeviceMetadata) -> str | None:
        found = False
        for _request, device in md.devices():
            if device.attribute(name) is None:
                return f"without attribute {name} (device {device.pool}/{device.name})"
            found = True
        return None if found else "without devices"

    return _Condition(f"attribute {name} on every device", lambda md: missing(md) is None, missing)


def _all_of(*conditions: Callable[[DeviceMetadata], bool]) -> _Condition:
    """A condition that holds when all of ``conditions`` hold (the CLI combines options)."""
    parts = [_condition_of(condition) for condition in conditions]

    def why_not(md: DeviceMetadata) -> str | None:
        for part in parts:
            reason = part.why_not(md)
            if reason is not None:
                return reason
        return None

    return _Condition(
        " and ".join(part.description for part in parts),
        lambda md: all(part(md) for part in parts),
        why_not,
    )


def _condition_of(until: Callable[[DeviceMetadata], bool] | None) -> _Condition:
    if until is None:
        return _EXISTS
    if until is has_network_data:
        return _NETWORK
    if isinstance(until, _Condition):
        return until
    name = getattr(until, "__name__", None) or repr(until)
    return _Condition(f"{name}(...) to hold", until, lambda md: None)


# --- the per-file decisions: no I/O ------------------------------------------------------


class Change(msgspec.Struct, frozen=True):
    """One event :class:`FileState` decided on, before the path and merged view are added."""

    kind: WatchEventKind
    generation: int | None = None
    claim_uid: str | None = None
    metadata: DeviceMetadata | None = None
    message: str = ""
    error: DRAMetadataError | None = None


class FileState:
    """What a watch knows about one metadata file; decides which events a look yields.

    No I/O and no clock: the caller looks at the file and reports what it
    found, with the time, through :meth:`decoded`, :meth:`broken` or
    :meth:`absent`; each returns the events to deliver. After a broken look
    :attr:`retry_at` says when to look again (backoff from 1 ms, doubling, at
    most 0.1 s apart, never past the error deadline).

    >>> import dra_metadata as dm
    >>> from dra_metadata._watch import FileState
    >>> state = FileState("x-metadata.json", error_timeout=2.0)
    >>> gen1 = dm.DeviceMetadata(metadata=dm.ObjectMeta(uid="u", generation=1))
    >>> [c.kind.value for c in state.decoded(gen1, nlink=1, now=0.0)]
    ['update']
    >>> state.decoded(gen1, nlink=1, now=0.5)  # the same generation again: nothing
    []
    >>> state.broken(dm.DecodeError("half written"), now=1.0), state.retry_at
    ([], 1.001)
    >>> [c.kind.value for c in state.broken(dm.DecodeError("half written"), now=3.0)]
    ['error']
    >>> [c.kind.value for c in state.decoded(gen1, nlink=0, now=3.5)]
    ['stale']
    >>> [c.kind.value for c in state.absent(now=4.0)]
    ['removed']
    """

    __slots__ = (
        "_attempts",
        "_bad_since",
        "bad_error",
        "delivered",
        "error_reported",
        "error_timeout",
        "good",
        "path",
        "retry_at",
        "stale",
    )

    def __init__(self, path: str, *, error_timeout: float = DEFAULT_ERROR_TIMEOUT) -> None:
        self.path = path
        self.error_timeout = error_timeout
        #: ``(claim UID, generation)`` of the last object delivered, or ``None``.
        self.delivered: tuple[str, int] | None = None
        #: The last object delivered (what the merged view uses), or ``None``.
        self.good: DeviceMetadata | None = None
        #: Whether a ``stale`` event was delivered for the file as it is.
        self.stale = False
        #: The last read or decode error, while the file does not decode.
        self.bad_error: DRAMetadataError | None = None
        #: Whether an ``error`` event was delivered for the current bad spell.
        self.error_reported = False
        #: When to look again (monotonic seconds), or ``None``.
        self.retry_at: float | None = None
        self._bad_since: float | None = None
        self._attempts = 0

    @property
    def known(self) -> bool:
        """Whether the user has heard of this file (so its removal is news)."""
        return self.delivered is not None or self.error_reported

    @property
    def broken_now(self) -> bool:
        """Whether the last look found the file undecodable or unreadable."""
        return self._bad_since is not None

    def _last(self) -> tuple[int | None, str | None]:
        if self.delivered is None:
            return None, None
        return self.delivered[1], self.delivered[0]

    def decoded(self, md: DeviceMetadata, *, nlink: int, now: float) -> list[Change]:
        """The file held the complete object ``md``; ``nlink`` is its link count."""
        self._end_bad_spell()
        changes: list[Change] = []
        uid, generation = md.metadata.uid, md.metadata.generation
        last = self.delivered
        if last is None or uid != last[0] or generation > last[1]:
            self.delivered = (uid, generation)
            self.good = md
            changes.append(Change(WatchEventKind.UPDATE, generation, uid, md))
        changes.extend(self._links(nlink, decodes=True))
        return changes

    def _links(self, nlink: int, *, decodes: bool) -> list[Change]:
        """A ``stale`` event the first time the file shows a link count of 0."""
        if nlink > 0:
            self.stale = False
            return []
        if self.stale:
            return []
        self.stale = True
        generation, uid = self._last()
        if decodes:
            last = f"generation {generation} is the last it will see"
        else:
            last = "the file it keeps does not decode"
        return [
            Change(
                WatchEventKind.STALE,
                generation,
                uid,
                self.good if decodes else None,
                f"{self.path} was replaced or removed on the node after this container "
                "started (st_nlink == 0): the bind mount keeps the old file, so later "
                f"updates cannot reach this container; {last} (restart the container to "
                "see newer metadata)",
            )
        ]

    def broken(self, error: DRAMetadataError, *, nlink: int = 1, now: float) -> list[Change]:
        """The file is there but did not decode (or could not be read).

        A link count of 0 means the node replaced it: one ``stale`` event at once,
        as no complete version can arrive any more.
        """
        changes = self._links(nlink, decodes=False)
        if self._bad_since is None:
            self._bad_since = now
            self._attempts = 0
        self._attempts += 1
        self.bad_error = error
        deadline = self._bad_since + self.error_timeout
        if now >= deadline:
            self.retry_at = None  # from now on: events and the rescan
            if not self.error_reported:
                self.error_reported = True
                generation, uid = self._last()
                changes.append(
                    Change(
                        WatchEventKind.ERROR,
                        generation,
                        uid,
                        None,
                        f"not decodable for {now - self._bad_since:.1f}s: {error}",
                        error,
                    )
                )
            return changes
        # The exponent is bounded: 2 ** 1024 does not convert to a float.
        delay = min(_RETRY_MAX, _RETRY_FIRST * 2 ** min(self._attempts - 1, 32))
        self.retry_at = min(now + delay, deadline)
        return changes

    def absent(self, *, now: float) -> list[Change]:
        """The file is not there (any more)."""
        changes: list[Change] = []
        if self.known:
            generation, uid = self._last()
            changes.append(Change(WatchEventKind.REMOVED, generation, uid))
        self.delivered = None
        self.good = None
        self.stale = False
        self.error_reported = False
        self._end_bad_spell()
        return changes

    def _end_bad_spell(self) -> None:
        self._bad_since = None
        self._attempts = 0
        self.bad_error = None
        self.error_reported = False
        self.retry_at = None


# --- what is watched, and how to be told ---------------------------------------------------


class _Target(msgspec.Struct, frozen=True):
    directory: str  # the request directory, as built from the caller's root
    absolute: str  # the same, absolute (the ancestor walk needs it)
    driver: str | None
    file_name: str | None  # <driver>-metadata.json when one driver is watched


def _target(
    claim: str | None,
    pod_claim: str | None,
    request: str,
    driver: str | None,
    root: RootArg,
) -> _Target:
    if (claim is None) == (pod_claim is None):
        raise TypeError("give exactly one of claim= and pod_claim=")
    if claim is not None:
        directory = request_dir(RESOURCE_CLAIMS_SUBDIR, claim, request, root=root)
    else:
        directory = request_dir(RESOURCE_CLAIM_TEMPLATES_SUBDIR, pod_claim, request, root=root)
    file_name = None if driver is None else metadata_file_name(driver)
    return _Target(directory, os.path.abspath(directory), driver, file_name)


class _Options(msgspec.Struct, frozen=True):
    rescan_interval: float
    error_timeout: float
    max_size: int
    backend: Backend


def _options(rescan_interval: float, error_timeout: float, max_size: int, backend: str) -> _Options:
    if not rescan_interval > 0:
        raise ValueError(f"rescan_interval must be positive, got {rescan_interval!r}")
    if not error_timeout >= 0:
        raise ValueError(f"error_timeout must not be negative, got {error_timeout!r}")
    if backend not in ("auto", "inotify", "watchfiles"):
        raise ValueError(f"backend must be 'auto', 'inotify' or 'watchfiles', not {backend!r}")
    return _Options(float(rescan_interval), float(error_timeout), max_size, cast(Backend, backend))


class _WatchfilesNotifier:
    """The fallback where inotify is not available: watchfiles over the current paths.

    watchfiles watches a fixed set of paths per call, so the watch restarts
    whenever a path is added, removed or moved to another inode; a restart
    reports an overflow so that the session looks at everything once (nothing
    that happened during the restart is lost). Waits are as precise as its
    loop's step (50 ms).
    """

    def __init__(self) -> None:
        import threading

        import watchfiles

        self._watchfiles = watchfiles
        self._paths: dict[str, str] = {}  # absolute path -> key the session knows it by
        self._gen: Generator[set[tuple[_WatchfilesChange, str]], None, None] | None = None
        self._dirty = True
        self._lock = threading.Lock()
        self._busy = False
        self._closed = False

    def fileno(self) -> int | None:
        return None

    def add(self, path: str, *, directory: bool) -> int:
        try:
            info = os.stat(path)
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
        restarted = False
        if self._dirty or self._gen is None:
            self._stop()
            self._dirty = False
            restarted = True
            self._gen = self._watchfiles.watch(
                *self._paths,
                watch_filter=None,
                step=_WATCHFILES_STEP_MS,
                rust_timeout=_WATCHFILES_TICK_MS,
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


def _open_notifier(backend: Backend) -> _Notifier:
    if backend in ("auto", "inotify"):
        from ._inotify import Inotify, InotifyUnavailableError

        try:
            return Inotify()
        except InotifyUnavailableError as err:
            if backend == "inotify":
                raise DRAMetadataError(f"cannot watch with inotify: {err}") from None
            _logger().info("inotify unavailable (%s); watching with watchfiles", err)
    return _WatchfilesNotifier()


# --- the session: looks at files and directories, shared by both twins ------------------


class _Tracked:
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
            self.signature == _signature(info)
            and self.read_at - max(info.st_mtime_ns, info.st_ctime_ns) / 1e9 >= _SETTLED
        )


def _signature(info: os.stat_result) -> tuple[int, ...]:
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


class _Session:
    """One request directory watched: the files, the directory watch, the timers.

    Every notification is just a reason to look again: at a file (it changed,
    its links or its mount changed) or at the directory (entries came or went).
    A look stats and reads the file and tells its :class:`FileState`.
    """

    def __init__(self, target: _Target, options: _Options, notifier: _Notifier) -> None:
        self.target = target
        self.options = options
        self.notifier = notifier
        self.files: dict[str, _Tracked] = {}
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
                self.files[path] = _Tracked(
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
        tracked.signature, tracked.read_at = _signature(info), read_at
        return state.decoded(md, nlink=info.st_nlink, now=now)

    def _gone(self, path: str, now: float) -> list[Change]:
        changes = self.files.pop(path).state.absent(now=now)
        self.notifier.remove(path)
        return changes

    def _warn(self, path: str, problem: int) -> None:
        if path not in self._warned:
            self._warned.add(path)
            _logger().warning(
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

    def describe(self, condition: _Condition) -> str:
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


class _Run:
    """One watch from start to end; what both twins share apart from the waiting."""

    def __init__(
        self,
        target: _Target,
        options: _Options,
        *,
        stop_event: _StopEvent | None,
        timeout: float | None,
    ) -> None:
        if timeout is not None and not timeout >= 0:
            raise ValueError(f"timeout must not be negative, got {timeout!r}")
        self.target = target
        self.options = options
        self.stop_event = stop_event
        self.timeout = timeout
        self.deadline: float | None = None
        self.session: _Session | None = None
        self.notifier: _Notifier | None = None

    def open(self) -> _Notifier:
        """Start: create the notifier (the deadline counts from here)."""
        now = time.monotonic()
        self.deadline = None if self.timeout is None else now + self.timeout
        self.notifier = _open_notifier(self.options.backend)
        self.session = _Session(self.target, self.options, self.notifier)
        return self.notifier

    def begin(self) -> list[WatchEvent]:
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
        assert self.session is not None
        return self.session.process(triggers, overflow, time.monotonic())

    def close(self) -> None:
        if self.notifier is not None:
            self.notifier.close()


def _iterate(run: _Run) -> Generator[WatchEvent, None, None]:
    """The synchronous driver: block in the notifier between rounds."""
    notifier = run.open()
    try:
        yield from run.begin()
        while (wait := run.next_wait()) is not None:
            yield from run.step(*notifier.wait(wait))
    finally:
        run.close()


async def _aiterate(run: _Run) -> AsyncGenerator[WatchEvent, None]:
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
            if fd is None:  # watchfiles: its blocking wait runs in the default executor
                found = await loop.run_in_executor(None, notifier.wait, wait)
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


# --- the public functions ---------------------------------------------------------------


def watch(
    *,
    claim: str | None = None,
    pod_claim: str | None = None,
    request: str,
    driver: str | None = None,
    root: RootArg = None,
    stop_event: _StopEvent | None = None,
    timeout: float | None = None,
    rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
    error_timeout: float = DEFAULT_ERROR_TIMEOUT,
    max_size: int = DEFAULT_MAX_SIZE,
    backend: Backend = "auto",
) -> Generator[WatchEvent, None, None]:
    """Yield a :class:`WatchEvent` each time a metadata file of one request changes.

    Select the request as the read functions do: ``claim=`` (a claim referenced
    by name) or ``pod_claim=`` (a claim made from a template), ``request=``, and
    optionally ``driver=`` (that driver's file only) and ``root=``. Files present
    at the start come first, as ``update`` events. The directory, and its
    parents, may not exist yet: files are picked up when they appear.

    The watch ends when ``stop_event.is_set()`` (checked at least every 50 ms),
    after ``timeout`` seconds, or when the caller stops iterating (``break``, or
    ``close()`` on the generator). ``rescan_interval`` is the safety net's
    period: every file is read again that often, so no final state is missed
    even if a notification is. A file that stays undecodable ``error_timeout``
    seconds gives one ``error`` event. ``backend``: ``"auto"`` (inotify on
    Linux, else watchfiles), ``"inotify"`` or ``"watchfiles"``.

    Names are checked when called (:class:`~dra_metadata.InvalidNameError`).

    >>> import dra_metadata as dm
    >>> for event in dm.watch(claim="nic", request="eth", root="examples/dra-device-attributes",
    ...                       timeout=0):
    ...     print(event.kind, event.driver, event.generation, dm.has_network_data(event.merged))
    update sriov.example.com 2 True
    """
    target = _target(claim, pod_claim, request, driver, root)
    run = _Run(
        target,
        _options(rescan_interval, error_timeout, max_size, backend),
        stop_event=stop_event,
        timeout=timeout,
    )
    return _iterate(run)


def awatch(
    *,
    claim: str | None = None,
    pod_claim: str | None = None,
    request: str,
    driver: str | None = None,
    root: RootArg = None,
    stop_event: _StopEvent | None = None,
    timeout: float | None = None,
    rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
    error_timeout: float = DEFAULT_ERROR_TIMEOUT,
    max_size: int = DEFAULT_MAX_SIZE,
    backend: Backend = "auto",
) -> AsyncGenerator[WatchEvent, None]:
    """The asyncio twin of :func:`watch`: the same parameters, the same events.

    With inotify (Linux) it uses no thread: the event loop watches the inotify
    descriptor. Cancelling the task that iterates closes everything at once;
    after ``break``, call ``aclose()`` (or let the loop finalize it).
    ``stop_event`` can be an ``asyncio.Event``.

    >>> import asyncio, dra_metadata as dm
    >>> async def main():
    ...     async for event in dm.awatch(pod_claim="gpu", request="gpu", timeout=0,
    ...                                  root="examples/dra-device-attributes"):
    ...         print(event.kind, event.driver, event.generation)
    >>> asyncio.run(main())
    update gpu.example.com 1
    """
    target = _target(claim, pod_claim, request, driver, root)
    run = _Run(
        target,
        _options(rescan_interval, error_timeout, max_size, backend),
        stop_event=stop_event,
        timeout=timeout,
    )
    return _aiterate(run)


class _Waiter:
    """The part of :func:`wait_for` and :func:`await_for` that does not wait."""

    def __init__(self, run: _Run, until: Callable[[DeviceMetadata], bool] | None) -> None:
        self.run = run
        self.condition = _condition_of(until)
        self.last: MergedDeviceMetadata | None = None

    def done(self, event: WatchEvent) -> bool:
        self.last = event.merged
        return event.merged is not None and bool(self.condition(event.merged))

    def timed_out(self) -> WaitTimeoutError:
        target = self.run.target
        seen = "nothing" if self.run.session is None else self.run.session.describe(self.condition)
        return WaitTimeoutError(
            f"timed out after {self.run.timeout:g}s waiting for {self.condition.description} "
            f"in {target.directory}; last seen: {seen}",
            path=target.directory,
            last_seen=self.last,
        )


def wait_for(
    *,
    claim: str | None = None,
    pod_claim: str | None = None,
    request: str,
    driver: str | None = None,
    root: RootArg = None,
    until: Callable[[DeviceMetadata], bool] | None = None,
    timeout: float | None = None,
    rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
    error_timeout: float = DEFAULT_ERROR_TIMEOUT,
    max_size: int = DEFAULT_MAX_SIZE,
    backend: Backend = "auto",
) -> MergedDeviceMetadata:
    """Wait until the request's merged metadata satisfies ``until``; return it.

    Without ``until``, wait until there is metadata at all (a file that
    decodes). Conditions: :func:`has_network_data`, :func:`has_generation`,
    :func:`has_attribute`, or any function of the merged metadata. The
    selection and the other parameters are :func:`watch`'s. Raises
    :class:`WaitTimeoutError` after ``timeout`` seconds (``None``: wait for
    ever), saying what was last seen.

    >>> import dra_metadata as dm
    >>> md = dm.wait_for(claim="nic", request="eth", until=dm.has_network_data, timeout=5,
    ...                  root="examples/dra-device-attributes")
    >>> md.requests[0].devices[0].network_data.interface_name
    'net1'
    >>> try:
    ...     dm.wait_for(pod_claim="gpu", request="gpu", until=dm.has_network_data, timeout=0,
    ...                 root="examples/dra-device-attributes")
    ... except dm.WaitTimeoutError as err:
    ...     print(str(err).split("last seen: ")[1])
    gpu.example.com-metadata.json generation 1 without network data (device worker-1/gpu-0)
    """
    target = _target(claim, pod_claim, request, driver, root)
    run = _Run(
        target,
        _options(rescan_interval, error_timeout, max_size, backend),
        stop_event=None,
        timeout=timeout,
    )
    waiter = _Waiter(run, until)
    events = _iterate(run)
    try:
        for event in events:
            if waiter.done(event):
                assert event.merged is not None
                return event.merged
    finally:
        events.close()
    raise waiter.timed_out()


async def await_for(
    *,
    claim: str | None = None,
    pod_claim: str | None = None,
    request: str,
    driver: str | None = None,
    root: RootArg = None,
    until: Callable[[DeviceMetadata], bool] | None = None,
    timeout: float | None = None,
    rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
    error_timeout: float = DEFAULT_ERROR_TIMEOUT,
    max_size: int = DEFAULT_MAX_SIZE,
    backend: Backend = "auto",
) -> MergedDeviceMetadata:
    """The asyncio twin of :func:`wait_for`: the same parameters and result.

    >>> import asyncio, dra_metadata as dm
    >>> md = asyncio.run(dm.await_for(claim="nic", request="eth", until=dm.has_generation(2),
    ...                               root="examples/dra-device-attributes", timeout=5))
    >>> md.sources[0].generation
    2
    """
    target = _target(claim, pod_claim, request, driver, root)
    run = _Run(
        target,
        _options(rescan_interval, error_timeout, max_size, backend),
        stop_event=None,
        timeout=timeout,
    )
    waiter = _Waiter(run, until)
    events = _aiterate(run)
    try:
        async for event in events:
            if waiter.done(event):
                assert event.merged is not None
                return event.merged
    finally:
        await events.aclose()
    raise waiter.timed_out()


# --- handlers called from a thread ---------------------------------------------------------

_Handler = TypeVar("_Handler", bound=Callable[[WatchEvent], object])


class MetadataWatcher:
    """Call registered handlers for one request's watch events, from a background thread.

    For services that register callbacks rather than loop over :func:`watch`
    themselves. The selection and options are :func:`watch`'s. Handlers run in
    the watcher's thread, in registration order; one that raises is logged on
    the ``dra_metadata`` logger and the others still run.

    >>> import threading, dra_metadata as dm
    >>> seen = threading.Event()
    >>> watcher = dm.MetadataWatcher(claim="nic", request="eth",
    ...                              root="examples/dra-device-attributes")
    >>> @watcher.on(dm.WatchEventKind.UPDATE)
    ... def configure(event):
    ...     print("configure", event.metadata.requests[0].devices[0].network_data.interface_name)
    ...     seen.set()
    >>> with watcher:
    ...     _ = seen.wait(10)
    configure net1
    """

    def __init__(
        self,
        *,
        claim: str | None = None,
        pod_claim: str | None = None,
        request: str,
        driver: str | None = None,
        root: RootArg = None,
        rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
        error_timeout: float = DEFAULT_ERROR_TIMEOUT,
        max_size: int = DEFAULT_MAX_SIZE,
        backend: Backend = "auto",
    ) -> None:
        import threading

        self._target = _target(claim, pod_claim, request, driver, root)
        self._options = _options(rescan_interval, error_timeout, max_size, backend)
        self._handlers: list[tuple[WatchEventKind | None, Callable[[WatchEvent], object]]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: The exception that ended the watch early, if one did.
        self.exception: BaseException | None = None

    def add_handler(
        self, handler: Callable[[WatchEvent], object], kind: WatchEventKind | str | None = None
    ) -> None:
        """Call ``handler(event)`` for events of ``kind`` (every event when ``None``)."""
        self._handlers.append((None if kind is None else WatchEventKind(kind), handler))

    def on(self, kind: WatchEventKind | str | None = None) -> Callable[[_Handler], _Handler]:
        """Decorator form of :meth:`add_handler`."""

        def register(handler: _Handler) -> _Handler:
            self.add_handler(handler, kind)
            return handler

        return register

    def run(self) -> None:
        """Watch in the calling thread until :meth:`stop` is called."""
        run = _Run(self._target, self._options, stop_event=self._stop, timeout=None)
        for event in _iterate(run):
            self._dispatch(event)

    def _dispatch(self, event: WatchEvent) -> None:
        for kind, handler in list(self._handlers):
            if kind is None or kind == event.kind:
                try:
                    handler(event)
                except Exception:
                    _logger().exception("watch handler %r failed on %s", handler, event.kind)

    def _thread_main(self) -> None:
        try:
            self.run()
        except BaseException as err:  # reported, not lost with the thread
            self.exception = err
            _logger().exception("watching %s stopped", self._target.directory)

    def start(self) -> MetadataWatcher:
        """Start watching in a daemon thread; returns ``self``."""
        import threading

        if self._thread is not None:
            raise RuntimeError("this watcher was started already")
        self._thread = threading.Thread(
            target=self._thread_main,
            name=f"dra-metadata-watch {self._target.directory}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stop watching; wait up to ``timeout`` seconds for the thread to end."""
        import threading

        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        """Whether the watcher's thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
