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

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "Notifier",
    "check_backend",
    "open_notifier",
    "polling_fallback",
]

#: Which notification mechanism a watch uses. ``"auto"``: inotify on Linux, else
#: watchfiles, else polling (when neither can start, e.g. inotify instances used up).
Backend: TypeAlias = Literal["auto", "inotify", "watchfiles", "polling"]
#: The values of :data:`Backend`, in the order error messages list them.
BACKENDS: Final[tuple[Backend, ...]] = get_args(Backend)


class BackendError(DRAMetadataError):
    """A notification backend that cannot start, or stopped working; the message is one line."""


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

    def add(self, path: str, *, directory: bool, follow: bool = False) -> int:
        """Watch what ``path`` shows now (again, if it is watched); 0, or an ``errno``.

        A directory watch hears entries come and go; a file watch hears the
        file's content, links and mode change, and the file go away. Adding a
        watched path again points the watch at the inode the path shows now.
        A link as the last part of ``path`` is followed only with ``follow``
        (the root and its ancestors); below the root the link itself is
        watched, so that replacing it is heard and its target never is.
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
    """An open notifier for ``backend``.

    ``"auto"`` is inotify; where inotify cannot start (not Linux, or the
    user's inotify instances are used up: ``fs.inotify.max_user_instances``)
    watchfiles; where watchfiles cannot start either, polling. Each fallback
    is said on the ``dra_metadata`` logger at INFO. ``"inotify"`` or
    ``"watchfiles"`` asked for and unable to start raise :class:`BackendError`
    (a :class:`~dra_metadata.DRAMetadataError`) with a one-line reason; no
    exception of the backend's own escapes.
    """
    if backend == "polling":
        from .polling import PollingNotifier

        return PollingNotifier()
    inotify_problem = "not tried"
    if backend in ("auto", "inotify"):
        from .inotify import Inotify, InotifyUnavailableError

        try:
            return Inotify()
        except InotifyUnavailableError as err:
            if backend == "inotify":
                raise BackendError(f"cannot watch with inotify: {_reason(err)}") from None
            inotify_problem = _reason(err)
    from .watchfiles import WatchfilesNotifier

    try:
        return WatchfilesNotifier()
    except BackendError as err:
        if backend == "watchfiles":
            raise
        return polling_fallback(f"inotify: {inotify_problem}; {err}")


def polling_fallback(why: str) -> Notifier:
    """A polling notifier for ``"auto"``, once the others failed; ``why`` goes to the log."""
    from ..._log import logger
    from .polling import INTERVAL, PollingNotifier

    logger().info(
        "cannot watch with a notification backend (%s); polling every %gs instead", why, INTERVAL
    )
    return PollingNotifier()


def _reason(err: BaseException) -> str:
    """``err`` as one short line."""
    text = str(err) or type(err).__name__
    return " ".join(text.split())
