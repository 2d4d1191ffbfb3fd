"""The per-file decisions of a watch: :class:`FileState` and the :class:`Change` it yields.

No I/O and no clock: the session (:mod:`._session`) looks at a file and
reports what it found, with the time; the state decides which events that
look yields, when to look again after a torn read (bounded backoff), and when
a file that stays undecodable becomes an ``error``. Both the synchronous and
the asyncio watch share it unchanged.
"""

from __future__ import annotations

from typing import Final

import msgspec

from .._errors import DRAMetadataError
from .._model import DeviceMetadata
from ._events import WatchEventKind

__all__ = ["DEFAULT_ERROR_TIMEOUT", "Change", "FileState"]

#: Seconds a file may stay undecodable (empty, half written) before an ``error`` event.
DEFAULT_ERROR_TIMEOUT: Final = 2.0

# First retry of an undecodable read after this many seconds, doubling up to _RETRY_MAX.
_RETRY_FIRST: Final = 0.001
_RETRY_MAX: Final = 0.1


class Change(msgspec.Struct, frozen=True):
    """One event :class:`FileState` decided on, before the path and merged view are added."""

    kind: WatchEventKind
    generation: int | None = None
    claim_uid: str | None = None
    metadata: DeviceMetadata | None = None
    message: str = ""
    error: DRAMetadataError | None = None


class FileState:
    """What a watch knows about one metadata file; decides which events a look yields.

    No I/O and no clock: the caller looks at the file and reports what it
    found, with the time, through :meth:`decoded`, :meth:`broken` or
    :meth:`absent`; each returns the events to deliver. After a broken look
    :attr:`retry_at` says when to look again (backoff from 1 ms, doubling, at
    most 0.1 s apart, never past the error deadline).

    >>> import dra_metadata as dm
    >>> from dra_metadata._watch import FileState
    >>> state = FileState("x-metadata.json", error_timeout=2.0)
    >>> gen1 = dm.DeviceMetadata(metadata=dm.ObjectMeta(uid="u", generation=1))
    >>> [c.kind.value for c in state.decoded(gen1, nlink=1, now=0.0)]
    ['update']
    >>> state.decoded(gen1, nlink=1, now=0.5)  # the same object again: nothing
    []
    >>> fixed = dm.DeviceMetadata(metadata=dm.ObjectMeta(uid="u", generation=1, name="n"))
    >>> [c.kind.value for c in state.decoded(fixed, nlink=1, now=0.6)]  # the same, changed
    ['update']
    >>> state.broken(dm.DecodeError("half written"), now=1.0), state.retry_at
    ([], 1.001)
    >>> [c.kind.value for c in state.broken(dm.DecodeError("half written"), now=3.0)]
    ['error']
    >>> [c.kind.value for c in state.decoded(fixed, nlink=0, now=3.5)]
    ['stale']
    >>> [c.kind.value for c in state.absent(now=4.0)]
    ['removed']
    """

    __slots__ = (
        "_attempts",
        "_bad_since",
        "bad_error",
        "delivered",
        "error_reported",
        "error_timeout",
        "good",
        "path",
        "problem",
        "retry_at",
        "stale",
    )

    def __init__(
        self,
        path: str,
        *,
        error_timeout: float = DEFAULT_ERROR_TIMEOUT,
        problem: str = "not decodable",
    ) -> None:
        self.path = path
        self.error_timeout = error_timeout
        #: How an ``error`` event's message begins (a directory is "not readable").
        self.problem = problem
        #: ``(claim UID, generation)`` of the last object delivered, or ``None``.
        self.delivered: tuple[str, int] | None = None
        #: The last object delivered (what the merged view uses), or ``None``.
        self.good: DeviceMetadata | None = None
        #: Whether a ``stale`` event was delivered for the file as it is.
        self.stale = False
        #: The last read or decode error, while the file does not decode.
        self.bad_error: DRAMetadataError | None = None
        #: Whether an ``error`` event was delivered for the current bad spell.
        self.error_reported = False
        #: When to look again (monotonic seconds), or ``None``.
        self.retry_at: float | None = None
        self._bad_since: float | None = None
        self._attempts = 0

    @property
    def known(self) -> bool:
        """Whether the user has heard of this file (so its removal is news)."""
        return self.delivered is not None or self.error_reported

    @property
    def broken_now(self) -> bool:
        """Whether the last look found the file undecodable or unreadable."""
        return self._bad_since is not None

    def _last(self) -> tuple[int | None, str | None]:
        if self.delivered is None:
            return None, None
        return self.delivered[1], self.delivered[0]

    def decoded(self, md: DeviceMetadata, *, nlink: int, now: float) -> list[Change]:
        """The file held the complete object ``md``; ``nlink`` is its link count."""
        if self._bad_since is not None:  # else every field of a bad spell is at rest
            self._end_bad_spell()
        changes: list[Change] = []
        meta = md.metadata
        uid, generation = meta.uid, meta.generation
        last = self.delivered
        if (
            last is None
            or uid != last[0]
            or generation > last[1]
            or (generation == last[1] and md is not self.good and md != self.good)
        ):
            self.delivered = (uid, generation)
            self.good = md
            changes.append(Change(WatchEventKind.UPDATE, generation, uid, md))
        if nlink > 0 and not self.stale:
            return changes
        changes.extend(self._links(nlink, decodes=True))
        return changes

    def _links(self, nlink: int, *, decodes: bool) -> list[Change]:
        """A ``stale`` event the first time the file shows a link count of 0."""
        if nlink > 0:
            self.stale = False
            return []
        if self.stale:
            return []
        self.stale = True
        generation, uid = self._last()
        if decodes:
            last = f"generation {generation} is the last it will see"
        else:
            last = "the file it keeps does not decode"
        return [
            Change(
                WatchEventKind.STALE,
                generation,
                uid,
                self.good if decodes else None,
                f"{self.path} was replaced or removed on the node after this container "
                "started (st_nlink == 0): the bind mount keeps the old file, so later "
                f"updates cannot reach this container; {last} (restart the container to "
                "see newer metadata)",
            )
        ]

    def broken(self, error: DRAMetadataError, *, nlink: int = 1, now: float) -> list[Change]:
        """The file is there but did not decode (or could not be read).

        A link count of 0 means the node replaced it: one ``stale`` event at once,
        as no complete version can arrive any more.
        """
        changes = self._links(nlink, decodes=False)
        if self._bad_since is None:
            self._bad_since = now
            self._attempts = 0
        self._attempts += 1
        self.bad_error = error
        deadline = self._bad_since + self.error_timeout
        if now >= deadline:
            self.retry_at = None  # from now on: events and the rescan
            if not self.error_reported:
                self.error_reported = True
                generation, uid = self._last()
                changes.append(
                    Change(
                        WatchEventKind.ERROR,
                        generation,
                        uid,
                        None,
                        f"{self.problem} for {now - self._bad_since:.1f}s: {error}",
                        error,
                    )
                )
            return changes
        # The exponent is bounded: 2 ** 1024 does not convert to a float.
        delay = min(_RETRY_MAX, _RETRY_FIRST * 2 ** min(self._attempts - 1, 32))
        self.retry_at = min(now + delay, deadline)
        return changes

    def absent(self, *, now: float) -> list[Change]:
        """The file is not there (any more)."""
        changes: list[Change] = []
        if self.known:
            generation, uid = self._last()
            changes.append(Change(WatchEventKind.REMOVED, generation, uid))
        self.delivered = None
        self.good = None
        self.stale = False
        self.error_reported = False
        self._end_bad_spell()
        return changes

    def _end_bad_spell(self) -> None:
        self._bad_since = None
        self._attempts = 0
        self.bad_error = None
        self.error_reported = False
        self.retry_at = None
