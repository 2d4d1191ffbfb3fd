"""Reading metadata: a stream decoded, files read, a request's files merged.

Decoding a stream: the Go reference's algorithm, made fast
===========================================================

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
* otherwise the **exact path** (:mod:`._gojson`, on the scanner of
  :mod:`._goscan`) replays Go's scanner, its case-insensitive apiVersion/kind
  detection and its decode-into-existing-value rules, and produces Go's error
  texts.

A property test checks that the two agree on arbitrary and mutated streams.

Reading files, and merging a request's files across drivers
============================================================

Reading by claim and request name (the layout, exactly the request asked) is
:mod:`._claims`, built on these.

One request can be served by several drivers, each writing its own
``<driver>-metadata.json`` into the request directory. Reading without a driver
merges them the way the Go reference does: files in byte order of their names
(dot-files included), requests of the same name get their devices concatenated
in file order, the first non-null ``podClaimName`` wins, and the result has no
object metadata. Unlike Go, the result also keeps each file's identity
(:class:`MetadataSource`) and reports files that disagree on the claim UID.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from datetime import datetime
from typing import Final

import msgspec

from ._errors import (
    DecodeError,
    DRAMetadataError,
    FileTooLargeError,
    InvalidNameError,
    MetadataNotFoundError,
    SymlinkError,
    os_reason,
)
from ._fence import READER_WAIT, shared
from ._model import (
    Device,
    DeviceMetadata,
    DeviceMetadataRequest,
    MergedDeviceMetadata,
    MetadataSource,
    ObjectMeta,
)
from ._paths import METADATA_FILE_SUFFIX, check_path, driver_of
from ._versions import API_VERSIONS

__all__ = [
    "DEFAULT_MAX_SIZE",
    "check_max_size",
    "decode",
    "decode_file",
    "merge",
    "open_metadata",
    "read_bytes",
    "read_fd",
    "read_file",
    "read_found",
    "read_request_dir",
    "stream_bytes",
]


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
    # Imported on first use: most files never need them.
    from ._gojson import decode_stream
    from ._goscan import GoDecodeError

    try:
        wire, api_version, _start, _end = decode_stream(data)
    except GoDecodeError as err:
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

    try:
        datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return True


#: Files larger than this many bytes are refused unless a caller allows more.
DEFAULT_MAX_SIZE: Final = 16 * 1024 * 1024


def check_max_size(max_size: object) -> int:
    """``max_size`` if it is a byte count; :class:`TypeError` (``None``, a float...) otherwise.

    There is no "no limit": a file a node wrote is never read without a bound.
    Pass a larger int for a larger cap. A negative count is a :class:`ValueError`.
    """
    if isinstance(max_size, bool) or not isinstance(max_size, int):
        raise TypeError(
            f"max_size must be an int (a number of bytes, {DEFAULT_MAX_SIZE} by default), "
            f"not {type(max_size).__name__}; there is no unlimited read: pass a larger int"
        )
    if max_size < 0:
        raise ValueError(f"max_size must not be negative, not {max_size}")
    return max_size


_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_SYMLINK_TEXT: Final = "is a symbolic link; links below the metadata root are not followed"


def open_metadata(path: str, *, name: str | None = None, dir_fd: int | None = None) -> int:
    """Open one metadata file for reading, without ever opening anything but a regular file.

    ``path`` names the file in messages. With ``dir_fd``, the file is ``name`` in
    that open directory and is a file *found* by a reader: a symbolic link is
    refused (:class:`SymlinkError`), never followed. Without it, ``path`` is a
    file the caller chose, and a link there is followed.

    The file is looked at (``lstat``, or ``stat`` when links are followed)
    before it is opened, so a FIFO, a device or a socket is refused without
    being opened; after opening (non-blocking, ``O_NOFOLLOW`` for found files)
    ``fstat`` checks that it is still that file, or another regular file (a
    writer's atomic rename), and refuses anything else. A directory is Go's
    "no metadata objects" :class:`DecodeError`. The caller closes the descriptor.
    """
    follow = dir_fd is None
    target = path if follow else name
    assert target is not None  # a found file is named in its directory
    flags = os.O_RDONLY | os.O_NONBLOCK | _CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        before = os.stat(target, dir_fd=dir_fd, follow_symlinks=follow)
    except OSError as err:
        raise _open_error(err, path, follow) from None
    except ValueError as err:  # a NUL in the path
        raise InvalidNameError(f"open metadata file {path!r}: {err}", path=path) from None
    if not follow and stat.S_ISLNK(before.st_mode):
        raise SymlinkError(f"{path}: {_SYMLINK_TEXT}", path=path)
    _check_kind(before, path)
    try:
        fd = os.open(target, flags, dir_fd=dir_fd)
    except OSError as err:
        raise _open_error(err, path, follow) from None
    try:
        after = os.fstat(fd)
    except OSError as err:  # pragma: no cover - fstat of an open descriptor does not fail
        os.close(fd)
        raise DRAMetadataError(f"read metadata file {path}: {os_reason(err)}", path=path) from None
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) and not stat.S_ISREG(
        after.st_mode
    ):
        # Swapped for a special file between the look and the open (a race no
        # path-based open can close): refused at once, before anything is read.
        os.close(fd)
        _check_kind(after, path)
    # Another regular file is what an atomic rename by the writer leaves: read it.
    return fd


def _open_error(err: OSError, path: str, follow: bool) -> DRAMetadataError:
    """The reader's error for ``err``, met looking at or opening the metadata file ``path``."""
    if isinstance(err, FileNotFoundError):
        return MetadataNotFoundError(
            f"open metadata file: open {path}: no such file or directory", path=path
        )
    if err.errno == errno.ELOOP and not follow:  # became a link since it was looked at
        return SymlinkError(f"{path}: {_SYMLINK_TEXT}", path=path)
    return DRAMetadataError(f"open metadata file: open {path}: {os_reason(err)}", path=path)


def _check_kind(info: os.stat_result, path: str) -> None:
    """Refuse what is not a regular file: a directory as Go answers it, the rest as such."""
    if stat.S_ISDIR(info.st_mode):
        # Go opens a directory fine and then reads nothing from it.
        raise DecodeError(
            f"{path}: no metadata objects found in stream (it is a directory)", path=path
        )
    if not stat.S_ISREG(info.st_mode):
        raise DRAMetadataError(f"{path}: not a regular file", path=path)


def read_bytes(path: str | os.PathLike[str], *, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """The content of one metadata file, refusing files over ``max_size`` bytes.

    ``path`` is the caller's choice: a symbolic link there is followed. Anything
    but a regular file (a FIFO, a device, a socket) is refused before it is
    opened (:func:`open_metadata`). Raises :class:`TypeError` for a path that is
    not a ``str`` (bytes included) and a ``max_size`` that is not an ``int``.
    """
    name = check_path("path", path)
    limit = check_max_size(max_size)
    fd = open_metadata(name)
    try:
        return read_fd(fd, name, max_size=limit)
    finally:
        os.close(fd)


def read_found(path: str, *, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """:func:`read_bytes` of a file a walk found, not one the caller named: no link followed.

    The file is opened relative to its directory with ``O_NOFOLLOW``
    (:func:`open_metadata`), so a link swapped in after the walk listed the
    file is a :class:`SymlinkError`, never read.
    """
    limit = check_max_size(max_size)
    directory, name = os.path.split(path)
    try:
        dir_fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    except FileNotFoundError:
        raise MetadataNotFoundError(
            f"open metadata file: open {path}: no such file or directory", path=path
        ) from None
    except OSError as err:
        raise DRAMetadataError(
            f"open metadata file: open {path}: {os_reason(err)}", path=path
        ) from None
    try:
        fd = open_metadata(path, name=name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        return read_fd(fd, path, max_size=limit)
    finally:
        os.close(fd)


def read_fd(
    fd: int, name: str, *, max_size: int = DEFAULT_MAX_SIZE, fence: float | None = READER_WAIT
) -> bytes:
    """The content of the open metadata file ``fd``, at most ``max_size`` bytes.

    ``name`` is the path the messages name. The caller keeps ``fd`` and closes it.
    Anything but a regular file or a directory (a FIFO, a device, a socket) is
    refused: it has no content to decode, and reading it could block or never end.
    ``max_size`` is checked as :func:`check_max_size` checks it. The read is made
    behind the in-place writer's fence (:mod:`._fence`): a write under way is
    waited for, at most ``fence`` seconds, then the file is read anyway; ``None``:
    the caller took the fence itself (the watch, which never waits).
    """
    check_max_size(max_size)
    try:
        info = os.fstat(fd)
        _check_kind(info, name)
        if fence is not None and stat.S_ISREG(info.st_mode):
            shared(fd, wait=fence)
        if info.st_size > max_size:
            raise FileTooLargeError(
                f"{name}: file has {info.st_size} bytes, over the limit of {max_size}", path=name
            )
        chunks: list[bytes] = []
        remaining = max_size + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_size:
            raise FileTooLargeError(
                f"{name}: file grew past the limit of {max_size} bytes while being read", path=name
            )
        return data
    except OSError as err:
        raise DRAMetadataError(f"read metadata file {name}: {os_reason(err)}", path=name) from None


def read_file(path: str | os.PathLike[str], *, max_size: int = DEFAULT_MAX_SIZE) -> DeviceMetadata:
    """Read and decode one metadata file (no validation, as in Go).

    ``path`` is the caller's choice, so a symbolic link there is followed (the
    readers that find files themselves follow none). Raises
    :class:`MetadataNotFoundError` when it does not exist, :class:`DecodeError`
    (message prefixed with the path, as Go's) when it does not decode,
    :class:`FileTooLargeError` over ``max_size`` bytes, :class:`DRAMetadataError`
    for anything but a regular file (never opened). :class:`TypeError` when
    ``path`` is not a ``str`` path (bytes included) or ``max_size`` not an
    ``int`` (``None`` too: every read is bounded).
    """
    name = check_path("path", path)
    return decode_file(name, read_bytes(name, max_size=max_size))


def decode_file(name: str, data: bytes) -> DeviceMetadata:
    """:func:`decode` ``data`` read from ``name``; errors are prefixed with it, as in Go."""
    try:
        return decode(data)
    except DecodeError as err:
        raise DecodeError(f"{name}: {err}", path=name) from None


def _metadata_names(fd: int, directory: str) -> list[str]:
    """The metadata file names in the open ``directory``, in Go's order (bytewise, dot-files)."""
    try:
        names = os.listdir(fd)
    except OSError as err:
        raise DRAMetadataError(
            f"glob metadata files in {directory}: {os_reason(err)}", path=directory
        ) from None
    matches = [name for name in names if name.endswith(METADATA_FILE_SUFFIX)]
    matches.sort(key=os.fsencode)
    return matches


def read_request_dir(
    directory: str | os.PathLike[str], *, max_size: int = DEFAULT_MAX_SIZE
) -> MergedDeviceMetadata:
    """Read every ``*-metadata.json`` of a request directory, merged as Go merges them.

    For callers that already hold the directory (walking the tree, say);
    :func:`read_resource_claim` and :func:`read_resource_claim_template` build it
    from names. ``directory`` is the caller's choice (it may be a symbolic
    link); the files found in it are opened relative to it and a link among
    them is a :class:`SymlinkError`, never followed, as for every reader.
    Raises :class:`TypeError` as :func:`read_file` does.

    >>> import dra_metadata as dm
    >>> md = dm.read_request_dir("examples/dra-device-attributes/resourceclaims/train/accel")
    >>> [source.driver for source in md.sources]
    ['gpu.example.com', 'rdma.example.com']
    """
    name = check_path("directory", directory)
    limit = check_max_size(max_size)
    try:
        dir_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        dir_fd = -1  # Go's glob: no directory, no matches
    except ValueError as err:  # a NUL in the path
        raise InvalidNameError(f"request directory {name!r}: {err}", path=name) from None
    except OSError as err:
        raise DRAMetadataError(
            f"glob metadata files in {name}: {os_reason(err)}", path=name
        ) from None
    if dir_fd < 0:
        raise MetadataNotFoundError(f"no metadata files found in {name}", path=name)
    try:
        files: list[tuple[str, DeviceMetadata]] = []
        for file_name in _metadata_names(dir_fd, name):
            path = os.path.join(name, file_name)
            fd = open_metadata(path, name=file_name, dir_fd=dir_fd)
            try:
                files.append((path, decode_file(path, read_fd(fd, path, max_size=limit))))
            finally:
                os.close(fd)
    finally:
        os.close(dir_fd)
    if not files:
        raise MetadataNotFoundError(f"no metadata files found in {name}", path=name)
    return merge(files)


def merge(files: list[tuple[str, DeviceMetadata]]) -> MergedDeviceMetadata:
    """Merge decoded files of one request directory, in the order given, as Go does."""
    if len(files) == 1:
        path, md = files[0]
        requests = md.requests
        if len(requests) < 2 or len({request.name for request in requests}) == len(requests):
            # One file, no request twice: its requests as they are, no UID to disagree on.
            source = _source(path, md)
            return MergedDeviceMetadata(
                api_version=source.api_version,
                pod_claim_name=md.pod_claim_name,
                requests=requests,
                sources=(source,),
            )
    pod_claim_name: str | None = None
    order: list[str] = []
    devices: dict[str, list[Device]] = {}
    sources: list[MetadataSource] = []
    for path, md in files:
        if pod_claim_name is None:
            pod_claim_name = md.pod_claim_name
        for request in md.requests:
            if request.name not in devices:
                order.append(request.name)
                devices[request.name] = []
            devices[request.name].extend(request.devices)
        sources.append(_source(path, md))
    return _merged(
        pod_claim_name,
        tuple(DeviceMetadataRequest(name=name, devices=tuple(devices[name])) for name in order),
        sources,
    )


def _source(path: str, md: DeviceMetadata) -> MetadataSource:
    """Where one merged file came from."""
    meta = md.metadata
    return MetadataSource(
        path=path,
        driver=driver_of(path),
        api_version=md.api_version,
        generation=meta.generation,
        claim_uid=meta.uid,
        claim_name=meta.name,
        claim_namespace=meta.namespace,
    )


def _merged(
    pod_claim_name: str | None,
    requests: tuple[DeviceMetadataRequest, ...],
    sources: list[MetadataSource],
) -> MergedDeviceMetadata:
    """The merged object; a warning when the files disagree on the claim UID."""
    versions = {source.api_version for source in sources}
    merged = MergedDeviceMetadata(
        api_version=versions.pop() if len(versions) == 1 else "",
        pod_claim_name=pod_claim_name,
        requests=requests,
        sources=tuple(sources),
    )
    conflicts = merged.conflicting_sources
    if conflicts:
        # logging loads only when something is logged
        from ._log import logger

        logger().warning(
            "metadata files disagree on the claim UID: %s",
            ", ".join(f"{s.path} has {s.claim_uid!r}" for s in (sources[0], *conflicts)),
        )
    return merged
