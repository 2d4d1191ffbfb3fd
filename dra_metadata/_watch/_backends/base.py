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

__all__ = ["CLOSE_WAIT", "BackendError", "Notifier", "Writes", "one_line_reason"]


#: Seconds a change waits for its writer's close before it is read the way a change
#: without one is (twice, :data:`~dra_metadata._watch._session.STABLE_READ_DELAY`
#: apart): a writer that keeps the file open between its writes is delivered this
#: late, and a writer stalled mid-write for longer than this can be read mid-write.
CLOSE_WAIT: Final = 1.0


class Writes:
    """What the kernel said about the writers of one watched file, since its watch began.

    Every open of the file is heard (``IN_OPEN``) before the opener can write a
    byte, and every write (``IN_MODIFY``) and close (``IN_CLOSE_WRITE`` after a
    handle that could write, ``IN_CLOSE_NOWRITE`` else). So when no handle is
    open and the last write was followed by a close, the bytes are final: no
    writer is at work, and one that starts is heard opening first.
    """

    __slots__ = ("closes", "dirty_at", "known", "opened_at", "opens")

    def __init__(self, known: bool) -> None:
        #: Whether the counts can be trusted: a close after a write was heard since the
        #: watch began (or the file arrived by a rename), and no event was lost since.
        #: Until then a writer may hold a handle opened before the watch began.
        self.known = known
        #: Handles opened since the watch began and not closed yet (reads included).
        self.opens = 0
        #: When ``opens`` last went from 0 to 1 (monotonic), ``None`` while it is 0.
        self.opened_at: float | None = None
        #: When the first write not yet followed by a close was heard, or ``None``.
        self.dirty_at: float | None = None
        #: The ``IN_CLOSE_WRITE`` events heard: a change marks what it read by this.
        self.closes = 0

    def busy_since(self) -> float | None:
        """Since when a writer may be at work (a write not closed, a handle open), or ``None``."""
        if self.dirty_at is None:
            return self.opened_at
        if self.opened_at is None:
            return self.dirty_at
        return min(self.dirty_at, self.opened_at)


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
