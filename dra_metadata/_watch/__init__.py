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
Every read takes the in-place writer's fence (:mod:`dra_metadata._fence`): a
writer that holds it (``MetadataPublisher``, the testing kit, any writer that
follows docs/writing.md) is never read mid-write, however long it pauses. For
writers that do not, inotify's :class:`~._backends.base.Handles` apply one rule
with one window (:data:`~._backends.base.QUIET`, 1 s): bytes written are read on
the close that ends a spell of one writer, else once no write has been heard for
1 s; on the other backends a change is delivered after a stable read (a second
read, 2 ms later, with the same bytes and stat). An object of the same
generation whose content differs from the one delivered (read mid-write by a
writer nothing could fence) is delivered again.
A request directory that cannot be read is retried the same way. Nothing
below the root is followed if it is a symbolic link (the scanner's policy). For
one claim UID generations never go backwards; a new UID (the claim was
prepared again) is a new object. A file whose ``st_nlink`` is 0 gets one
``stale`` event: later updates cannot reach this container.

On Linux the watcher uses inotify directly (:mod:`._backends.inotify`): it
sleeps until the kernel has something to say (or the safety net is due), and
delivers an update on its writer's close at about the latency of a bare inotify
loop reading on the same close (``benchmarks/bench_watch.py``).
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
* :mod:`._plan`: the caller's selection and options, checked;
* :mod:`._dirs`: the way to the request directory, opened as the scanner opens it;
* :mod:`._session`: the session that looks at and reads the files;
* :mod:`._run`: a watch from start to end, and its two drivers;
* :mod:`._api`: the public functions and :class:`MetadataWatcher`.
"""

from __future__ import annotations

from ._api import MetadataWatcher, await_for, awatch, wait_for, watch
from ._backends import Backend
from ._conditions import WaitTimeoutError, has_attribute, has_generation, has_network_data
from ._events import WatchEvent, WatchEventKind
from ._plan import DEFAULT_RESCAN_INTERVAL, StopEvent
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
