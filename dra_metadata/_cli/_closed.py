"""``sys.stdout`` for a process that started with stdout closed (``>&-``).

Loaded only then: most commands never need it.
"""

from __future__ import annotations

import errno
import io

__all__ = ["ClosedStdout"]


class _ClosedBuffer:
    """The binary side of :class:`ClosedStdout`."""

    def write(self, data: bytes) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        """Nothing is ever buffered."""


class ClosedStdout(io.TextIOBase):
    """What ``sys.stdout`` is when the process started with it closed (``>&-``).

    Writing fails as writing to a closed descriptor does, so output errors are
    reported (exit 74) and nothing is sent to stderr in its place.
    """

    buffer = _ClosedBuffer()

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def fileno(self) -> int:
        return 1  # /dev/null, put there by reserve_standard_streams()
