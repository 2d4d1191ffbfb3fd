"""The public watch functions: watch, awatch, wait_for, await_for, MetadataWatcher.

Each checks its arguments into a :class:`~._session.Plan` when called (so a
bad name fails at the call, not at the first iteration) and drives a run of
it: :func:`watch` and :func:`wait_for` block in the notifier,
:func:`awatch` and :func:`await_for` are their asyncio twins with identical
parameters, and :class:`MetadataWatcher` runs :func:`watch`'s loop in a
thread and calls handlers.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncGenerator, Callable, Generator
from typing import TYPE_CHECKING, Literal, Self, TypeVar

from .._errors import NotMountedError, StaleMetadataError
from .._model import DeviceMetadata, MergedDeviceMetadata
from .._paths import RESOURCE_CLAIMS_SUBDIR, RootArg
from .._read import DEFAULT_MAX_SIZE
from ._backends import Backend
from ._conditions import WaitTimeoutError, condition_of
from ._events import WatchEvent, WatchEventKind
from ._plan import DEFAULT_RESCAN_INTERVAL, StopEvent, Target, logger, plan
from ._run import Run, aiterate, iterate
from ._state import DEFAULT_ERROR_TIMEOUT

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "MetadataWatcher",
    "await_for",
    "awatch",
    "unmounted",
    "unmounted_selection",
    "wait_for",
    "watch",
]


def watch(
    *,
    claim: str | None = None,
    pod_claim: str | None = None,
    request: str,
    driver: str | None = None,
    root: RootArg = None,
    stop_event: StopEvent | None = None,
    timeout: float | None = None,
    rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
    error_timeout: float = DEFAULT_ERROR_TIMEOUT,
    max_size: int = DEFAULT_MAX_SIZE,
    backend: Backend = "auto",
) -> Generator[WatchEvent, None, None]:
    """Yield a :class:`WatchEvent` each time a metadata file of one request changes.

    Select the request as the read functions do: ``claim=`` (a claim referenced
    by name) or ``pod_claim=`` (a claim made from a template), ``request=``, and
    optionally ``driver=`` (that driver's file only) and ``root=``. Files present
    at the start come first, as ``update`` events. The directory, and its
    parents, may not exist yet: files are picked up when they appear.

    The watch ends when ``stop_event.is_set()`` (checked at least every 50 ms),
    after ``timeout`` seconds, or when the caller stops iterating (``break``, or
    ``close()`` on the generator). ``rescan_interval`` is the safety net's
    period: every file is read again that often, so no final state is missed
    even if a notification is. A file that stays undecodable ``error_timeout``
    seconds gives one ``error`` event. ``backend``: ``"auto"`` (inotify on
    Linux, else watchfiles, else polling when neither can start, as when the
    user's inotify instances are used up; said on the ``dra_metadata`` logger),
    ``"inotify"``, ``"watchfiles"`` or ``"polling"``; one asked for by name that
    cannot start raises :class:`~dra_metadata.DRAMetadataError`.

    On inotify a change is read when its writer closes the file and delivered
    then; a change not closed within 1 s, and every change on the other
    backends, once a second read, 2 ms after the first, agrees with it (no
    mixture of two generations from a writer that overwrites in place). A file
    or the request directory that cannot be read, or is a symbolic link below
    the root (never followed: :class:`~dra_metadata.SymlinkError`), is retried
    and gives one ``error`` event after ``error_timeout``; it never ends the
    watch.

    Names and the root are checked when called
    (:class:`~dra_metadata.InvalidNameError`; a ``bytes`` root or a
    ``max_size`` that is not an ``int`` is a :class:`TypeError`).

    >>> import dra_metadata as dm
    >>> for event in dm.watch(claim="nic", request="eth", root="examples/dra-device-attributes",
    ...                       timeout=0):
    ...     print(event.kind, event.driver, event.generation, dm.has_network_data(event.merged))
    update sriov.example.com 2 True
    """
    watch_plan = plan(
        claim, pod_claim, request, driver, root, rescan_interval, error_timeout, max_size, backend
    )
    return iterate(Run(watch_plan, stop_event=stop_event, timeout=timeout))


def awatch(
    *,
    claim: str | None = None,
    pod_claim: str | None = None,
    request: str,
    driver: str | None = None,
    root: RootArg = None,
    stop_event: StopEvent | None = None,
    timeout: float | None = None,
    rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
    error_timeout: float = DEFAULT_ERROR_TIMEOUT,
    max_size: int = DEFAULT_MAX_SIZE,
    backend: Backend = "auto",
) -> AsyncGenerator[WatchEvent, None]:
    """The asyncio twin of :func:`watch`: the same parameters, the same events.

    With inotify (Linux) it uses no thread: the event loop watches the inotify
    descriptor. Cancelling the task that iterates closes everything at once;
    after ``break``, call ``aclose()`` (or let the loop finalize it).
    ``stop_event`` can be an ``asyncio.Event``.

    >>> import asyncio, dra_metadata as dm
    >>> async def main():
    ...     async for event in dm.awatch(pod_claim="gpu", request="gpu", timeout=0,
    ...                                  root="examples/dra-device-attributes"):
    ...         print(event.kind, event.driver, event.generation)
    >>> asyncio.run(main())
    update gpu.example.com 1
    """
    watch_plan = plan(
        claim, pod_claim, request, driver, root, rescan_interval, error_timeout, max_size, backend
    )
    return aiterate(Run(watch_plan, stop_event=stop_event, timeout=timeout))


def unmounted(target: Target) -> NotMountedError | None:
    """The error for a request this container can never see, or ``None``.

    In a container whose metadata files are bind mounts (see :mod:`.._mounts`),
    a request directory with no mounted file under it stays empty for good. On
    a plain directory tree (no such mounts) anything may still appear.
    """
    # /proc/self/mountinfo: only to say why nothing is mounted
    from .._mounts import metadata_mounts

    claims_dir, base = os.path.split(target.directory)
    kind_dir, claim = os.path.split(claims_dir)
    root = os.path.dirname(kind_dir)
    mounts = metadata_mounts(root)
    if mounts is None:
        return None
    mounted = mounts.mounted_below(target.directory)
    if target.file_name is not None:
        mounted = [path for path in mounted if os.path.basename(path) == target.file_name]
    if mounted:
        return None
    # what is nearby: only on the way to a not-found message
    from .._nearby import not_found

    kind: Literal["claim", "template"] = (
        "claim" if os.path.basename(kind_dir) == RESOURCE_CLAIMS_SUBDIR else "template"
    )
    missing = not_found(root, kind=kind, claim=claim, request=base, driver=target.driver)
    return NotMountedError(
        f"{missing}; {target.directory} is not mounted in this container, whose "
        f"{len(mounts.files)} metadata file(s) are bind mounts made when it was created, "
        "so it can never appear",
        path=target.directory,
        nearby=missing.nearby,
    )


def unmounted_selection(
    *,
    claim: str | None,
    pod_claim: str | None,
    request: str,
    driver: str | None,
    root: RootArg,
) -> NotMountedError | None:
    """:func:`unmounted` for a selection as :func:`watch` takes it (names checked)."""
    target = plan(
        claim,
        pod_claim,
        request,
        driver,
        root,
        DEFAULT_RESCAN_INTERVAL,
        DEFAULT_ERROR_TIMEOUT,
        DEFAULT_MAX_SIZE,
        "auto",
    ).target
    return unmounted(target)


class _Waiter:
    """The part of :func:`wait_for` and :func:`await_for` that does not wait."""

    def __init__(self, run: Run, until: Callable[[DeviceMetadata], bool] | None) -> None:
        self.run = run
        self.condition = condition_of(until)
        self.last: MergedDeviceMetadata | None = None
        self.check_mounted()

    def check_mounted(self) -> None:
        """Raise :class:`NotMountedError` when this container can never see the request."""
        problem = unmounted(self.run.target)
        if problem is not None:
            raise problem

    def met(self, event: WatchEvent) -> MergedDeviceMetadata | None:
        """The merged metadata after ``event`` when it meets the condition, else ``None``.

        Raises :class:`StaleMetadataError` on a ``stale`` event that leaves the
        condition unmet: that file can never change again, so neither can the answer.
        """
        self.last = event.merged
        if event.merged is not None and self.condition(event.merged):
            return event.merged
        if event.kind == WatchEventKind.STALE:
            why = self.condition.why_not(event.merged) if event.merged is not None else None
            raise StaleMetadataError(
                f"{event.path} was replaced on the node after this container started, so the "
                f"mounted copy can never change: {self.condition.description} cannot arrive "
                f"here ({why or 'not met'}); restart the pod to see the new file, or use a "
                "driver that rewrites the file in place",
                path=event.path,
            )
        return None

    def timed_out(self) -> WaitTimeoutError:
        """The error for a wait that ran out of time, saying what was last seen."""
        target = self.run.target
        seen = "nothing" if self.run.session is None else self.run.session.describe(self.condition)
        return WaitTimeoutError(
            f"timed out after {self.run.timeout:g}s waiting for {self.condition.description} "
            f"in {target.directory}; last seen: {seen}",
            path=target.directory,
            last_seen=self.last,
        )


def wait_for(
    *,
    claim: str | None = None,
    pod_claim: str | None = None,
    request: str,
    driver: str | None = None,
    root: RootArg = None,
    until: Callable[[DeviceMetadata], bool] | None = None,
    timeout: float | None = None,
    rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
    error_timeout: float = DEFAULT_ERROR_TIMEOUT,
    max_size: int = DEFAULT_MAX_SIZE,
    backend: Backend = "auto",
) -> MergedDeviceMetadata:
    """Wait until the request's merged metadata satisfies ``until``; return it.

    Without ``until``, wait until there is metadata at all (a file that
    decodes). Conditions: :func:`has_network_data`, :func:`has_generation`,
    :func:`has_attribute`, or any function of the merged metadata. The
    selection and the other parameters are :func:`watch`'s. Raises
    :class:`WaitTimeoutError` after ``timeout`` seconds (``None``: wait for
    ever), saying what was last seen.

    Inside a container, whose metadata files are bind mounts made when it was
    created, it does not wait for what cannot come: a request that is not
    mounted raises :class:`~dra_metadata.NotMountedError` at once, and a file the
    node replaced after the container started (a ``stale`` event) raises
    :class:`~dra_metadata.StaleMetadataError` unless the condition already holds.
    On a plain directory tree it waits for files to appear.

    >>> import dra_metadata as dm
    >>> md = dm.wait_for(claim="nic", request="eth", until=dm.has_network_data, timeout=5,
    ...                  root="examples/dra-device-attributes")
    >>> md.requests[0].devices[0].network_data.interface_name
    'net1'
    >>> try:
    ...     dm.wait_for(pod_claim="gpu", request="gpu", until=dm.has_network_data, timeout=0,
    ...                 root="examples/dra-device-attributes")
    ... except dm.WaitTimeoutError as err:
    ...     print(str(err).split("last seen: ")[1])
    gpu.example.com-metadata.json generation 1 without network data (device worker-1/gpu-0)
    """
    watch_plan = plan(
        claim, pod_claim, request, driver, root, rescan_interval, error_timeout, max_size, backend
    )
    waiter = _Waiter(Run(watch_plan, stop_event=None, timeout=timeout), until)
    events = iterate(waiter.run)
    try:
        for event in events:
            if (merged := waiter.met(event)) is not None:
                return merged
    finally:
        events.close()
    raise waiter.timed_out()


async def await_for(
    *,
    claim: str | None = None,
    pod_claim: str | None = None,
    request: str,
    driver: str | None = None,
    root: RootArg = None,
    until: Callable[[DeviceMetadata], bool] | None = None,
    timeout: float | None = None,
    rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
    error_timeout: float = DEFAULT_ERROR_TIMEOUT,
    max_size: int = DEFAULT_MAX_SIZE,
    backend: Backend = "auto",
) -> MergedDeviceMetadata:
    """The asyncio twin of :func:`wait_for`: the same parameters and result.

    >>> import asyncio, dra_metadata as dm
    >>> md = asyncio.run(dm.await_for(claim="nic", request="eth", until=dm.has_generation(2),
    ...                               root="examples/dra-device-attributes", timeout=5))
    >>> md.sources[0].generation
    2
    """
    watch_plan = plan(
        claim, pod_claim, request, driver, root, rescan_interval, error_timeout, max_size, backend
    )
    waiter = _Waiter(Run(watch_plan, stop_event=None, timeout=timeout), until)
    events = aiterate(waiter.run)
    try:
        async for event in events:
            if (merged := waiter.met(event)) is not None:
                return merged
    finally:
        await events.aclose()
    raise waiter.timed_out()


# --- handlers called from a thread ---------------------------------------------------------

_Handler = TypeVar("_Handler", bound=Callable[[WatchEvent], object])


class MetadataWatcher:
    """Call registered handlers for one request's watch events, from a background thread.

    For services that register callbacks rather than loop over :func:`watch`
    themselves. The selection and options are :func:`watch`'s. Handlers run in
    the watcher's thread, in registration order; one that raises is logged on
    the ``dra_metadata`` logger and the others still run.

    >>> import threading, dra_metadata as dm
    >>> seen = threading.Event()
    >>> watcher = dm.MetadataWatcher(claim="nic", request="eth",
    ...                              root="examples/dra-device-attributes")
    >>> @watcher.on(dm.WatchEventKind.UPDATE)
    ... def configure(event):
    ...     print("configure", event.metadata.requests[0].devices[0].network_data.interface_name)
    ...     seen.set()
    >>> with watcher:
    ...     _ = seen.wait(10)
    configure net1
    """

    def __init__(
        self,
        *,
        claim: str | None = None,
        pod_claim: str | None = None,
        request: str,
        driver: str | None = None,
        root: RootArg = None,
        rescan_interval: float = DEFAULT_RESCAN_INTERVAL,
        error_timeout: float = DEFAULT_ERROR_TIMEOUT,
        max_size: int = DEFAULT_MAX_SIZE,
        backend: Backend = "auto",
    ) -> None:

        self._plan = plan(
            claim,
            pod_claim,
            request,
            driver,
            root,
            rescan_interval,
            error_timeout,
            max_size,
            backend,
        )
        self._handlers: list[tuple[WatchEventKind | None, Callable[[WatchEvent], object]]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: The exception that ended the watch early, if one did.
        self.exception: BaseException | None = None

    def add_handler(
        self, handler: Callable[[WatchEvent], object], kind: WatchEventKind | str | None = None
    ) -> None:
        """Call ``handler(event)`` for events of ``kind`` (every event when ``None``)."""
        self._handlers.append((None if kind is None else WatchEventKind(kind), handler))

    def on(self, kind: WatchEventKind | str | None = None) -> Callable[[_Handler], _Handler]:
        """Decorator form of :meth:`add_handler`."""

        def register(handler: _Handler) -> _Handler:
            self.add_handler(handler, kind)
            return handler

        return register

    def run(self) -> None:
        """Watch in the calling thread until :meth:`stop` is called."""
        for event in iterate(Run(self._plan, stop_event=self._stop, timeout=None)):
            self._dispatch(event)

    def _dispatch(self, event: WatchEvent) -> None:
        for kind, handler in list(self._handlers):
            if kind is None or kind == event.kind:
                try:
                    handler(event)
                except Exception:
                    logger().exception("watch handler %r failed on %s", handler, event.kind)

    def _thread_main(self) -> None:
        try:
            self.run()
        except BaseException as err:  # reported, not lost with the thread
            self.exception = err
            logger().exception("watching %s stopped", self._plan.target.directory)

    def start(self) -> MetadataWatcher:
        """Start watching in a daemon thread; returns ``self``."""

        if self._thread is not None:
            raise RuntimeError("this watcher was started already")
        self._thread = threading.Thread(
            target=self._thread_main,
            name=f"dra-metadata-watch {self._plan.target.directory}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stop watching; wait up to ``timeout`` seconds for the thread to end."""

        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        """Whether the watcher's thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
