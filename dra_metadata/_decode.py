"""Decoding a metadata stream: the Go reference's algorithm, made fast.

A metadata file holds the same ``DeviceMetadata`` once per API version, newest
first. :func:`decode` returns the first entry it can decode, as Go v1.37 does:
unknown group/versions are skipped, anything else that fails is fatal, and bytes
after the chosen entry are never looked at.

Two paths give the same answers:

* the **fast path** decodes the first entry straight into the frozen model with
  msgspec, and accepts the result only when it can prove Go would have decoded
  the same object: the entry is a known version, has no unknown or
  case-variant keys (msgspec is told to reject those), no duplicate key whose Go
  semantics differ from "last wins" (no object was dropped: the ``{`` count of
  the entry equals the number of objects in the result), and no timestamp or raw
  field that needs Go's own parsing;
* otherwise the **exact path** (:mod:`._gojson`) replays Go's scanner, its
  case-insensitive apiVersion/kind detection and its decode-into-existing-value
  rules, and produces Go's error texts.

A property test checks that the two agree on arbitrary and mutated streams.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

from ._errors import DecodeError
from ._model import DeviceMetadata, ObjectMeta
from ._versions import API_VERSIONS

__all__ = ["decode", "stream_bytes"]

_KNOWN_VERSIONS: Final = frozenset(API_VERSIONS)


class _MissingKind(msgspec.Struct, tag_field="kind", tag="\x00"):
    """Never matches; being in a union makes msgspec require the ``kind`` tag."""


_Decoder = msgspec.json.Decoder[DeviceMetadata | _MissingKind]
_fast: _Decoder | None = None  # built on first use: building it is most of the import cost


def _fast_decoder() -> _Decoder:
    global _fast
    _fast = msgspec.json.Decoder(DeviceMetadata | _MissingKind)
    return _fast


# Entries shorter than this are copied (cheap), longer ones viewed (no copy).
_COPY_LIMIT: Final = 16384

# How far from an even split the end of the first entry may be: entries differ
# only in their apiVersion string.
_SPLIT_WINDOW: Final = 64
_ENTRY_BOUNDARY: Final = b"}\n{"

_CANONICAL_TIME: Final = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"


def decode(data: bytes | bytearray | memoryview | str) -> DeviceMetadata:
    """Decode a metadata stream (the content of a ``*-metadata.json`` file).

    Returns the first entry whose API version this library knows, converted to
    the model; :attr:`DeviceMetadata.api_version` tells which one it was.
    Validation is separate: see :func:`dra_metadata.validate`.

    Raises :class:`DecodeError` (a ``ValueError``) whose message starts like the
    Go reference's.

    >>> md = decode(b'{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1",'
    ...             b'"metadata":{"generation":2},"requests":[{"name":"gpu"}]}')
    >>> md.api_version, md.metadata.generation, md.requests[0].name
    ('metadata.resource.k8s.io/v1beta1', 2, 'gpu')
    """
    if type(data) is not bytes:
        data = stream_bytes(data, "decode()")
    md = _decode_fast(data)
    if md is not None:
        return md
    return decode_exact(data)


def stream_bytes(data: object, caller: str) -> bytes:
    """A stream given as ``str`` (UTF-8, lone surrogates kept) or any bytes-like, as bytes.

    Anything else is a :class:`TypeError` naming ``caller`` (``"decode()"``).
    """
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"{caller} takes bytes or str, not {type(data).__name__}")


def decode_exact(data: bytes) -> DeviceMetadata:
    """Decode with the exact (Go-replaying) path only; same answers as :func:`decode`."""
    from . import _gojson  # imported on first use: most files never need it

    try:
        wire, api_version, _start, _end = _gojson.decode_stream(data)
    except _gojson.GoDecodeError as err:
        raise DecodeError(str(err)) from None
    return from_wire(wire, api_version)


def from_wire(wire: dict[str, object], api_version: str) -> DeviceMetadata:
    """Build the model from a wire-form dict (as :meth:`DeviceMetadata.to_dict` gives)."""
    meta = wire.get("metadata")
    if isinstance(meta, dict):
        for entry in meta.get("managedFields", ()):
            if "fieldsV1" in entry:  # raw JSON text, kept as a plain str
                entry["fieldsV1"] = str(entry["fieldsV1"])
    try:
        return msgspec.convert(
            {"kind": "DeviceMetadata", "apiVersion": api_version, **wire}, DeviceMetadata
        )
    except msgspec.ValidationError as err:  # pragma: no cover - the exact path emits valid shapes
        raise DecodeError(f"decode {api_version}: {err}") from None


def _decode_fast(data: bytes) -> DeviceMetadata | None:
    """The first entry decoded by msgspec, or ``None`` when the exact path must decide."""
    size = len(data)
    # The Go writer's two-version stream: v1beta1, then v1alpha1 one byte longer.
    end = (size - 3) >> 1
    if not data.startswith(_ENTRY_BOUNDARY, end - 1):
        end = _find_entry_end(data, size)
    try:
        md = (_fast or _fast_decoder()).decode(
            data[:end] if end < _COPY_LIMIT else memoryview(data)[:end]
        )
    except msgspec.DecodeError:  # also ValidationError
        return None
    except RecursionError:  # msgspec's own depth guard: the exact path gives Go's answer
        return None
    if type(md) is not DeviceMetadata or md.api_version not in _KNOWN_VERSIONS:
        return None
    meta = md.metadata
    if (
        meta.managed_fields
        or meta.creation_timestamp is not None
        or meta.deletion_timestamp is not None
    ) and not _plain_meta(meta):
        return None
    # Every JSON object of the entry must be one object of the result: a dropped
    # object means a duplicate key that Go would have merged (or a brace in a string).
    objects = 2 + len(meta.owner_references) + len(md.requests)
    if meta.labels:
        objects += 1
    if meta.annotations:
        objects += 1
    for request in md.requests:
        for device in request.devices:
            attributes = device.attributes
            if attributes:
                objects += 2 + len(attributes)
            else:
                objects += 1
            if device.network_data is not None:
                objects += 1
    if data.count(b"{", 0, end) != objects:
        return None
    return md


def _find_entry_end(data: bytes, size: int) -> int:
    """Where the first entry ends, guessing that entries are of near-equal size."""
    for parts in (2, 3):
        middle = size // parts
        found = data.find(_ENTRY_BOUNDARY, max(0, middle - _SPLIT_WINDOW), middle + _SPLIT_WINDOW)
        if found >= 0:
            return found + 1
    # A single entry (or entries of very different sizes): msgspec tells which.
    return size


def _plain_meta(meta: ObjectMeta) -> bool:
    """Object metadata that msgspec decodes exactly as Go: no raw fields, canonical times."""
    if meta.managed_fields:
        return False
    return all(
        stamp is None or _is_canonical_time(stamp)
        for stamp in (meta.creation_timestamp, meta.deletion_timestamp)
    )


def _is_canonical_time(stamp: str) -> bool:
    """A non-zero RFC 3339 UTC time with second precision, as Go re-encodes it."""
    if not re.fullmatch(_CANONICAL_TIME, stamp) or stamp.startswith("0001-01-01T00:00:00"):
        return False
    from datetime import datetime

    try:
        datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return True
