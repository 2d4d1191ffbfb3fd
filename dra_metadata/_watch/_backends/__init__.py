"""How a watch is told that something may have changed: one module per backend, chosen here.

:mod:`.base` holds the :class:`~.base.Notifier` protocol every backend meets
and what the backends share; it imports no backend. :mod:`.inotify` is Linux
inotify through ``ctypes``; :mod:`.watchfiles` is the fallback where inotify
is not available, and :mod:`.polling` (``lstat`` at a short interval) the last
resort where neither can start (the user's inotify instances used up). Each
imports :mod:`.base` and nothing else of the package.

This module is the registry: :data:`Backend` lists what a caller may ask for,
and :func:`open_notifier` is the one place a backend's module is imported,
inside the function, when a watch opens it (for ``"auto"``: inotify, then
watchfiles, then polling; :func:`polling_fallback` is that last step, also
taken when a backend stops working mid-watch). Loading the package loads no
backend.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

from .base import BackendError, Notifier, one_line_reason

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
        # a backend loads only when it is chosen
        from .polling import PollingNotifier

        return PollingNotifier()
    inotify_problem = "not tried"
    if backend in ("auto", "inotify"):
        # a backend loads only when it is chosen
        from .inotify import Inotify, InotifyUnavailableError

        try:
            return Inotify()
        except InotifyUnavailableError as err:
            if backend == "inotify":
                raise BackendError(f"cannot watch with inotify: {one_line_reason(err)}") from None
            inotify_problem = one_line_reason(err)
    # watchfiles: only this backend, and only when it is chosen
    from .watchfiles import WatchfilesNotifier

    try:
        return WatchfilesNotifier()
    except BackendError as err:
        if backend == "watchfiles":
            raise
        return polling_fallback(f"inotify: {inotify_problem}; {err}")


def polling_fallback(why: str) -> Notifier:
    """A polling notifier for ``"auto"``, once the others failed; ``why`` goes to the log."""
    # logging loads only when something is logged
    from ..._log import logger

    # a backend loads only when it is chosen
    from .polling import INTERVAL, PollingNotifier

    logger().info(
        "cannot watch with a notification backend (%s); polling every %gs instead", why, INTERVAL
    )
    return PollingNotifier()
