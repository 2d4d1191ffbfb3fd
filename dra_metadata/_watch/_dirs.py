"""The way to a request directory, opened as the scanner opens it: the root followed, nothing below.

:func:`deepest_dir` finds what a watch can watch until the request directory
exists; :class:`Listing` opens the directory for one round and lists its
metadata files; :func:`link_error` is the scanner's words for a link below the
root.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Final

from .._errors import DRAMetadataError, SymlinkError, os_reason
from .._paths import METADATA_FILE_SUFFIX
from ._plan import Target

__all__ = ["Listing", "deepest_dir", "is_link", "link_error"]

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
# Below the root every level is opened without following a link, as _select.scan opens them.
_ROOT_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC
_DIR_FLAGS: Final = _ROOT_FLAGS | os.O_NOFOLLOW


def link_error(path: str) -> SymlinkError:
    """The scanner's words for a link below the root."""
    return SymlinkError(
        f"{path}: is a symbolic link; links below the metadata root are not followed", path=path
    )


def is_link(name: str, dir_fd: int) -> bool:
    """Whether ``name`` in ``dir_fd`` is a symbolic link (False when it cannot be looked at)."""
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def deepest_dir(target: Target) -> tuple[str, tuple[int, int] | None]:
    """The deepest directory on the way to the request directory, and its identity.

    Up to the root, links are followed (the root may be one) and a missing part
    means its parent; below the root each level must be a real directory
    (``lstat``): the walk stops at a link, which reads then report.
    """
    current = os.path.abspath(target.root)
    while True:
        try:
            info = os.stat(current)
        except OSError:
            pass
        else:
            if stat.S_ISDIR(info.st_mode):
                break
        parent = os.path.dirname(current)
        if parent == current:
            return current, None
        current = parent
    if current != os.path.abspath(target.root):
        return current, (info.st_dev, info.st_ino)
    for part in target.parts:
        below = os.path.join(current, part)
        try:
            part_info = os.lstat(below)
        except OSError:
            break
        if not stat.S_ISDIR(part_info.st_mode):
            break
        current, info = below, part_info
    return current, (info.st_dev, info.st_ino)


class Listing:
    """The request directory opened for one round, as the scanner opens it.

    ``fd`` is its descriptor (``None`` when it is not there); ``error`` says why
    it could not be opened when it is there (a link below the root, a permission
    refused), which the session retries like a file that does not decode.
    """

    def __init__(self, target: Target) -> None:
        self.fd: int | None = None
        self.error: DRAMetadataError | None = None
        try:
            fd = os.open(target.root, _ROOT_FLAGS)
        except OSError as err:
            if err.errno not in (errno.ENOENT, errno.ENOTDIR):
                self.error = DRAMetadataError(
                    f"metadata root {target.root}: {os_reason(err)}", path=target.root
                )
            return
        path = target.root
        for part in target.parts:
            path = os.path.join(path, part)
            try:
                below = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as err:
                if err.errno in (errno.ENOTDIR, errno.ELOOP) and is_link(part, fd):
                    self.error = link_error(path)
                elif err.errno not in (errno.ENOENT, errno.ENOTDIR):
                    self.error = DRAMetadataError(
                        f"open directory {path}: {os_reason(err)}", path=path
                    )
                os.close(fd)
                return
            os.close(fd)
            fd = below
        self.fd = fd

    def names(self, target: Target) -> list[str]:
        """The metadata file names in the directory (or just the one driver's, if there)."""
        assert self.fd is not None
        if target.file_name is not None:
            try:
                os.stat(target.file_name, dir_fd=self.fd, follow_symlinks=False)
            except FileNotFoundError:
                return []
            except OSError as err:
                path = os.path.join(target.directory, target.file_name)
                raise DRAMetadataError(f"{path}: {os_reason(err)}", path=path) from None
            return [target.file_name]
        try:
            with os.scandir(self.fd) as listing:
                return [e.name for e in listing if e.name.endswith(METADATA_FILE_SUFFIX)]
        except OSError as err:
            raise DRAMetadataError(
                f"list directory {target.directory}: {os_reason(err)}", path=target.directory
            ) from None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
