"""The contract between a watch session and a backend, and what they share.

A backend only says *which watched path* saw something (or that
notifications were lost); the session finds out what happened by looking at
the path again. :class:`Notifier` is that contract; :class:`Writes`,
:data:`CLOSE_WAIT`, :class:`BackendError` and :func:`one_line_reason` are what
the session and the backends share. Every backend imports this module and
this module imports no backend: which one a watch opens is decided in the
package (:func:`~dra_metadata._watch._backends.open_notifier`).
"""

from __future__ import annotations

from typing import Final, Protocol, runtime_checkable

from ..._errors import DRAMetadataError

__all__ = [
    "BURST_GAP",
    "CLOSE_WAIT",
    "CONFIRM_QUIET",
    "FIRST_QUIET",
    "BackendError",
    "Notifier",
    "Writes",
    "one_line_reason",
]


#: Seconds a change waits for its writer's close before it is read the way a change
#: without one is (twice, :data:`~dra_metadata._watch._session.STABLE_READ_DELAY`
#: apart): a writer that keeps the file open between its writes is delivered this
#: late, and a writer stalled mid-write for longer than this can be read mid-write.
#: A handle that shows nothing for this long (no open, write or close heard on the
#: file) is taken for idle, and no longer counted.
CLOSE_WAIT: Final = 1.0
#: Seconds without a write after which bytes written while the watch could not count
#: every handle are read, once, and delivered: more than one handle was open at a
#: write, a handle wrote or closed whose open was not heard (inotify merges two
#: identical events queued back to back, so two opens can be heard as one), or
#: events were lost. A writer stalled mid-write for longer than this, among such
#: handles, can be read mid-write.
CONFIRM_QUIET: Final = 1.0
#: The same for the first writer heard on a file: until one has opened, written and
#: closed it alone, the watch cannot tell one handle from two opened back to back.
FIRST_QUIET: Final = 0.05
#: A spell that began this soon (seconds) after the last one ended is part of a burst
#: of writes: its close is read once the file has stood this long without a new one,
#: not at once (a read racing the writer's next open can have that open merged into
#: its own, and the count would be one short).
BURST_GAP: Final = 0.002


class Writes:
    """What the kernel said about the handles and writes of one watched file.

    Every open of the file is heard (``IN_OPEN``) before the opener can write a
    byte, and every write (``IN_MODIFY``) and close (``IN_CLOSE_WRITE`` after a
    handle that could write, ``IN_CLOSE_NOWRITE`` else). So when no handle is
    open and the last write was followed by a close, the bytes are final. But
    the kernel merges an event into the one queued before it when the two are
    identical, so two opens back to back are heard as one; a write or a close
    heard with no handle counted open shows such a handle (or one older than
    the watch), too late for the close that came before it.

    So the count is trusted only as far as the file has earned it. A *spell*
    runs from the first handle opened to the last one closed; one in which one
    handle at a time wrote, and every handle that wrote or closed had been
    heard opening, is *clean*. :attr:`quiet` says how the bytes last written
    may be delivered: ``0.0``, on the close that leaves no handle open (the
    spell began after a clean one); :data:`FIRST_QUIET`, once they have stood
    that long without a write (no clean spell yet: the file's first writer);
    :data:`CONFIRM_QUIET`, the same (a handle was missed, or more than one was
    open at a write: this spell or since the file was last silent that long);
    ``None``, nothing was heard since the watch began.

    >>> writes = Writes()
    >>> writes.opened(now=0.0); writes.modified(now=0.1); writes.closed(wrote=True, now=0.2)
    True
    True
    >>> writes.quiet  # the first writer: no clean spell before it
    0.05
    >>> writes.opened(now=1.0); writes.modified(now=1.1); writes.closed(wrote=True, now=1.2)
    True
    True
    >>> writes.quiet  # it wrote alone: this close is final
    0.0
    >>> writes.opened(now=2.0); writes.modified(now=2.1); writes.closed(wrote=True, now=2.2)
    True
    True
    >>> writes.modified(now=2.3)  # a write, and no handle open: one opened unheard
    True
    >>> writes.quiet, writes.handles()
    (1.0, 1)
    """

    __slots__ = (
        "_clean",
        "_earned",
        "_ended",
        "_spell",
        "_wrote",
        "bursting",
        "closes",
        "dirty_at",
        "excuse",
        "hidden",
        "idle",
        "last_event",
        "last_write",
        "opened_at",
        "opens",
        "own",
        "quiet",
    )

    def __init__(self, *, whole: bool = False) -> None:
        #: Handles heard opening and not heard closing (reads included).
        self.opens = 0
        #: Handles not heard opening that a write showed, not heard closing yet.
        self.hidden = 0
        #: Handles no longer counted: open and silent for :data:`CLOSE_WAIT`.
        self.idle = 0
        #: The watch's own reads among the handles open (the session says so).
        self.own = 0
        #: Whether a handle not heard opening may be one whose open was merged into the
        #: watch's own last read's: ``None`` if not, else how long that read waited for
        #: the bytes to stand still (``0.0``: read on the close). The session sets it
        #: for a read; an open heard since clears it.
        self.excuse: float | None = None
        #: When the current spell began (monotonic), ``None`` between spells.
        self.opened_at: float | None = None
        #: When the first write not yet followed by a close was heard, or ``None``.
        self.dirty_at: float | None = None
        #: The ``IN_CLOSE_WRITE`` events heard after a write: a change marks its read by this.
        self.closes = 0
        #: When the last write, or close after one, was heard (monotonic).
        self.last_write = 0.0
        #: When the last event of any kind was heard (monotonic).
        self.last_event = 0.0
        #: How the bytes last written may be delivered (see the class); ``whole``: a file
        #: that arrived by a rename, written whole before it came.
        self.quiet: float | None = 0.0 if whole else None
        #: Whether this spell began within :data:`BURST_GAP` of the last one's end.
        self.bursting = False
        self._ended = -BURST_GAP  # when the last spell ended (monotonic)
        self._earned = FIRST_QUIET  # what the next spell's bytes will need
        self._spell = FIRST_QUIET  # what this spell's bytes need
        self._clean = True
        self._wrote = False

    def handles(self) -> int:
        """The handles counted open: heard opening, or shown by a write."""
        return self.opens + self.hidden

    def _begin(self, now: float) -> None:
        self._spell, self._clean, self._wrote = self._earned, True, False
        self.opened_at = now
        self.bursting = now - self._ended < BURST_GAP

    def _suspect(self) -> None:
        """A handle was not counted, or more than one wrote: no close is final for a while."""
        self._spell = self._earned = self.quiet = CONFIRM_QUIET
        self._clean = False

    def _unheard(self) -> None:
        """A handle wrote or closed that was not heard opening.

        A writer's open queued right next to the watch's own read's open is merged
        into it. So the first such handle after a read of the watch's own, with no
        open heard since (:attr:`excuse`), may be that writer. If that read was on
        a close, the handle may also be a second one of the writer that closed,
        opened back to back with the first: the next spell waits
        :data:`FIRST_QUIET`, no more. Any other is a handle the count missed: every
        spell waits :data:`CONFIRM_QUIET` until the file has been silent that long.
        """
        if self.excuse is not None:
            if not self.excuse:
                self._earned = max(self._earned, FIRST_QUIET)
            self.excuse = None
            self._clean = False
        else:
            self._suspect()

    def forget_idle(self, now: float) -> None:
        """Forget the handles counted open when the file showed nothing for :data:`CLOSE_WAIT`.

        A handle that long silent is idle (a reader, a holder), or a writer stalled
        past the bound; a close that goes unheard (merged into another) leaves one
        counted for ever.
        """
        if (
            (self.opens or self.hidden)
            and self.dirty_at is None
            and now - self.last_event >= CLOSE_WAIT
        ):
            self.idle += self.opens + self.hidden
            self.opens = self.hidden = self.own = 0
            self.opened_at = None
            self._wrote = False
            self._ended = now

    def opened(self, now: float) -> None:
        """``IN_OPEN``: a handle opened (a reader or a writer: the event does not say)."""
        silent = now - self.last_event
        self.forget_idle(now)
        self.last_event = now
        if not self.own:  # another's open, heard: no merge to excuse after it
            self.excuse = None
        if not self.opens and not self.hidden:
            if silent >= CONFIRM_QUIET and self._earned == CONFIRM_QUIET:
                # Silent that long: whoever was not counted has stopped, or stalled
                # past the bound. The next writer is taken for the file's first.
                self._earned = FIRST_QUIET
            self._begin(now)
        self.opens += 1

    def modified(self, now: float) -> bool:
        """``IN_MODIFY``: a write. True when it is the first since the last close."""
        self.forget_idle(now)
        self.last_event = self.last_write = now
        counted = self.opens + self.hidden
        if not counted:  # through a handle not heard opening: merged, or older than the watch
            self._begin(now)
            self.hidden = 1
            if self.idle:  # one taken for idle: it writes after all
                self.idle -= 1
            else:
                self._unheard()
        elif counted - self.own > 1:  # more than one handle open: whose write is this?
            self._suspect()
        self._wrote = True
        self.quiet = self._spell
        if self.dirty_at is None:
            self.dirty_at = now
            return True
        return False

    def closed(self, *, wrote: bool, now: float) -> bool:
        """A close (``wrote``: of a handle that could write). True when the bytes changed.

        The bytes changed when a write was heard since the last such close; a
        handle opened read-write and closed without writing changes nothing.
        """
        self.forget_idle(now)
        self.last_event = now
        if self.own and not wrote:  # the watch's own read is over
            self.own -= 1
        if self.idle and (self.opens or self.hidden):
            # The idle one's, or a counted one's? Counted as the latter; if it was the
            # former, one still open is counted closed: this spell's bytes must stand
            # still a while before they are read.
            self._spell = max(self._spell, FIRST_QUIET)
            if self.quiet is not None:
                self.quiet = max(self.quiet, FIRST_QUIET)
        if self.opens:
            self.opens -= 1
        elif self.hidden:
            self.hidden -= 1
        elif self.idle:
            self.idle -= 1
        elif wrote:  # a handle that could write, not heard opening
            self._unheard()
        changed = wrote and self.dirty_at is not None
        if changed:
            self.closes += 1
            self.dirty_at = None
            self.last_write = now
        if not self.opens and not self.hidden:  # the spell is over
            self.opened_at = None
            self._ended = now
            if self._wrote:
                self._wrote = False
                if self._clean and self._earned == FIRST_QUIET:  # it wrote alone
                    self._earned = 0.0
        return changed

    def lost(self, now: float) -> None:
        """Events were lost (``IN_Q_OVERFLOW``): nothing counted is known any more."""
        self.opens = self.hidden = self.own = self.idle = 0
        self.opened_at = self.dirty_at = None
        self._wrote = False
        self._suspect()
        self.last_write = self.last_event = now


class BackendError(DRAMetadataError):
    """A notification backend that cannot start, or stopped working; the message is one line."""


@runtime_checkable
class Notifier(Protocol):
    """What a watch session needs from a notification mechanism.

    Paths are the session's own spelling of them: what a notifier reports is
    the path it was given to :meth:`add`, or (inotify) an entry of a watched
    directory, joined to the directory's path: the entry that came, went or
    was renamed. The synchronous driver blocks in
    :meth:`wait`; the asyncio driver, when :meth:`fileno` is a descriptor,
    has the event loop watch it, calls :meth:`drain` when it is readable and
    :meth:`take` afterwards (without a descriptor it runs :meth:`wait` in an
    executor).
    """

    def fileno(self) -> int | None:
        """A descriptor that is readable when something was reported, or ``None``."""

    def add(
        self, path: str, *, directory: bool, follow: bool = False, entries: str | None = None
    ) -> int:
        """Watch what ``path`` shows now (again, if it is watched); 0, or an ``errno``.

        A directory watch hears entries come and go; a file watch hears the
        file's content, links and mode change, and the file go away. Adding a
        watched path again points the watch at the inode the path shows now.
        A link as the last part of ``path`` is followed only with ``follow``
        (the root and its ancestors); below the root the link itself is
        watched, so that replacing it is heard and its target never is.
        ``entries``: of a directory's entries, only those whose names end so
        are worth reporting (the request directory's metadata files; a
        writer's temporary file is not); a notifier may report more.
        """

    def remove(self, path: str) -> None:
        """Stop watching ``path`` (nothing happens when it is not watched)."""

    def watching(self, path: str) -> bool:
        """Whether ``path`` is watched (the kernel may drop a watch by itself)."""

    def writes(self, path: str) -> Writes | None:
        """What is known about the writers of the watched file ``path``; ``None``: nothing.

        Only inotify knows (it hears opens, writes and closes); with ``None`` a
        watch reads a change twice before it delivers it.
        """

    def due(self) -> float | None:
        """When :meth:`take` will name a path without a new report (monotonic), or ``None``.

        Inotify names a file whose write was not followed by a close within
        :data:`CLOSE_WAIT`; the asyncio driver wakes up for it then.
        """

    def drain(self) -> None:
        """Collect what was reported, without blocking."""

    def take(self) -> tuple[set[str], bool]:
        """The paths that saw something since the last call, and whether reports were lost."""

    def wait(self, timeout: float) -> tuple[set[str], bool]:
        """Block until something is reported or ``timeout`` seconds pass; then :meth:`take`."""

    def close(self) -> None:
        """Release everything; safe to call twice, and from another thread than :meth:`wait`."""


def one_line_reason(err: BaseException) -> str:
    """``err`` as one short line (its type's name when it has no message)."""
    text = str(err) or type(err).__name__
    return " ".join(text.split())
