"""What a watch delivers: :class:`WatchEventKind` and :class:`WatchEvent`.

The vocabulary shared by the per-file decisions (:mod:`._state`), the session
that turns them into events (:mod:`._session`) and the public functions
(:mod:`._api`).
"""

from __future__ import annotations

import enum

import msgspec

from .._errors import DRAMetadataError
from .._model import DeviceMetadata, MergedDeviceMetadata

__all__ = ["WatchEvent", "WatchEventKind"]


class WatchEventKind(enum.StrEnum):
    """What happened to a metadata file."""

    #: A complete object with a new generation (or a new claim UID) was read.
    UPDATE = "update"
    #: The file was replaced or removed on the node after this container started: the
    #: bind mount keeps the old file (``st_nlink == 0``); later updates cannot arrive.
    STALE = "stale"
    #: The file is gone (the claim was unprepared, or the request directory removed).
    REMOVED = "removed"
    #: The file stayed undecodable (or unreadable) for ``error_timeout`` seconds.
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


class WatchEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One thing that happened to one metadata file of the watched request.

    ``generation`` and ``claim_uid`` describe the object the event is about: the
    new one for ``update``, the last one delivered for the others (``None`` when
    there was none). ``metadata`` is this file's object for ``update``, the one
    the container keeps for ``stale`` (``None`` when that one does not decode),
    else ``None``. ``merged`` is the whole request merged across its files as
    :func:`~dra_metadata.read_request_dir` merges them, from each present file's
    last delivered object (``None`` when there is none). ``message`` explains
    ``stale`` and ``error`` events; ``error`` is the read or decode error of an
    ``error`` event.
    """

    #: What happened: ``update``, ``stale``, ``removed`` or ``error``.
    kind: WatchEventKind
    #: The metadata file the event is about.
    path: str
    #: The driver the file belongs to.
    driver: str
    #: The generation of the object the event is about (the new one for ``update``, else the
    #: last delivered); ``None`` when there was none.
    generation: int | None = None
    #: The claim UID of that object; ``None`` when there was none.
    claim_uid: str | None = None
    #: This file's object for ``update``, the one the container keeps for ``stale``; else
    #: ``None``.
    metadata: DeviceMetadata | None = None
    #: The whole request merged across its files' last delivered objects; ``None`` when there
    #: is none.
    merged: MergedDeviceMetadata | None = None
    #: What happened, for ``stale`` and ``error`` events.
    message: str = ""
    #: The read or decode error of an ``error`` event.
    error: DRAMetadataError | None = None
