"""A watch's looks at the files: what it follows in one request directory, and how it reads.

A :class:`Session` keeps the directory watches in place, stats and reads the
files when the notifier names them (and only when their bytes may be read:
the writer's fence, :mod:`..._fence`, and inotify's
:class:`~._backends.base.Handles`), runs the safety-net rescan, and turns the
:class:`~._state.FileState` decisions into :class:`~._events.WatchEvent`
objects with the merged view. The run (:mod:`._run`) drives it.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from typing import Final

from .._errors import DecodeError, DRAMetadataError, os_reason
from .._fence import shared
from .._model import DeviceMetadata, MergedDeviceMetadata
from .._paths import METADATA_FILE_SUFFIX, driver_of
from .._read import decode, merge, read_fd
from .._select import narrow
from ._backends import Notifier
from ._conditions import Condition
from ._dirs import Listing, deepest_dir, is_link, link_error
from ._events import WatchEvent
from ._plan import Options, Target, logger
from ._state import Change, FileState

__all__ = [
    "FENCE_PATIENCE",
    "FRESH_DELAY",
    "STABLE_READ_DELAY",
    "Session",
    "Tracked",
    "signature",
]

# The safety net skips reading a file whose stat is unchanged and whose last change
# was at least this many seconds before the last read (timestamps are coarse).
_SETTLED: Final = 2.0

#: The stable-read rule, for the backends that hear no writer's close (watchfiles,
#: polling): content that changed is delivered only when a second read, begun at least
#: this many seconds after the first, returns the same bytes (and stat the same size,
#: times and inode). ``None``: one read is enough, and inotify's
#: :class:`~._backends.base.Handles` are not asked either (every rule off but the fence;
#: what ``benchmarks/bench_watch.py`` measures the rules' cost against).
STABLE_READ_DELAY: float | None = 0.002
#: The stable read's delay for a file's first read, when it changed less than this
#: before: its writer may have opened it before the watch could hear it, and be in the
#: middle of an object (one paused for less than this is not read mid-object).
FRESH_DELAY: Final = 0.05
# File times come from a coarse clock (a tick, up to 10 ms): an age read from them is
# counted this much short.
_COARSE: Final = 0.01
#: Seconds a watch honours a writer's fence (:mod:`..._fence`) before it reads anyway. Only
#: a process that can write the file can hold it; one that holds it this long has stopped.
FENCE_PATIENCE: Final = 10.0
# While a writer holds the fence, the file is looked at again after a pause that grows
# from the first to the second (its close is heard at once; a writer that lets go of the
# fence and keeps the file open is not).
_FENCE_POLL_MIN: Final = 0.001
_FENCE_POLL_MAX: Final = 0.05

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


# --- the session: looks at files and directories, shared by both drivers ----------------


class Tracked:
    """A file the session follows: its decisions plus what the I/O side remembers."""

    __slots__ = (
        "candidate",
        "candidate_at",
        "candidate_signature",
        "driver",
        "fenced_since",
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
        # When the look first found a writer's fence held (monotonic), while it is.
        self.fenced_since: float | None = None

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

        A writer's fence held, or bytes waiting to stand still (the stable read):
        the timer is the bound, an event may bring the look sooner.
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
        self._opened: Listing | None = None

    # The directory side.

    def _sync_dirs(self) -> None:
        """Watch the request directory, or its deepest existing ancestor until it exists."""
        root = os.path.abspath(self.target.root)
        for _attempt in range(64):
            path, identity = deepest_dir(self.target)
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
            if deepest_dir(self.target) == (path, identity):
                return

    def _listing(self, listing: Listing, now: float) -> set[str] | None:
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

    def _reconcile(self, listing: Listing, now: float) -> set[str]:
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

    def _look(self, path: str, now: float, listing: Listing, *, lazy: bool = False) -> list[Change]:
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
                return state.broken(link_error(path), nlink=info.st_nlink, now=now)
            if not stat.S_ISDIR(mode):
                # A FIFO, a device, a socket: refused without being opened.
                error = DRAMetadataError(f"{path}: not a regular file", path=path)
                return state.broken(error, nlink=info.st_nlink, now=now)
        if lazy and not state.broken_now and tracked.unchanged(info):
            return []
        handles = None if self.settle_delay is None else self.notifier.handles(path)
        mark = 0
        if handles is not None:
            if not handles.ready(now):
                # Written, and not to be read yet: the notifier names the file when its
                # bytes may be read (Handles), so no timer of ours waits for them.
                tracked.settle_at = state.retry_at = None
                return []
            if handles.written_at is None and not state.broken_now:
                seen = signature(info)
                if tracked.signature == seen:
                    return []  # nothing written since the last read (a close with no write)
                if tracked.signature is not None and info.st_nlink and handles.unheard(now):
                    # Changed with no write heard, a handle open: a write through a shared
                    # mapping, perhaps mid-object. Its close (or QUIET) brings the look.
                    tracked.settle_at = state.retry_at = None
                    return []
            mark = handles.writes
        read_at = time.time()
        fenced_since = tracked.fenced_since
        fence = fenced_since is None or now - fenced_since < FENCE_PATIENCE
        try:
            data = self._read(name, path, listing.fd, fence=fence)
        except (FileNotFoundError, DRAMetadataError) as err:
            if isinstance(err, FileNotFoundError):
                return self._gone(path, now)
            return state.broken(err, nlink=info.st_nlink, now=now)
        if data is None:  # a writer holds the fence: its write is under way
            if fenced_since is None:
                tracked.fenced_since = fenced_since = now
            wait = min(_FENCE_POLL_MAX, max(_FENCE_POLL_MIN, (now - fenced_since) / 2))
            return tracked.look_at(now + wait)
        tracked.fenced_since = None
        if handles is not None:
            # Was the file written while it was read? Every write is heard: then its own
            # close, or the clock, brings the next look.
            self.notifier.drain()
            if self.notifier.handles(path) is not handles or not handles.read(mark):
                return []
            tracked.candidate = None
        elif not tracked.stable(data, info, self.settle_delay):
            return []
        if (
            tracked.raw is None
            and handles is not None
            and time.time() - max(info.st_mtime_ns, info.st_ctime_ns) / 1e9 < FRESH_DELAY + _COARSE
            and not tracked.stable(data, info, FRESH_DELAY)
        ):
            # Changed before the watch could hear its writer: read twice, FRESH_DELAY apart.
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

    def _read(self, name: str, path: str, dir_fd: int, *, fence: bool) -> bytes | None:
        """The bytes of ``name`` in ``dir_fd``, opened without following a link.

        ``None`` when ``fence`` and a writer holds the fence (:mod:`..._fence`): the
        read is never waited for here.
        """
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            raise
        except OSError as err:
            if err.errno == errno.ELOOP or is_link(name, dir_fd):
                raise link_error(path) from None
            raise DRAMetadataError(
                f"open metadata file: open {path}: {os_reason(err)}", path=path
            ) from None
        try:
            if fence and not shared(fd, wait=0):
                return None
            return read_fd(fd, path, max_size=self.options.max_size, fence=None)
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

    def _walk(self, again: bool) -> Listing:
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
            opened = self._opened = Listing(self.target)
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
        self, to_look: set[str], now: float, listing: Listing, *, lazy: set[str] | None = None
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
