"""Reading metadata files, and merging a request's files across drivers.

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

import os
import stat
from typing import Final

from ._decode import decode
from ._errors import (
    DecodeError,
    DRAMetadataError,
    FileTooLargeError,
    InvalidNameError,
    MetadataNotFoundError,
    os_reason,
)
from ._model import (
    Device,
    DeviceMetadata,
    DeviceMetadataRequest,
    MergedDeviceMetadata,
    MetadataSource,
)
from ._paths import METADATA_FILE_SUFFIX, driver_of

__all__ = [
    "DEFAULT_MAX_SIZE",
    "decode_file",
    "merge",
    "read_bytes",
    "read_fd",
    "read_file",
    "read_request_dir",
]

#: Files larger than this many bytes are refused unless a caller allows more.
DEFAULT_MAX_SIZE: Final = 16 * 1024 * 1024


def read_bytes(path: str | os.PathLike[str], *, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """The content of one metadata file, refusing files over ``max_size`` bytes.

    The file is opened non-blocking, so a FIFO named like a metadata file is
    refused (:func:`read_fd`) instead of hanging the reader.
    """
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise MetadataNotFoundError(
            f"open metadata file: open {name}: no such file or directory", path=name
        ) from None
    except ValueError as err:  # a NUL in the path
        raise InvalidNameError(f"open metadata file {name!r}: {err}", path=name) from None
    except OSError as err:
        raise DRAMetadataError(
            f"open metadata file: open {name}: {os_reason(err)}", path=name
        ) from None
    try:
        return read_fd(fd, name, max_size=max_size)
    finally:
        os.close(fd)


def read_fd(fd: int, name: str, *, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """The content of the open metadata file ``fd``, at most ``max_size`` bytes.

    ``name`` is the path the messages name. The caller keeps ``fd`` and closes it.
    Anything but a regular file or a directory (a FIFO, a device, a socket) is
    refused: it has no content to decode, and reading it could block or never end.
    """
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            # Go opens a directory fine and then reads nothing from it.
            raise DecodeError(
                f"{name}: no metadata objects found in stream (it is a directory)", path=name
            )
        if not stat.S_ISREG(info.st_mode):
            raise DRAMetadataError(f"{name}: not a regular file", path=name)
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

    Raises :class:`MetadataNotFoundError` when it does not exist,
    :class:`DecodeError` (message prefixed with the path, as Go's) when it does
    not decode, :class:`FileTooLargeError` over ``max_size`` bytes.
    """
    name = os.fspath(path)
    return decode_file(name, read_bytes(name, max_size=max_size))


def decode_file(name: str, data: bytes) -> DeviceMetadata:
    """:func:`decode` ``data`` read from ``name``; errors are prefixed with it, as in Go."""
    try:
        return decode(data)
    except DecodeError as err:
        raise DecodeError(f"{name}: {err}", path=name) from None


def metadata_files(directory: str) -> list[str]:
    """The metadata files in ``directory``, in Go's order (bytewise, dot-files included)."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []  # Go's glob: no directory, no matches
    except ValueError as err:  # a NUL in the root
        raise InvalidNameError(f"request directory {directory!r}: {err}", path=directory) from None
    except OSError as err:
        raise DRAMetadataError(
            f"glob metadata files in {directory}: {os_reason(err)}", path=directory
        ) from None
    matches = [name for name in names if name.endswith(METADATA_FILE_SUFFIX)]
    matches.sort(key=os.fsencode)
    return [os.path.join(directory, name) for name in matches]


def read_request_dir(
    directory: str | os.PathLike[str], *, max_size: int = DEFAULT_MAX_SIZE
) -> MergedDeviceMetadata:
    """Read every ``*-metadata.json`` of a request directory, merged as Go merges them.

    For callers that already hold the directory (walking the tree, say);
    :func:`read_resource_claim` and :func:`read_resource_claim_template` build it
    from names.

    >>> import dra_metadata as dm
    >>> md = dm.read_request_dir("examples/dra-device-attributes/resourceclaims/train/accel")
    >>> [source.driver for source in md.sources]
    ['gpu.example.com', 'rdma.example.com']
    """
    name = os.fspath(directory)
    paths = metadata_files(name)
    if not paths:
        raise MetadataNotFoundError(f"no metadata files found in {name}", path=name)
    return merge([(path, read_file(path, max_size=max_size)) for path in paths])


def merge(files: list[tuple[str, DeviceMetadata]]) -> MergedDeviceMetadata:
    """Merge decoded files of one request directory, in the order given, as Go does."""
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
        meta = md.metadata
        sources.append(
            MetadataSource(
                path=path,
                driver=driver_of(path),
                api_version=md.api_version,
                generation=meta.generation,
                claim_uid=meta.uid,
                claim_name=meta.name,
                claim_namespace=meta.namespace,
            )
        )
    versions = {source.api_version for source in sources}
    merged = MergedDeviceMetadata(
        api_version=versions.pop() if len(versions) == 1 else "",
        pod_claim_name=pod_claim_name,
        requests=tuple(
            DeviceMetadataRequest(name=name, devices=tuple(devices[name])) for name in order
        ),
        sources=tuple(sources),
    )
    conflicts = merged.conflicting_sources
    if conflicts:
        from ._log import logger

        logger().warning(
            "metadata files disagree on the claim UID: %s",
            ", ".join(f"{s.path} has {s.claim_uid!r}" for s in (sources[0], *conflicts)),
        )
    return merged
