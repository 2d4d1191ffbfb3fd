"""The contract between a watch session and a backend, and what they share.

A backend only says *which watched path* saw something (or that
notifications were lost); the session finds out what happened by looking at
the path again. :class:`Notifier` is that contract; :class:`Handles`,
:data:`QUIET`, :class:`BackendError` and :func:`one_line_reason` are what the
session and the backends share. Every backend imports this module and this
module imports no backend: which one a watch opens is decided in the package
(:func:`~dra_metadata._watch._backends.open_notifier`).
"""

from __future__ import annotations

from typing import Final, Protocol, runtime_checkable

from ..._errors import DRAMetadataError

__all__ = ["QUIET", "BackendError", "Handles", "Notifier", "one_line_reason"]

#: Seconds: the one window of the rule for writers that take no fence. Bytes that
#: stood still this long are read; a handle open this long without closing is no
#: longer counted; a write through a handle nobody heard open casts doubt this long.
QUIET: Final = 1.0


class Handles:
    """When a watched file's bytes may be read, from what inotify says of it.

    A writer that takes the fence (:mod:`dra_metadata._fence`) needs none of
    this: the watch's read lock keeps its reads out of every write. For the
    others, inotify says when a handle opens (``IN_OPEN``, reader or writer),
    writes (``IN_MODIFY``) and closes (``IN_CLOSE_WRITE`` for a handle that
    could write, ``IN_CLOSE_NOWRITE`` else), but not whose handle it is, and it
    merges two identical events queued back to back. The rule, with nothing
    kept longer than :data:`QUIET` after the event that set it:

    1. A *spell* runs from an open heard with no handle counted open to the
       moment none is (each close takes the newest open off the count, and so
       does a read: a handle that reads is a reader's; an open :data:`QUIET`
       old is forgotten: a reader that holds the file, an idle writer).
    2. Bytes written are read at the end of a spell in which a handle that could
       write closed after the last write and at most one such handle closed
       (one writer): on that close, when nothing else is open.
    3. Otherwise they are read once no write has been heard for :data:`QUIET`
       (a writer that keeps its handle open; several writers in one spell,
       whose writes may have interleaved), and no handle opened since the last
       write is still counted (a write through a shared mapping makes no event).
    4. A write heard with no handle counted open (a truncate by path, a handle
       older than the watch, two opens heard as one) makes rule 2 wait until
       :data:`QUIET` has passed since it: rule 3 reads such bytes.

    So a writer that closes its handle when its object is written is read on
    that close, whatever readers and other watchers do meanwhile, and one
    whose pauses stay under :data:`QUIET` is never read mid-object.

    >>> handles = Handles()
    >>> handles.opened(0.0); handles.modified(0.1)
    >>> handles.ready(0.2)  # written, not closed: not yet
    False
    >>> handles.closed(wrote=True, now=0.3)  # the writer closed alone: read now
    True
    >>> handles.read(handles.writes)  # the watch read it, and no write raced the read
    True
    >>> handles.modified(5.0)  # a truncate by path: nobody opened
    >>> handles.closed(wrote=True, now=5.1), handles.ready(5.9), handles.ready(6.0)
    (False, False, True)
    """

    __slots__ = (
        "_announced",
        "_closed",
        "_final",
        "_hidden_until",
        "_opens",
        "_readers",
        "_writers",
        "writes",
        "written_at",
    )

    def __init__(self) -> None:
        #: When each handle heard opening and not closed yet opened (monotonic), oldest first.
        self._opens: list[float] = []
        # The same, for handles that read since (IN_ACCESS): readers, which end no spell.
        self._readers: list[float] = []
        self._writers = 0  # handles that could write closed in this spell
        self._closed = False  # one of them closed after the last write
        self._final = False  # the last spell ended as rule 2 asks
        self._hidden_until = float("-inf")  # rule 4
        self._announced = False  # the notifier named the file since the last write
        #: When the last write not read yet was heard (monotonic), or ``None``.
        self.written_at: float | None = None
        #: Writes heard so far: a read checks that none came while it read.
        self.writes = 0

    # Rule 1: the count, and the spell's end.

    def _forget(self, now: float) -> None:
        if self._readers and now - self._readers[0] >= QUIET:
            self._readers = [at for at in self._readers if now - at < QUIET]
        opens = self._opens
        if opens and now - opens[0] >= QUIET:
            self._opens = [at for at in opens if now - at < QUIET]
            if not self._opens:
                self._over()

    def _over(self) -> None:
        # Only a write takes back what a spell ended as rule 2 asks: later spells
        # without a write did not change the bytes.
        if not self._final:
            self._final = self.written_at is not None and self._closed and self._writers <= 1
        self._writers = 0

    def opened(self, now: float) -> None:
        """``IN_OPEN``: a handle opened (a reader or a writer: the event does not say)."""
        self._forget(now)
        self._opens.append(now)

    def accessed(self, now: float) -> bool:
        """``IN_ACCESS``: a read. The newest handle counted is taken for a reader's.

        Every watch reads, and two reads' identical events queued back to back are
        heard as one (two closes as one): a handle that read is kept apart and no
        longer holds a spell open. True when that ends a spell worth a look now.
        """
        self._forget(now)
        if not self._opens:
            return False
        self._readers.append(self._opens.pop())
        if self._opens:
            return False
        self._over()
        return self._worth_a_look(now)

    def modified(self, now: float) -> None:
        """``IN_MODIFY``: a write."""
        self._forget(now)
        self.writes += 1
        self.written_at = now
        self._closed = self._final = self._announced = False
        if not self._opens:  # rule 4
            self._hidden_until = now + QUIET

    def closed(self, *, wrote: bool, now: float) -> bool:
        """A close (``wrote``: of a handle that could write); True when it is worth a look now.

        A handle that could write closing with no write heard is worth a look
        too (a write through a shared mapping makes no ``IN_MODIFY``); the look
        reads only when the file's size or times changed.
        """
        self._forget(now)
        if wrote:
            self._writers += 1
            self._closed = True
        if self._readers and not wrote:
            self._readers.pop()
        elif self._opens:
            self._opens.pop()
            if not self._opens:
                self._over()
        else:  # its open was taken for a reader's, merged, or older than the watch
            if self._readers:
                self._readers.pop()
            if wrote:
                self._over()
        if self.written_at is None:
            return wrote
        return self._worth_a_look(now)

    def _worth_a_look(self, now: float) -> bool:
        if self.written_at is None or self._announced or not self.ready(now):
            return False
        self._announced = True
        return True

    # Rules 2 and 3: when the bytes may be read.

    def ready(self, now: float) -> bool:
        """Whether the bytes may be read now (nothing written since the last read: yes)."""
        written = self.written_at
        if written is None or (self._final and now >= self._hidden_until):
            return True
        if now - written < QUIET:
            return False
        # Rule 3 waits for a handle opened since the last write, as long as it is
        # counted: a write through a shared mapping is not heard.
        opens = self._opens
        return not opens or opens[-1] <= written or now - opens[-1] >= QUIET

    def due(self, now: float) -> float | None:
        """When the bytes will be ready without another event (monotonic), or ``None``.

        ``None`` also when the notifier already named the file for them.
        """
        written = self.written_at
        if written is None or self._announced:
            return None
        due = written + QUIET
        opens = self._opens
        if opens and opens[-1] > written:
            due = opens[-1] + QUIET
        if opens and self._closed:  # the oldest open forgotten may end the spell
            due = min(due, max(opens[0] + QUIET, self._hidden_until))
        return due

    def announce(self, now: float) -> bool:
        """Whether the bytes became ready by the clock (rule 3, or a spell ended by it)."""
        self._forget(now)
        if self.written_at is None or self._announced or not self.ready(now):
            return False
        self._announced = True
        return True

    def unheard(self, now: float) -> bool:
        """The file changed with no write heard (a shared mapping): True to wait, as for a write.

        With a handle counted open (the mapping's, perhaps mid-object), the change
        is taken for a write heard now; with none, it may be read at once.
        """
        self._forget(now)
        if not self._opens:
            return False
        self.modified(now)
        return True

    def read(self, mark: int) -> bool:
        """A read begun when :attr:`writes` was ``mark`` is over: True when no write raced it."""
        if self.writes != mark:
            return False
        self.written_at = None
        self._announced = self._final = False
        return True

    def lost(self, now: float) -> None:
        """Events were lost (``IN_Q_OVERFLOW``): every count is unknown; read at :data:`QUIET`."""
        self._opens.clear()
        self._readers.clear()
        self._writers = 0
        self.modified(now)


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

    def handles(self, path: str) -> Handles | None:
        """When the watched file ``path``'s bytes may be read (:class:`Handles`); ``None``: unknown.

        Only inotify knows (it hears opens, writes and closes); with ``None`` a
        watch reads a change twice before it delivers it.
        """

    def due(self) -> float | None:
        """When :meth:`take` will name a path without a new report (monotonic), or ``None``.

        Inotify names a file whose bytes become ready by the clock
        (:meth:`Handles.due`); the asyncio driver wakes up for it then.
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
