"""How a watch is told that something may have changed: one module per backend.

:mod:`.base` holds the :class:`~.base.Notifier` protocol every backend meets
and :func:`~.base.open_notifier`, which picks one from the ``backend=``
string. :mod:`.inotify` is Linux inotify through ``ctypes``;
:mod:`.watchfiles` is the fallback where inotify is not available, and
:mod:`.polling` (``lstat`` at a short interval) the last resort where neither
can start (the user's inotify instances used up). A backend
module is imported only when a watch opens it.
"""

from __future__ import annotations

from .base import BACKENDS, Backend, BackendError, Notifier, check_backend, open_notifier

__all__ = ["BACKENDS", "Backend", "BackendError", "Notifier", "check_backend", "open_notifier"]
