"""One publisher call: what it is doing, until when it may wait, and when a signal may land.

Every error a call raises starts with its :attr:`Call.label`
(``prepare ml/pod-gpu-x request "gpu"``): the label is made here, once, and every
layer below reads it from the call (the directories it opens carry it as their
``what``). An ``OSError`` that escapes a layer becomes a
:class:`~dra_metadata.PublishError` with the label and the path here too.

A call cannot be cut in half by a signal. In the main thread (the only one
where Python runs signal handlers), :class:`Call` swaps every Python-level
handler for one that only records the signal, and restores them when the call
ends: a handler that raises (``KeyboardInterrupt`` from SIGINT, ``SystemExit``
from a driver's SIGTERM handler) runs then, when every lock has been let go and
every descriptor closed, or at a safe point inside a call that waits for a lock
(:meth:`Call.checkpoint`: nothing of the claim is half done there, and what is
held is let go by ``with`` blocks that no further signal can cut). Signals whose
handler is ``SIG_DFL`` or ``SIG_IGN`` are left alone: no Python code runs for
them. This is by construction, not by catching: a ``KeyboardInterrupt`` raised
between taking a lock and entering the block that lets it go would leave the
lock held for the life of the process.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType, TracebackType
from typing import Any

from .._errors import DRAMetadataError, PublishError, os_reason
from .._field_error import go_quote
from ._names import ClaimRef

__all__ = ["Call"]

_Handler = Any  # a Python-level signal handler: callable(signum, frame)


class Call:
    """One call of the publisher on one claim (a context manager: enter it first).

    ``action`` is the call's name (``prepare``); ``request`` the request's full
    name, or None for a call on the whole claim. ``timeout`` bounds every wait for a
    lock: :attr:`deadline` is when the call gives up.
    """

    def __init__(self, action: str, claim: ClaimRef, request: str | None, timeout: float) -> None:
        where = f"{claim.namespace}/{claim.name}"
        #: What the call is doing: the start of every error it raises.
        self.label = f"{action} {where}" + (
            "" if request is None else f" request {go_quote(request)}"
        )
        #: The wait for a lock the caller allowed, in seconds.
        self.timeout = timeout
        #: When the call stops waiting for a lock (``time.monotonic``).
        self.deadline = time.monotonic() + timeout
        self._deferral: _Deferral | None = None

    def __enter__(self) -> Call:
        self._deferral = _Deferral.begin()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        deferral, self._deferral = self._deferral, None
        pending = deferral.end() if deferral is not None else []
        if isinstance(error, OSError) and not isinstance(error, DRAMetadataError):
            path = error.filename if isinstance(error.filename, str) else None
            where = f"{path}: " if path else ""
            failure = PublishError(f"{self.label}: {where}{os_reason(error)}", path=path)
            _deliver(pending)  # a KeyboardInterrupt held back wins over the failure
            raise failure from error
        _deliver(pending)

    def checkpoint(self) -> None:
        """A safe point: run the handlers of the signals recorded so far (they may raise)."""
        if self._deferral is not None:
            self._deferral.run_pending()

    def error(self, message: str, path: str | None = None) -> PublishError:
        """A :class:`PublishError` ``<label>: <message>``."""
        return PublishError(f"{self.label}: {message}", path=path)


class _Deferral:
    """The main thread's signal handlers, swapped for a recorder while a call runs."""

    #: The deferral in force in the main thread (calls do not nest their own).
    active: _Deferral | None = None

    def __init__(self) -> None:
        self.saved: dict[int, _Handler] = {}
        self.pending: list[tuple[int, FrameType | None]] = []

    @classmethod
    def begin(cls) -> _Deferral | None:
        """Swap the handlers (main thread only, and not inside another call); None otherwise."""
        if cls.active is not None or threading.current_thread() is not threading.main_thread():
            return None
        deferral = cls()
        try:
            # SIGINT first: once it is swapped, no KeyboardInterrupt cuts the rest short.
            for signum in sorted(signal.valid_signals(), key=lambda s: s != signal.SIGINT):
                handler = signal.getsignal(signum)
                if callable(handler):
                    deferral.saved[signum] = handler
                    signal.signal(signum, deferral.record)
        except ValueError:  # not the main interpreter: its handlers are not ours to swap
            deferral.restore()
            return None
        except BaseException:  # a signal that landed before its own swap
            deferral.restore()
            raise
        cls.active = deferral
        return deferral

    def record(self, signum: int, frame: FrameType | None) -> None:
        """The handler while a call runs: remember the signal."""
        self.pending.append((signum, frame))

    def run_pending(self) -> None:
        """Run the original handlers of what was recorded, keeping the swap in force."""
        while self.pending:
            signum, frame = self.pending.pop(0)
            handler = self.saved.get(signum)
            if handler is not None:
                handler(signum, frame)

    def end(self) -> list[tuple[_Handler, int, FrameType | None]]:
        """Restore the handlers; return what is left to run, each with its handler.

        SIGINT goes back last: until then no KeyboardInterrupt can land, so every
        other handler is back and every signal recorded is in the list first. A
        SIGINT recorded in the last instant is in it too; one that lands after
        raises at once.
        """
        saved, self.saved = self.saved, {}
        if _Deferral.active is self:
            _Deferral.active = None
        interrupt = [(signum, h) for signum, h in saved.items() if signum == signal.SIGINT]
        try:
            _put_back([(signum, h) for signum, h in saved.items() if signum != signal.SIGINT])
            pending, self.pending = self.pending, []
        finally:
            _put_back(interrupt)
        pending += self.pending
        self.pending = []
        return [(saved[signum], signum, frame) for signum, frame in pending if signum in saved]

    def restore(self) -> None:
        """Put every saved handler back (what :meth:`begin` does when it cannot finish)."""
        saved, self.saved = self.saved, {}
        _put_back(sorted(saved.items(), key=lambda item: item[0] == signal.SIGINT))


def _put_back(handlers: list[tuple[int, _Handler]]) -> None:
    """Set each handler; one that runs at once and raises does not keep the rest out."""
    left = list(handlers)
    try:
        while left:
            signal.signal(*left[0])
            del left[0]
    finally:
        for signum, handler in left:
            signal.signal(signum, handler)


def _deliver(pending: list[tuple[_Handler, int, FrameType | None]]) -> None:
    """Run the handlers of the signals a call held back, in the order they came."""
    for handler, signum, frame in pending:
        handler(signum, frame)
