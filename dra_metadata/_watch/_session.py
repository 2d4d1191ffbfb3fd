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

from .._errors import DecodeError, DRAMetadataError, InvalidNameError, SymlinkError, os_reason
from .._model import DeviceMetadata, MergedDeviceMetadata
from .._paths import (
    METADATA_FILE_SUFFIX,
    RESOURCE_CLAIM_TEMPLATES_SUBDIR,
    RESOURCE_CLAIMS_SUBDIR,
    ClaimKind,
    RootArg,
    driver_of,
    metadata_file_name,
    request_dir,
    root_path,
)
from .._read import decode, merge, read_fd
from .._select import Place, Question, ask, narrow, resolve
from ._backends import (
    Backend,
    BackendError,
    Notifier,
    check_backend,
    open_notifier,
    polling_fallback,
)
from ._backends.base import BURST_GAP, CLOSE_WAIT, FIRST_QUIET
from ._conditions import Condition
from ._events import WatchEvent
from ._state import Change, FileState

if TYPE_CHECKING:
    import logging

__all__ = [
    "DEFAULT_RESCAN_INTERVAL",
    "STABLE_READ_DELAY",
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

#: The stable-read rule, for changes whose writer's close is not heard (the polling and
#: watchfiles backends; with inotify, a writer that keeps the file open longer than
#: :data:`~._backends.base.CLOSE_WAIT`, or before the first close is heard): content
#: that changed is delivered only when a second read, begun at least this many seconds
#: after the first, returns the same bytes (and stat the same size, times and inode).
#: ``None``: one read is enough, closes are not waited for either (every rule off; what
#: ``benchmarks/bench_watch.py`` measures the rules' cost against).
STABLE_READ_DELAY: float | None = 0.002
# A handle is open on a file that changed, with no write heard through it yet (a writer
# about to write, or a reader): the file is looked at again after this many seconds.
_OPEN_RETRY: Final = 0.005
# File times come from a coarse clock (a tick, up to 10 ms): an age read from them is
# counted this much short.
_COARSE: Final = 0.01
# When the deadline passes while reads are settling, they get this long to settle.
_SETTLE_GRACE: Final = 0.05

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
# Below the root every level is opened without following a link, as _select.scan opens them.
_ROOT_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC
_DIR_FLAGS: Final = _ROOT_FLAGS | os.O_NOFOLLOW
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


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
    root: str  # the caller's root (it may be a link; nothing below it may)
    parts: tuple[str, str, str]  # the kind directory, the claim and the request below it
    question: Question  # what was asked, for the one resolver (a subrequest is checked)
    subrequest: bool  # question.subrequest: else every request of a file answers

    def answers(self, md: DeviceMetadata) -> tuple[str, ...]:
        """The request names of ``md`` that answer; the readers' not-found when none does.

        A file holding another subrequest than the one asked (``gpu/high-memory``
        for ``gpu/low-memory``) can never come to hold it: the allocation is made
        once, so the watch ends there with the error every door gives.
        """
        names = tuple([request.name for request in md.requests])
        if not self.subrequest:
            return names
        subdir, claim, base = self.parts
        kind: ClaimKind = "claim" if subdir == RESOURCE_CLAIMS_SUBDIR else "template"
        ((_, kept),) = resolve(
            self.question, self.root, [Place(kind, claim, base, self.directory, names)]
        )
        return kept


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
    top = check_root(root)
    subdir = RESOURCE_CLAIMS_SUBDIR if claim is not None else RESOURCE_CLAIM_TEMPLATES_SUBDIR
    directory = request_dir(subdir, claim if claim is not None else pod_claim, request, root=top)
    file_name = None if driver is None else metadata_file_name(driver)
    claim_dir, base = os.path.split(directory)
    parts = (subdir, os.path.basename(claim_dir), base)
    question = ask(
        kind="claim" if claim is not None else "template",
        claim=claim if claim is not None else pod_claim,
        request=request,
        driver=driver,
    )
    target = Target(
        directory,
        os.path.abspath(directory),
        driver,
        file_name,
        top,
        parts,
        question,
        question.subrequest,
    )
    if isinstance(max_size, bool) or not isinstance(max_size, int):
        raise TypeError(f"max_size must be an int, not {type(max_size).__name__}")
    if not rescan_interval > 0:
        raise ValueError(f"rescan_interval must be positive, got {rescan_interval!r}")
    if not error_timeout >= 0:
        raise ValueError(f"error_timeout must not be negative, got {error_timeout!r}")
    options = Options(
        float(rescan_interval), float(error_timeout), max_size, check_backend(backend)
    )
    return Plan(target, options)


def check_root(root: RootArg) -> str:
    """``root`` as the path to watch under; checked as the readers check it.

    A bytes root is a :class:`TypeError`, a NUL in it an
    :class:`~dra_metadata.InvalidNameError`, both when the function is called.
    """
    top = root_path(root)
    if "\x00" in top:
        raise InvalidNameError(f"metadata root {top!r}: embedded null byte", path=top)
    return top


def _link_error(path: str) -> SymlinkError:
    """The scanner's words for a link below the root."""
    return SymlinkError(
        f"{path}: is a symbolic link; links below the metadata root are not followed", path=path
    )


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


# --- the session: looks at files and directories, shared by both drivers ----------------


class Tracked:
    """A file the session follows: its decisions plus what the I/O side remembers."""

    __slots__ = (
        "candidate",
        "candidate_at",
        "candidate_signature",
        "driver",
        "identity",
        "name",
        "raw",
        "raw_md",
        "read_at",
        "settle_at",
        "signature",
        "state",
    )

    def __init__(self, state: FileState) -> None:
        self.state = state
        self.name = os.path.basename(state.path)  # the file's name in the request directory
        self.driver = driver_of(state.path)
        self.identity: tuple[int, int] | None = None  # (st_dev, st_ino) the watch is on
        self.raw: bytes | None = None  # the last bytes that decoded, and what they gave
        self.raw_md: DeviceMetadata | None = None
        # What stat said when those bytes were read, and when (wall clock, as mtimes are).
        self.signature: tuple[int, ...] | None = None
        self.read_at = 0.0
        # The stable-read rule: changed bytes read once, waiting for a second read
        # that agrees (at settle_at, monotonic), with what stat said before that read.
        self.candidate: bytes | None = None
        self.candidate_signature: tuple[int, ...] | None = None
        self.candidate_at = 0.0
        self.settle_at: float | None = None

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

    def look_at(self, at: float) -> list[Change]:
        """Nothing to deliver yet: look at the file again at ``at`` (monotonic), or sooner.

        A write not closed yet brings a look with its close (``IN_CLOSE_WRITE``),
        and bytes waiting to stand still are looked at when they have; the timer
        is the bound either way.
        """
        self.candidate = None
        self.settle_at = at
        return []

    def stable(self, data: bytes, info: os.stat_result, delay: float | None) -> bool:
        """The stable-read rule: whether ``data``, just read, may be delivered.

        Bytes equal to the last ones delivered need nothing more (there is nothing
        new to deliver). Changed bytes must be read twice, the second read begun at
        least ``delay`` seconds after the first, with the same bytes and the same
        stat (inode, size, times) both times: a writer that overwrites the file in
        place in several writes is read as a mixture at most once in a row, unless
        it pauses longer than ``delay`` between its writes. When this returns
        ``False``, :attr:`settle_at` says when to read again.
        """
        if delay is None or (data == self.raw and self.raw_md is not None):
            self.candidate, self.settle_at = None, None
            return True
        now = time.monotonic()
        seen = signature(info)
        if data != self.candidate or seen != self.candidate_signature:
            self.candidate, self.candidate_signature, self.candidate_at = data, seen, now
            self.settle_at = now + delay
            return False
        if now < self.candidate_at + delay:  # read again too soon (another notification)
            self.settle_at = self.candidate_at + delay
            return False
        self.candidate, self.settle_at = None, None
        return True


def signature(info: os.stat_result) -> tuple[int, ...]:
    return (
        info.st_dev,
        info.st_ino,
        info.st_size,
        info.st_nlink,
        info.st_mtime_ns,
        info.st_ctime_ns,
    )


def _deepest_dir(target: Target) -> tuple[str, tuple[int, int] | None]:
    """The deepest directory on the way to the request directory, and its identity.

    Up to the root, links are followed (the root may be one) and a missing part
    means its parent; below the root each level must be a real directory
    (``lstat``): the walk stops at a link, which reads then report.
    """
    current = os.path.abspath(target.root)
    while True:
        try:
            info = os.stat(current)
        except OSError:
            pass
        else:
            if stat.S_ISDIR(info.st_mode):
                break
        parent = os.path.dirname(current)
        if parent == current:
            return current, None
        current = parent
    if current != os.path.abspath(target.root):
        return current, (info.st_dev, info.st_ino)
    for part in target.parts:
        below = os.path.join(current, part)
        try:
            part_info = os.lstat(below)
        except OSError:
            break
        if not stat.S_ISDIR(part_info.st_mode):
            break
        current, info = below, part_info
    return current, (info.st_dev, info.st_ino)


class _Listing:
    """The request directory opened for one round, as the scanner opens it.

    ``fd`` is its descriptor (``None`` when it is not there); ``error`` says why
    it could not be opened when it is there (a link below the root, a permission
    refused), which the session retries like a file that does not decode.
    """

    def __init__(self, target: Target) -> None:
        self.fd: int | None = None
        self.error: DRAMetadataError | None = None
        try:
            fd = os.open(target.root, _ROOT_FLAGS)
        except OSError as err:
            if err.errno not in (errno.ENOENT, errno.ENOTDIR):
                self.error = DRAMetadataError(
                    f"metadata root {target.root}: {os_reason(err)}", path=target.root
                )
            return
        path = target.root
        for part in target.parts:
            path = os.path.join(path, part)
            try:
                below = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as err:
                if err.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(part, fd):
                    self.error = _link_error(path)
                elif err.errno not in (errno.ENOENT, errno.ENOTDIR):
                    self.error = DRAMetadataError(
                        f"open directory {path}: {os_reason(err)}", path=path
                    )
                os.close(fd)
                return
            os.close(fd)
            fd = below
        self.fd = fd

    def names(self, target: Target) -> list[str]:
        """The metadata file names in the directory (or just the one driver's, if there)."""
        assert self.fd is not None
        if target.file_name is not None:
            try:
                os.stat(target.file_name, dir_fd=self.fd, follow_symlinks=False)
            except FileNotFoundError:
                return []
            except OSError as err:
                path = os.path.join(target.directory, target.file_name)
                raise DRAMetadataError(f"{path}: {os_reason(err)}", path=path) from None
            return [target.file_name]
        try:
            with os.scandir(self.fd) as listing:
                return [e.name for e in listing if e.name.endswith(METADATA_FILE_SUFFIX)]
        except OSError as err:
            raise DRAMetadataError(
                f"list directory {target.directory}: {os_reason(err)}", path=target.directory
            ) from None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Session:
    """One request directory watched: the files, the directory watch, the timers.

    Every notification is just a reason to look again: at a file (it changed,
    its links or its mount changed) or at the directory (entries came or went).
    A look stats and reads the file and tells its :class:`FileState`; the
    directory has a :class:`FileState` of its own, for when it cannot be read.
    """

    def __init__(self, target: Target, options: Options, notifier: Notifier) -> None:
        self.target = target
        self.options = options
        self.notifier = notifier
        self.files: dict[str, Tracked] = {}
        self.dir_path: str | None = None
        self.dir_identity: tuple[int, int] | None = None
        self.dir_state = FileState(
            target.directory, error_timeout=options.error_timeout, problem="not readable"
        )
        self.next_rescan = 0.0
        self.settle_delay = STABLE_READ_DELAY
        self._warned: set[str] = set()
        self._dir_changes: list[Change] = []
        # The request directory as the last walk opened it, kept between rounds.
        self._opened: _Listing | None = None

    # The directory side.

    def _sync_dirs(self) -> None:
        """Watch the request directory, or its deepest existing ancestor until it exists."""
        root = os.path.abspath(self.target.root)
        for _attempt in range(64):
            path, identity = _deepest_dir(self.target)
            # Also when the kernel dropped the watch (IN_IGNORED) and the path shows
            # the same (device, inode) again: a recreated directory may reuse the number.
            if (path, identity) != (
                self.dir_path,
                self.dir_identity,
            ) or not self.notifier.watching(path):
                if self.dir_path is not None and self.dir_path != path:
                    self.notifier.remove(self.dir_path)
                # Links are followed up to the root, never below it.
                follow = not path.startswith(root.rstrip(os.sep) + os.sep) or path == root
                # In the request directory only metadata files matter (the one driver's,
                # when one is watched); in an ancestor, anything may be on the way to it.
                entries = None
                if path == self.target.absolute:
                    entries = self.target.file_name or METADATA_FILE_SUFFIX
                problem = self.notifier.add(path, directory=True, follow=follow, entries=entries)
                if problem in (errno.ENOENT, errno.ENOTDIR):
                    continue  # it went away meanwhile: walk again
                if problem:
                    self._warn(path, problem)
                self.dir_path, self.dir_identity = path, identity
            # The watch is in place before this second look, so nothing created in
            # between goes unnoticed: either this look sees it, or an event will.
            if _deepest_dir(self.target) == (path, identity):
                return

    def _listing(self, listing: _Listing, now: float) -> set[str] | None:
        """The metadata files listed; ``None`` when the directory cannot be read now."""
        error = listing.error
        names: list[str] = []
        if error is None and listing.fd is not None:
            try:
                names = listing.names(self.target)
            except DRAMetadataError as err:
                error = err
        if error is not None:
            self._dir_changes.extend(self.dir_state.broken(error, now=now))
            return None
        if self.dir_state.broken_now or self.dir_state.error_reported:
            self.dir_state.absent(now=now)  # readable again: its bad spell is over
        return {os.path.join(self.target.directory, name) for name in names}

    def _reconcile(self, listing: _Listing, now: float) -> set[str]:
        """Start following new files; return the new ones and the ones not listed.

        A directory that cannot be read lists nothing new and loses nothing: its
        files keep their state and are looked at when due.
        """
        present = self._listing(listing, now)
        if present is None:
            return set()
        to_look = {path for path in self.files if path not in present}
        for path in present:
            if path not in self.files:
                self.files[path] = Tracked(
                    FileState(path, error_timeout=self.options.error_timeout)
                )
                to_look.add(path)
        return to_look

    # The file side.

    def _look(
        self, path: str, now: float, listing: _Listing, *, lazy: bool = False
    ) -> list[Change]:
        """Stat and read ``path``; tell its state. ``lazy``: skip the read if stat allows.

        The file is looked at through the request directory as ``listing``
        opened it: a link where the file is, or on the way to it, is refused as
        the scanner refuses it, and nothing but a regular file is ever opened.
        """
        tracked = self.files[path]
        state = tracked.state
        # A confirming read is due no more: this look reads again (and stable() sets a
        # new time), or ends without a read, whose own retry takes over.
        tracked.settle_at = None
        if listing.error is not None:
            return state.broken(listing.error, now=now)
        if listing.fd is None:
            return self._gone(path, now)
        name = tracked.name
        try:
            info = os.stat(name, dir_fd=listing.fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return self._gone(path, now)
        except OSError as err:
            return state.broken(
                DRAMetadataError(f"stat {path}: {os_reason(err)}", path=path), now=now
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
        mode = info.st_mode
        if not stat.S_ISREG(mode):
            if stat.S_ISLNK(mode):  # watched itself above, so its replacement is heard
                return state.broken(_link_error(path), nlink=info.st_nlink, now=now)
            if not stat.S_ISDIR(mode):
                # A FIFO, a device, a socket: refused without being opened.
                error = DRAMetadataError(f"{path}: not a regular file", path=path)
                return state.broken(error, nlink=info.st_nlink, now=now)
        if lazy and not state.broken_now and tracked.unchanged(info):
            return []
        writes = None if self.settle_delay is None else self.notifier.writes(path)
        # One read decides (the writer closed, or the bytes stood still long enough):
        # the writes heard before it, which must be all there are after it.
        mark: tuple[int, float] | None = None
        waited = 0.0  # how long the bytes stood still before that read
        delay = self.settle_delay  # the stable read's, when no mark is set
        if writes is not None:
            writes.forget_idle(now)
            quiet = writes.quiet
            if writes.dirty_at is not None:
                if now - writes.dirty_at < CLOSE_WAIT:
                    return tracked.look_at(writes.dirty_at + CLOSE_WAIT)  # the close is due
                # Not closed within the wait: a writer keeping the file open (the stable read).
            elif quiet is None:
                # Nothing heard since the watch began: a writer may be at work through a
                # handle older than the watch. Bytes last changed long enough ago (by the
                # file's times) are final; newer ones must stand still that long (the
                # stable read, its two reads that far apart).
                changed = max(info.st_mtime_ns, info.st_ctime_ns) / 1e9
                if time.time() - changed >= FIRST_QUIET + _COARSE:
                    mark, waited = (writes.closes, writes.last_write), FIRST_QUIET
                else:
                    delay = FIRST_QUIET
            elif quiet == 0.0 and not writes.handles():
                # The writer closed, alone: one read (in a burst, once it is over).
                if writes.bursting and now < writes.last_write + BURST_GAP:
                    return tracked.look_at(writes.last_write + BURST_GAP)
                mark, waited = (writes.closes, writes.last_write), 0.0
            elif (
                quiet == 0.0
                and writes.opened_at is not None
                and now - writes.opened_at < CLOSE_WAIT
            ):
                # A handle open with no write heard through it (a writer about to write,
                # or a reader): it writes, or closes soon.
                return tracked.look_at(now + _OPEN_RETRY)
            elif now < writes.last_write + quiet:
                # Handles the watch could not count: the bytes must stand still first.
                return tracked.look_at(writes.last_write + quiet)
            else:
                mark, waited = (writes.closes, writes.last_write), quiet
        read_at = time.time()
        if mark is not None and writes is not None:
            writes.own += 1  # this read's open and close are the watch's own
            writes.excuse = waited
        try:
            data = self._read(name, path, listing.fd)
        except (FileNotFoundError, DRAMetadataError) as err:
            if writes is not None:
                writes.own = 0
            if isinstance(err, FileNotFoundError):
                return self._gone(path, now)
            return state.broken(err, nlink=info.st_nlink, now=now)
        if mark is not None and writes is not None:
            # Was the file written while it was read? Every write is heard (a writer's
            # open before its first byte): then the next close, or timer, brings the
            # next look. A handle opened meanwhile that has not written changes nothing.
            self.notifier.drain()
            writes.own = 0
            if self.notifier.writes(path) is not writes:
                return []
            if writes.dirty_at is not None or (writes.closes, writes.last_write) != mark:
                return []
            tracked.candidate = None
        elif not tracked.stable(data, info, delay):
            return []
        if data == tracked.raw and tracked.raw_md is not None:
            md = tracked.raw_md
        else:
            try:
                md = decode(data)
            except (DecodeError, RecursionError) as err:  # nesting too deep for the decoder
                error = DecodeError(f"{path}: {err}", path=path)
                return state.broken(error, nlink=info.st_nlink, now=now)
            tracked.raw, tracked.raw_md = data, md
        if self.target.subrequest:
            self.target.answers(md)  # another subrequest than the one asked: the not-found
        tracked.signature, tracked.read_at = signature(info), read_at
        return state.decoded(md, nlink=info.st_nlink, now=now)

    def _read(self, name: str, path: str, dir_fd: int) -> bytes:
        """The bytes of ``name`` in ``dir_fd``, opened without following a link."""
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            raise
        except OSError as err:
            if err.errno == errno.ELOOP or _is_link(name, dir_fd):
                raise _link_error(path) from None
            raise DRAMetadataError(
                f"open metadata file: open {path}: {os_reason(err)}", path=path
            ) from None
        try:
            return read_fd(fd, path, max_size=self.options.max_size)
        finally:
            os.close(fd)

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

    def _walk(self, again: bool) -> _Listing:
        """The request directory opened as the scanner opens it; walked ``again`` if asked.

        The descriptor is kept between rounds: a round that only looks at files
        that changed reads them through the directory the last walk opened. The
        walk is made again whenever the directory is listed again: when an entry
        on the way came or went (the directory watches hear the request
        directory itself go), at the safety-net rescan, after lost events, and
        every round while the directory is missing or cannot be opened.
        """
        opened = self._opened
        if again or opened is None or opened.fd is None or opened.error is not None:
            if opened is not None:
                opened.close()
            opened = self._opened = _Listing(self.target)
        return opened

    def close(self) -> None:
        """Close the request directory kept open (the session can begin again)."""
        if self._opened is not None:
            self._opened.close()
            self._opened = None

    def begin(self, now: float) -> list[WatchEvent]:
        """Set up the watches and look at everything: the initial ``update`` events."""
        self.next_rescan = now + self.options.rescan_interval
        self._sync_dirs()
        listing = self._walk(again=True)
        self._reconcile(listing, now)
        return self._round(set(self.files), now, listing)

    def process(self, triggers: set[str], overflow: bool, now: float) -> list[WatchEvent]:
        """Look at what the notifications name, what is due for a retry, and (when due) all.

        When nothing is named and nothing is due, nothing is opened either.
        """
        to_look, relist = self._triggered(triggers)
        rescan = overflow or now >= self.next_rescan
        if rescan:
            self.next_rescan = now + self.options.rescan_interval
        dir_retry = self.dir_state.retry_at
        relist = relist or rescan or (dir_retry is not None and dir_retry <= now)
        for path, tracked in self.files.items():
            retry_at = tracked.state.retry_at
            if retry_at is not None and retry_at <= now:
                to_look.add(path)
            if tracked.settle_at is not None and tracked.settle_at <= now:
                to_look.add(path)
        if overflow:  # notifications were lost: read everything
            to_look.update(self.files)
        if not relist and not to_look:
            return []
        if relist:
            self._sync_dirs()
        listing = self._walk(again=relist)
        if relist:
            to_look |= self._reconcile(listing, now)
        lazy = set(self.files) - to_look if rescan else set()
        return self._round(to_look, now, listing, lazy=lazy)

    def _triggered(self, triggers: set[str]) -> tuple[set[str], bool]:
        """The followed files ``triggers`` name, and whether the directory must be listed.

        A notifier names a file, a directory, or an entry of a directory (inotify
        names the entry that came, went or was renamed over): an entry of the
        request directory that is a followed file is looked at; one that cannot
        be a metadata file (a writer's temporary file) is nothing to us; anything
        else (a new file, a directory) has the directory listed again.
        """
        to_look: set[str] = set()
        relist = False
        for path in triggers:
            if path in self.files:
                to_look.add(path)
                continue
            parent, name = os.path.split(path)
            if parent != self.target.absolute:
                relist = True
            elif name == self.target.file_name or (
                self.target.file_name is None and name.endswith(METADATA_FILE_SUFFIX)
            ):
                spelled = os.path.join(self.target.directory, name)
                if spelled in self.files:
                    to_look.add(spelled)
                else:
                    relist = True
        return to_look, relist

    def _round(
        self, to_look: set[str], now: float, listing: _Listing, *, lazy: set[str] | None = None
    ) -> list[WatchEvent]:
        found: list[tuple[str, str, Change]] = []
        if self._dir_changes:
            found += [(self.target.directory, "", change) for change in self._dir_changes]
            self._dir_changes.clear()
        lazy = lazy or set()
        looks = to_look | lazy if lazy else to_look
        for path in sorted(looks, key=os.fsencode) if len(looks) > 1 else looks:
            tracked = self.files.get(path)
            if tracked is not None:
                for change in self._look(path, now, listing, lazy=path in lazy):
                    found.append((path, tracked.driver, change))
        if not found:
            return []
        merged = self.merged()
        events = []
        for path, driver, change in found:
            events.append(
                WatchEvent(
                    kind=change.kind,
                    path=path,
                    driver=driver,
                    generation=change.generation,
                    claim_uid=change.claim_uid,
                    metadata=change.metadata,
                    merged=merged,
                    message=change.message,
                    error=change.error,
                )
            )
        return events

    def settling(self) -> bool:
        """Whether a changed file waits for the read that confirms it (stable-read rule)."""
        return any(tracked.settle_at is not None for tracked in self.files.values())

    def merged(self) -> MergedDeviceMetadata | None:
        """The request merged over each present file's last delivered object."""
        files = self.files
        good = [
            (path, md)
            for path in (sorted(files, key=os.fsencode) if len(files) > 1 else files)
            if (md := files[path].state.good) is not None
        ]
        if not good:
            return None
        md = merge(good)
        return narrow(md, self.target.answers(md)) if self.target.subrequest else md

    def next_wait(self, now: float) -> float:
        """Seconds until the next timer (a retry, a confirming read, or the rescan)."""
        due = self.next_rescan
        if self.dir_state.retry_at is not None:
            due = min(due, self.dir_state.retry_at)
        notifier_due = self.notifier.due()
        if notifier_due is not None:
            due = min(due, notifier_due)
        for tracked in self.files.values():
            for at in (tracked.state.retry_at, tracked.settle_at):
                if at is not None and at < due:
                    due = at
        return max(0.0, due - now)

    def describe(self, condition: Condition) -> str:
        """What was last seen, for a timeout message."""
        if self.dir_state.broken_now:
            return f"{self.target.directory} cannot be read: {self.dir_state.bad_error}"
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
        self.ending_at: float | None = None  # when the end was asked for, plus the grace
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
        """Seconds to wait for notifications, or ``None`` when the watch is over.

        When the deadline passes or the stop event is set while a changed file
        waits for its confirming read (the stable-read rule), the watch goes on
        until that read, at most ``_SETTLE_GRACE`` seconds longer.
        """
        assert self.session is not None
        now = time.monotonic()
        wait = self.session.next_wait(now)
        over = (self.stop_event is not None and self.stop_event.is_set()) or (
            self.deadline is not None and now >= self.deadline
        )
        if over:
            if self.ending_at is None:
                self.ending_at = now + _SETTLE_GRACE
            if not self.session.settling() or now >= self.ending_at:
                return None
            return min(wait, self.ending_at - now)
        if self.deadline is not None:
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
        assert self.session is not None
        if self.options.backend != "auto":
            raise err
        if self.notifier is not None:
            self.notifier.close()
        self.notifier = self.session.notifier = polling_fallback(str(err))
        return self.notifier

    def close(self) -> None:
        """Close the notifier (every watch goes with it) and the directory kept open."""
        if self.session is not None:
            self.session.close()
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
