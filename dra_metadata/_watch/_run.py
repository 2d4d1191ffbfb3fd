"""A watch from start to end: the session, the notifier, a deadline, a stop event; two drivers.

:class:`Run` opens the notifier (:mod:`._backends`), keeps the deadline and
the stop event, and hands each batch of notifications to its
:class:`~._session.Session`; :func:`iterate` (blocking) and :func:`aiterate`
(asyncio) differ only in how they wait.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Generator
from typing import Final

from ._backends import BackendError, Notifier, open_notifier, polling_fallback
from ._events import WatchEvent
from ._plan import Plan, StopEvent
from ._session import FRESH_DELAY, Session

__all__ = ["Run", "aiterate", "iterate"]

# A stop event is looked at least this often (seconds).
_STOP_POLL: Final = 0.05
# When the deadline passes while reads are settling, they get this long to settle: ten
# times the stable read's delay, so that a loaded machine that wakes late still reads.
_SETTLE_GRACE: Final = 10 * FRESH_DELAY


# --- the run: the session plus the notifier, a deadline and a stop event ----------------


class Run:
    """One watch from start to end; what both twins share apart from the waiting."""

    def __init__(self, plan: Plan, *, stop_event: StopEvent | None, timeout: float | None) -> None:
        if timeout is not None and not timeout >= 0:
            raise ValueError(f"timeout must not be negative, got {timeout!r}")
        self.target = plan.target
        self.options = plan.options
        self.stop_event = stop_event
        self.timeout = timeout
        self.deadline: float | None = None
        self.ending_at: float | None = None  # when the end was asked for, plus the grace
        self.last_look = False  # the grace is over: one more round reads what is due
        self.session: Session | None = None
        self.notifier: Notifier | None = None

    def open(self) -> Notifier:
        """Start: create the notifier (the deadline counts from here)."""
        now = time.monotonic()
        self.deadline = None if self.timeout is None else now + self.timeout
        self.notifier = open_notifier(self.options.backend)
        self.session = Session(self.target, self.options, self.notifier)
        return self.notifier

    def begin(self) -> list[WatchEvent]:
        """Set up the watches and look at everything: the initial events."""
        assert self.session is not None
        return self.session.begin(time.monotonic())

    def next_wait(self) -> float | None:
        """Seconds to wait for notifications, or ``None`` when the watch is over.

        When the deadline passes or the stop event is set while a changed file
        waits for its confirming read (the stable-read rule), the watch goes on
        until that read, at most ``_SETTLE_GRACE`` seconds longer.
        """
        assert self.session is not None
        now = time.monotonic()
        wait = self.session.next_wait(now)
        over = (self.stop_event is not None and self.stop_event.is_set()) or (
            self.deadline is not None and now >= self.deadline
        )
        if over:
            if self.ending_at is None:
                self.ending_at = now + _SETTLE_GRACE
            if not self.session.settling():
                return None
            if now >= self.ending_at:
                # Woken late (a loaded machine): the read that is due runs once, then the end.
                if self.last_look:
                    return None
                self.last_look = True
                return 0.0
            return min(wait, self.ending_at - now)
        if self.deadline is not None:
            wait = min(wait, self.deadline - now)
        if self.stop_event is not None:
            wait = min(wait, _STOP_POLL)
        return wait

    def step(self, triggers: set[str], overflow: bool) -> list[WatchEvent]:
        """One round: what the notifier reported, what is due, and (when due) the rescan."""
        assert self.session is not None
        return self.session.process(triggers, overflow, time.monotonic())

    def fallback(self, err: BackendError) -> Notifier:
        """The backend stopped working: poll instead (``"auto"``), else raise ``err``.

        The new notifier watches nothing yet; the next round, an overflow, puts
        every watch back and looks at everything, so nothing is missed.
        """
        assert self.session is not None
        if self.options.backend != "auto":
            raise err
        if self.notifier is not None:
            self.notifier.close()
        self.notifier = self.session.notifier = polling_fallback(str(err))
        return self.notifier

    def close(self) -> None:
        """Close the notifier (every watch goes with it) and the directory kept open."""
        if self.session is not None:
            self.session.close()
        if self.notifier is not None:
            self.notifier.close()


# --- the drivers: how a run waits ------------------------------------------------------


def iterate(run: Run) -> Generator[WatchEvent, None, None]:
    """The synchronous driver: block in the notifier between rounds."""
    notifier = run.open()
    try:
        yield from run.begin()
        while (wait := run.next_wait()) is not None:
            try:
                found = notifier.wait(wait)
            except BackendError as err:
                notifier = run.fallback(err)
                found = (set(), True)
            yield from run.step(*found)
    finally:
        run.close()


async def aiterate(run: Run) -> AsyncGenerator[WatchEvent, None]:
    """The asyncio driver: the loop watches the descriptor; a timer covers the timeouts."""
    # asyncio (~10 ms): only awatch() needs it
    import asyncio

    loop = asyncio.get_running_loop()
    notifier = run.open()
    fd = notifier.fileno()
    waiting: list[asyncio.Future[None]] = []

    def wake() -> None:
        if waiting and not waiting[0].done():
            waiting[0].set_result(None)

    def readable() -> None:
        notifier.drain()  # read now, so the descriptor does not stay readable
        wake()

    if fd is not None:
        loop.add_reader(fd, readable)
    try:
        for event in run.begin():
            yield event
        while (wait := run.next_wait()) is not None:
            if fd is None:  # watchfiles, polling: the blocking wait runs in the default executor
                try:
                    found = await loop.run_in_executor(None, notifier.wait, wait)
                except BackendError as err:
                    notifier = run.fallback(err)
                    found = (set(), True)
            else:
                found = notifier.take()
                if not found[0] and not found[1]:
                    future = loop.create_future()
                    waiting[:] = [future]
                    timer = loop.call_later(wait, wake)
                    try:
                        await future
                    finally:
                        timer.cancel()
                        waiting.clear()
                    found = notifier.take()
            for event in run.step(*found):
                yield event
    finally:
        if fd is not None:
            loop.remove_reader(fd)
        run.close()
