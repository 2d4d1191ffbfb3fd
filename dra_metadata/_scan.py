"""Walking a metadata root by the documented layout, and nothing else.

The layout is fixed (see :mod:`._paths`)::

    <root>/resourceclaims/<claim>/<request>/<driver>-metadata.json
    <root>/resourceclaimtemplates/<podClaimName>/<request>/<driver>-metadata.json

:func:`scan` visits exactly those directories and files. It never follows a
symbolic link below the root (the root itself may be one): every level is
opened relative to its parent's descriptor with ``O_NOFOLLOW``, so a link
swapped in while the walk runs is refused too. A link where a claim, request
or metadata file should be is reported as an :class:`Entry` with an error, as is
a file that does not decode; other names are ignored, as Go's glob ignores
them. A metadata file is looked at before it is opened, so a FIFO or a device is
refused without ever being opened.

Entries come sorted: claims before templates, then by claim, request and file
name in byte order (the order Go merges a request's files in).

>>> entries = scan("examples/dra-device-attributes", kind="claim", claim="train")
>>> [(e.request, e.driver, e.error) for e in entries]
[('accel', 'gpu.example.com', None), ('accel', 'rdma.example.com', None)]
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from typing import Final

import msgspec

from ._errors import (
    DRAMetadataError,
    InvalidNameError,
    SymlinkError,
    os_reason,
)
from ._model import DeviceMetadata, MergedDeviceMetadata
from ._paths import (
    METADATA_FILE_SUFFIX,
    RESOURCE_CLAIM_TEMPLATES_SUBDIR,
    RESOURCE_CLAIMS_SUBDIR,
    ClaimKind,
    RootArg,
    check_name,
    driver_of,
    metadata_file_name,
    request_base,
    root_path,
)
from ._read import DEFAULT_MAX_SIZE, check_max_size, decode_file, merge, open_metadata, read_fd

__all__ = ["KINDS", "ClaimKind", "Entry", "group", "merged", "scan"]

#: The two kinds of claim directory, in listing order, with their subdirectory.
KINDS: Final[tuple[tuple[ClaimKind, str], ...]] = (
    ("claim", RESOURCE_CLAIMS_SUBDIR),
    ("template", RESOURCE_CLAIM_TEMPLATES_SUBDIR),
)

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC


class Entry(msgspec.Struct, frozen=True):
    """One metadata file found by :func:`scan`, or a place of the layout that could not be read.

    ``kind`` is ``"claim"`` or ``"template"``; ``claim`` and ``request`` are the
    directory names (``request`` is ``""`` when a claim directory itself could
    not be read); ``driver`` comes from the file name (``""`` for a directory).
    Exactly one of ``metadata`` and ``error`` is set.
    """

    kind: ClaimKind
    claim: str
    request: str
    driver: str
    path: str
    metadata: DeviceMetadata | None = None
    error: DRAMetadataError | None = None


def scan(
    root: RootArg = None,
    *,
    kind: ClaimKind | None = None,
    claim: str | None = None,
    request: str | None = None,
    driver: str | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> list[Entry]:
    """Every metadata file under ``root``, read and decoded, by layout only.

    ``kind``, ``claim``, ``request`` (``req`` or ``req/sub``) and ``driver``
    narrow the walk; names given are checked (:class:`InvalidNameError`) before
    anything is opened. Raises :class:`MetadataNotFoundError` when the root is
    missing, or when a claim, request or driver was named and nothing matches.
    Problems with single files or directories do not raise: they are entries
    with an ``error``.
    """
    check_max_size(max_size)  # before anything is looked at, even an empty root
    if claim is not None:
        if kind is None:
            raise ValueError("scan(): a claim name needs its kind")
        check_name("claim" if kind == "claim" else "pod claim", claim)
    base = None if request is None else request_base(request)
    file_name = None if driver is None else metadata_file_name(driver)
    top = root_path(root)
    try:
        root_fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        from ._nearby import not_found  # only on the way to an error

        raise not_found(top, kind=kind, claim=claim, request=request, driver=driver) from None
    except ValueError as err:  # a NUL in the root
        raise InvalidNameError(f"metadata root {top!r}: {err}", path=top) from None
    except OSError as err:
        raise DRAMetadataError(f"metadata root {top}: {os_reason(err)}", path=top) from None
    walker = _Walker(top, max_size)
    try:
        for claim_kind, subdir in KINDS:
            if kind is None or kind == claim_kind:
                walker.kind_dir(root_fd, claim_kind, subdir, claim, base, file_name)
    finally:
        os.close(root_fd)
    entries = walker.entries
    if not entries and (claim is not None or base is not None or file_name is not None):
        from ._nearby import not_found  # only on the way to an error

        raise not_found(top, kind=kind, claim=claim, request=request, driver=driver)
    return entries


class _Walker:
    """The state of one walk: the root's path for messages, the entries found so far."""

    def __init__(self, top: str, max_size: int) -> None:
        self.top = top
        self.max_size = max_size
        self.entries: list[Entry] = []

    def kind_dir(
        self,
        root_fd: int,
        kind: ClaimKind,
        subdir: str,
        claim: str | None,
        base: str | None,
        file_name: str | None,
    ) -> None:
        path = os.path.join(self.top, subdir)
        fd = self._open_dir(root_fd, subdir, path, kind, "", "")
        if fd is None:
            return
        try:
            for name in _names(fd, path, claim, directories=True):
                claim_path = os.path.join(path, name)
                claim_fd = self._open_dir(fd, name, claim_path, kind, name, "")
                if claim_fd is None:
                    continue
                try:
                    for request in _names(claim_fd, claim_path, base, directories=True):
                        request_path = os.path.join(claim_path, request)
                        request_fd = self._open_dir(
                            claim_fd, request, request_path, kind, name, request
                        )
                        if request_fd is None:
                            continue
                        try:
                            self.request_dir(
                                request_fd, request_path, kind, name, request, file_name
                            )
                        finally:
                            os.close(request_fd)
                finally:
                    os.close(claim_fd)
        finally:
            os.close(fd)

    def _open_dir(
        self, parent: int, name: str, path: str, kind: ClaimKind, claim: str, request: str
    ) -> int | None:
        """``name`` under ``parent`` opened as a directory, or ``None`` (and maybe an entry)."""
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            return None  # not there (or gone since it was listed): nothing to list
        except OSError as err:
            if err.errno in (errno.ENOTDIR, errno.ELOOP):
                if not _is_symlink(parent, name):
                    return None  # a file where a directory could be: not part of the layout
                error: DRAMetadataError = SymlinkError(
                    f"{path}: is a symbolic link; links below the metadata root are not followed",
                    path=path,
                )
            else:
                error = DRAMetadataError(f"open directory {path}: {os_reason(err)}", path=path)
        self.entries.append(Entry(kind, claim, request, "", path, error=error))
        return None

    def request_dir(
        self,
        fd: int,
        path: str,
        kind: ClaimKind,
        claim: str,
        request: str,
        file_name: str | None,
    ) -> None:
        for name in _names(fd, path, file_name, directories=False):
            if not name.endswith(METADATA_FILE_SUFFIX):
                continue
            file_path = os.path.join(path, name)
            driver = driver_of(name)
            try:
                md = self._read(fd, name, file_path)
            except DRAMetadataError as err:
                self.entries.append(Entry(kind, claim, request, driver, file_path, error=err))
            else:
                self.entries.append(Entry(kind, claim, request, driver, file_path, metadata=md))

    def _read(self, dir_fd: int, name: str, path: str) -> DeviceMetadata:
        # Looked at before it is opened (a FIFO or device never is), never followed.
        fd = open_metadata(path, name=name, dir_fd=dir_fd)
        try:
            return decode_file(path, read_fd(fd, path, max_size=self.max_size))
        finally:
            os.close(fd)


def _names(fd: int, path: str, only: str | None, *, directories: bool) -> list[str]:
    """The names in the open directory ``fd`` in byte order, or just ``only`` if it is there."""
    if only is not None:
        try:
            os.stat(only, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return []
        except OSError as err:
            raise DRAMetadataError(f"{os.path.join(path, only)}: {os_reason(err)}") from None
        return [only]
    try:
        with os.scandir(fd) as listing:
            names = [
                entry.name
                for entry in listing
                if not directories or entry.is_dir(follow_symlinks=False) or entry.is_symlink()
            ]
    except OSError as err:
        raise DRAMetadataError(f"list directory {path}: {os_reason(err)}", path=path) from None
    names.sort(key=os.fsencode)
    return names


def _is_symlink(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def group(entries: list[Entry]) -> Iterator[list[Entry]]:
    """The entries of :func:`scan` grouped by request directory, in order.

    A claim directory that could not be read is a group of its own.
    """
    current: list[Entry] = []
    for entry in entries:
        if current and (entry.kind, entry.claim, entry.request) != (
            current[0].kind,
            current[0].claim,
            current[0].request,
        ):
            yield current
            current = []
        current.append(entry)
    if current:
        yield current


def merged(entries: list[Entry]) -> MergedDeviceMetadata:
    """The files of one request directory merged as Go merges them; raises the first error."""
    files: list[tuple[str, DeviceMetadata]] = []
    for entry in entries:
        if entry.error is not None:
            raise entry.error
        assert entry.metadata is not None  # an entry has metadata or an error
        files.append((entry.path, entry.metadata))
    return merge(files)
