"""The contract between a watch session and a backend, and the choice of backend.

A backend only says *which watched path* saw something (or that
notifications were lost); the session finds out what happened by looking at
the path again. :class:`Notifier` is that contract; :func:`open_notifier`
turns the ``backend=`` string into an open notifier, importing the backend's
module only then.
"""

from __future__ import annotations

from typing import Final, Literal, Protocol, TypeAlias, get_args, runtime_checkable

from ..._errors import DRAMetadataError

__all__ = ["BACKENDS", "Backend", "Notifier", "check_backend", "open_notifier"]

#: Which notification mechanism a watch uses. ``"auto"``: inotify on Linux, else watchfiles.
Backend: TypeAlias = Literal["auto", "inotify", "watchfiles"]
#: The values of :data:`Backend`, in the order error messages list them.
BACKENDS: Final[tuple[Backend, ...]] = get_args(Backend)


@runtime_checkable
class Notifier(Protocol):
    """What a watch session needs from a notification mechanism.

    Paths are the session's own spelling of them: what a notifier reports is
    the path it was given to :meth:`add`. The synchronous driver blocks in
    :meth:`wait`; the asyncio driver, when :meth:`fileno` is a descriptor,
    has the event loop watch it, calls :meth:`drain` when it is readable and
    :meth:`take` afterwards (without a descriptor it runs :meth:`wait` in an
    executor).
    """

    def fileno(self) -> int | None:
        """A descriptor that is readable when something was reported, or ``None``."""

    def add(self, path: str, *, directory: bool) -> int:
        """Watch what ``path`` shows now (again, if it is watched); 0, or an ``errno``.

        A directory watch hears entries come and go; a file watch hears the
        file's content, links and mode change, and the file go away. Adding a
        watched path again points the watch at the inode the path shows now.
        """

    def remove(self, path: str) -> None:
        """Stop watching ``path`` (nothing happens when it is not watched)."""

    def watching(self, path: str) -> bool:
        """Whether ``path`` is watched (the kernel may drop a watch by itself)."""

    def drain(self) -> None:
        """Collect what was reported, without blocking."""

    def take(self) -> tuple[set[str], bool]:
        """The paths that saw something since the last call, and whether reports were lost."""

    def wait(self, timeout: float) -> tuple[set[str], bool]:
        """Block until something is reported or ``timeout`` seconds pass; then :meth:`take`."""

    def close(self) -> None:
        """Release everything; safe to call twice, and from another thread than :meth:`wait`."""


def check_backend(backend: str) -> Backend:
    """``backend`` as a :data:`Backend`; :class:`ValueError` when it names none."""
    if backend not in BACKENDS:
        *others, last = (repr(name) for name in BACKENDS)
        raise ValueError(f"backend must be {', '.join(others)} or {last}, not {backend!r}")
    return backend


def open_notifier(backend: Backend) -> Notifier:
    """An open notifier for ``backend``: ``"auto"`` is inotify, else watchfiles.

    ``"inotify"`` where inotify cannot be used raises
    :class:`~dra_metadata.DRAMetadataError`; ``"auto"`` then falls back to
    watchfiles and says so on the ``dra_metadata`` logger (at INFO).
    """
    if backend in ("auto", "inotify"):
        from .inotify import Inotify, InotifyUnavailableError

        try:
            return Inotify()
        except InotifyUnavailableError as err:
            if backend == "inotify":
                raise DRAMetadataError(f"cannot watch with inotify: {err}") from None
            from ..._log import logger

            logger().info("inotify unavailable (%s); watching with watchfiles", err)
    from .watchfiles import WatchfilesNotifier

    return WatchfilesNotifier()
