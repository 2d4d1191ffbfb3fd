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
stays undecodable for ``error_timeout`` seconds becomes an ``error`` event.
On inotify a changed file is read when its writer closes it (``IN_CLOSE_WRITE``)
and delivered after that one read, when every handle open on the file was
counted (every open is heard, but the kernel merges two identical events queued
back to back, so two opens can be heard as one): a file's writers earn that
(:class:`~._backends.base.Writes`); the first one, and any after a sign of a
handle the count missed, is delivered once its bytes have stood still
(:data:`~._backends.base.FIRST_QUIET`, :data:`~._backends.base.CONFIRM_QUIET`).
A change without a close within :data:`~._backends.base.CLOSE_WAIT` (1 s), and
every change on the other backends, is delivered only after a stable read (a
second read, 2 ms later, with the same bytes and stat). So a writer that
overwrites the file in place without truncating is not seen as a mixture of two
generations, however many handles it writes through.
A request directory that cannot be read is retried the same way. Nothing
below the root is followed if it is a symbolic link (the scanner's policy). For
one claim UID a generation is delivered at most once and never goes backwards;
a new UID (the claim was prepared again) is a new object. A file whose
``st_nlink`` is 0 gets one ``stale`` event: later updates cannot reach this
container.

On Linux the watcher uses inotify directly (:mod:`._backends.inotify`): it
sleeps until the kernel has something to say (or the safety net is due), and
delivers an update at 1.15-1.45x the latency of a bare inotify loop reading on
the same close (0.3-0.8 ms on a busy 2-core machine).
Elsewhere it uses watchfiles (:mod:`._backends.watchfiles`), whose loop wakes
every 50 ms; where neither can start (the user's inotify instances used up,
``fs.inotify.max_user_instances``), it polls with ``lstat`` every 20 ms
(:mod:`._backends.polling`). ``benchmarks/bench_watch.py`` measures both. The per-file
decisions (:class:`FileState`) do no I/O and are shared by both twins; only
the waiting differs.

The modules, each importing only those above it:

* :mod:`._events`: :class:`WatchEventKind` and :class:`WatchEvent`;
* :mod:`._conditions`: what :func:`wait_for` waits for, and
  :class:`WaitTimeoutError` when it did not hold in time;
* :mod:`._state`: :class:`FileState`, the per-file decisions (no I/O);
* :mod:`._backends`: the :class:`~._backends.Notifier` protocol and what the
  backends share (``base``), one module per backend, and the choice of backend
  (the package itself: the one place that imports a backend, when a watch opens it);
* :mod:`._session`: the checked plan, the session that looks at the files,
  the run and its two drivers;
* :mod:`._api`: the public functions and :class:`MetadataWatcher`.
"""

from __future__ import annotations

from ._api import MetadataWatcher, await_for, awatch, wait_for, watch
from ._backends import Backend
from ._conditions import WaitTimeoutError, has_attribute, has_generation, has_network_data
from ._events import WatchEvent, WatchEventKind
from ._session import DEFAULT_RESCAN_INTERVAL, StopEvent
from ._state import DEFAULT_ERROR_TIMEOUT, Change, FileState

__all__ = [
    "DEFAULT_ERROR_TIMEOUT",
    "DEFAULT_RESCAN_INTERVAL",
    "Backend",
    "Change",
    "FileState",
    "MetadataWatcher",
    "StopEvent",
    "WaitTimeoutError",
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
