"""Where the metadata came from: single-file bind mounts made when the container started.

Inside a container the kubelet plugin's CDI spec bind-mounts each metadata file
on its own, read-only, when the container is created; ``/proc/self/mountinfo``
lists every such file as a mount point. Two facts follow that a plain
directory tree does not have:

* a claim or request that is not mounted now never will be (mounts are not
  added to a running container);
* a file whose node copy was replaced (atomic rename: ``st_nlink`` is 0 on the
  mounted inode) never changes again: the mount pins the old inode.

:func:`metadata_mounts` tells which world a root is in. The root is compared by
its real path: ``/var/run`` is usually a link to ``/run``, and the mount points
read ``/run/kubernetes.io/...``.

>>> metadata_mounts("/nonexistent/root", mountinfo="/proc/self/mountinfo") is None
True
"""

from __future__ import annotations

import os
from typing import Final

import msgspec

from ._paths import METADATA_FILE_SUFFIX

__all__ = ["MOUNTINFO", "MetadataMounts", "metadata_mounts", "mount_points"]

#: The mount table of the calling process.
MOUNTINFO: Final = "/proc/self/mountinfo"

_ESCAPES: Final = {"\\040": " ", "\\011": "\t", "\\012": "\n", "\\134": "\\"}


def _unescape(field: str) -> str:
    if "\\" not in field:
        return field
    for escaped, char in _ESCAPES.items():
        field = field.replace(escaped, char)
    return field


def mount_points(mountinfo: str = MOUNTINFO) -> list[str]:
    """Every mount point in ``mountinfo`` (the fifth field), unescaped; ``[]`` if unreadable.

    >>> "/" in mount_points()
    True
    """
    try:
        with open(mountinfo, "rb") as table:
            lines = table.read().decode("utf-8", "surrogateescape").splitlines()
    except OSError:
        return []
    points = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:
            points.append(_unescape(fields[4]))
    return points


class MetadataMounts(msgspec.Struct, frozen=True):
    """The metadata files bind-mounted below a root (real paths), and the root's real path."""

    root: str
    files: frozenset[str]

    def mounted_below(self, directory: str) -> list[str]:
        """The mounted metadata files below ``directory`` (a path under the root)."""
        real = os.path.realpath(directory)
        prefix = real.rstrip("/") + "/"
        return sorted(path for path in self.files if path.startswith(prefix))


def metadata_mounts(root: str, *, mountinfo: str = MOUNTINFO) -> MetadataMounts | None:
    """The single-file metadata mounts below ``root``, or ``None`` when there are none.

    ``None`` means a plain tree (tests, development, a copy): files may appear
    at any time. Otherwise ``root`` is a container's mounted layout.
    """
    try:
        real = os.path.realpath(root)
    except (OSError, ValueError):
        return None
    prefix = real.rstrip("/") + "/"
    files = frozenset(
        point
        for point in mount_points(mountinfo)
        if point.startswith(prefix) and point.endswith(METADATA_FILE_SUFFIX)
    )
    return MetadataMounts(real, files) if files else None
