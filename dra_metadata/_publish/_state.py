"""The claim's state: the highest generation each request has had, kept across crashes.

The state file (``<stem>.state`` in the publisher's directory, beside the lock)
is read and written under the claim's lock only. It is replaced atomically
before each metadata file is written, so a generation never goes down, even
when a crash leaves a metadata file empty. One that cannot be used (a link,
not JSON, not the publisher's schema, a generation outside 1..int64) is left
aside with the reason in :attr:`ClaimState.problem`, and replaced at the next
:meth:`~ClaimState.record`; what cannot be replaced (a directory, an immutable
file) is refused with its fix.
"""

from __future__ import annotations

import json
from typing import Final

from .._errors import PublishError
from .._safedir import InTheWay, SafeDir
from ._call import Call
from ._lock import ClaimLock
from ._names import INT64_MAX, ClaimRef, is_label, lock_name, state_name

__all__ = ["ClaimState", "LockedClaim", "parse_state"]

#: A state file holds a few lines per request; a larger one is not the publisher's.
_STATE_LIMIT: Final = 1 << 20
_STATE_MODE: Final = 0o600
_BELONGS: Final = "the claim's state"
_LOCK_BELONGS: Final = "the claim's lock"


class LockedClaim:
    """A claim while a call holds its lock: the lock, and the state read under it.

    ``own`` is the publisher's directory (None: it does not exist, and the call
    makes nothing). Enter it, then :meth:`take`; leaving the block lets the lock
    go, and removes the lock file when the claim has no state (it is not
    prepared: the next call makes the file again).
    """

    def __init__(self, own: SafeDir | None, claim: ClaimRef, call: Call) -> None:
        self._own = own
        self._claim = claim
        self.lock = None if own is None else ClaimLock(own, lock_name(claim), call, _LOCK_BELONGS)
        #: The claim's state (None until :meth:`take` has read it).
        self.state: ClaimState | None = None
        #: What sits at the lock's name and keeps every call from taking it (unprepare goes on).
        self.in_the_way: InTheWay | None = None
        #: Whether the call unprepared the claim: the lock file goes, whatever stays.
        self.unprepared = False

    def __enter__(self) -> LockedClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.lock is not None:
            self.lock.remove = self.unprepared or (self.state is not None and not self.state.exists)
            self.lock.release()

    def take(self, *, create: bool, or_go_on: bool = False) -> ClaimState | None:
        """Take the lock, then read the state; None when (not ``create``) there is no lock.

        With ``or_go_on``, a lock no call can take (a directory at its name) is kept
        in :attr:`in_the_way` and the state read all the same: only unprepare goes on,
        since no call can write while that stays there.
        """
        if self._own is None or self.lock is None:
            return None
        try:
            if not self.lock.acquire(create=create):
                return None
        except InTheWay as err:
            if not or_go_on:
                raise
            self.in_the_way = err
        self.state = ClaimState(self._own, state_name(self._claim))
        return self.state

    def left(self) -> list[PublishError]:
        """What stays of the lock: in the way, or a file that could not be removed."""
        found: list[PublishError] = [] if self.in_the_way is None else [self.in_the_way]
        if self.lock is not None and self.lock.left is not None:
            found.append(self.lock.left)
        return found


class ClaimState:
    """A claim's state file, read under its lock: the highest generation of each request."""

    def __init__(self, own: SafeDir, name: str) -> None:
        self._own = own
        self.name = name
        #: base request -> (highest generation written or about to be, podClaimName written)
        self.requests: dict[str, tuple[int, str | None]] = {}
        #: Why the state on disk was left aside (None: read, or there was none).
        self.problem: str | None = None
        #: Whether a state file is on disk (one of ours or not).
        self.exists = False
        try:
            data = own.read(name, limit=_STATE_LIMIT)
        except PublishError as err:
            self.exists = True
            self.problem = f"the publisher's state cannot be read ({err})"
            return
        if data is None:
            return
        self.exists = True
        try:
            self.requests = parse_state(data)
        except ValueError as err:
            self.problem = f"the publisher's state is not one it wrote ({err})"

    @property
    def path(self) -> str:
        """The state file's path."""
        return f"{self._own.path}/{self.name}"

    def record(self, base: str, generation: int, pod_claim_name: str | None) -> None:
        """Keep ``generation`` as ``base``'s highest, crash-safely, before its file is written.

        Whatever file is at the name is replaced (never written through).
        """
        self.requests[base] = (generation, pod_claim_name)
        self._write()

    def forget(self, base: str) -> None:
        """Drop ``base`` (its file is gone); the file goes with the last request."""
        if self.requests.pop(base, None) is None:
            return
        if self.requests:
            self._write()
        else:
            self.remove()

    def remove(self) -> None:
        """Remove the state and its temporary; a directory or immutable file there raises."""
        self._own.clear(self.name, _BELONGS)
        self._own.remove_temporary(self.name)
        self.exists = False

    def _write(self) -> None:
        body = {
            "requests": {
                name: {"generation": gen, "podClaimName": pcn}
                for name, (gen, pcn) in sorted(self.requests.items())
            }
        }
        data = (json.dumps(body) + "\n").encode("utf-8")
        self._own.replace(self.name, data, mode=_STATE_MODE, locked=True, belongs=_BELONGS)
        self.problem = None
        self.exists = True


def parse_state(data: bytes) -> dict[str, tuple[int, str | None]]:
    """The requests of a state file; ``ValueError`` saying what is wrong with one."""
    try:
        loaded = json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as err:  # also what is not UTF-8, and integers of too many digits
        raise ValueError(f"not JSON: {err}") from None
    requests = loaded.get("requests") if isinstance(loaded, dict) else None
    if not isinstance(requests, dict):
        raise ValueError('no "requests" object')
    parsed: dict[str, tuple[int, str | None]] = {}
    for base, entry in requests.items():
        generation = entry.get("generation") if isinstance(entry, dict) else None
        pod_claim_name = entry.get("podClaimName") if isinstance(entry, dict) else None
        if not is_label(base):
            raise ValueError(f"{base!r} is not a request name")
        if type(generation) is not int or not 1 <= generation <= INT64_MAX:
            raise ValueError(f"request {base!r}: generation {generation!r} is not in 1..int64")
        if pod_claim_name is not None and not isinstance(pod_claim_name, str):
            raise ValueError(f"request {base!r}: podClaimName {pod_claim_name!r} is not a string")
        parsed[base] = (generation, pod_claim_name)
    return parsed
