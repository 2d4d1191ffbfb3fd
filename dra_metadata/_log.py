"""The package's one logger, ``dra_metadata``: loaded when there is something to say.

The library logs (a merge of files that disagree on their claim, a watch that
falls back to another backend, a handler that failed) but never configures
logging: the logger carries only a :class:`logging.NullHandler`, so nothing
reaches stderr unless the application sets logging up. :mod:`logging` is slow
to import, so it is imported on the first message.

>>> logger().name
'dra_metadata'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import logging

__all__ = ["NAME", "logger"]

#: The logger's name: the package's.
NAME: Final = "dra_metadata"


def logger() -> logging.Logger:
    """The ``dra_metadata`` logger, with a ``NullHandler`` so that it stays quiet by default."""
    # logging (a few ms): only when something is logged
    import logging

    log = logging.getLogger(NAME)
    if not any(isinstance(handler, logging.NullHandler) for handler in log.handlers):
        log.addHandler(logging.NullHandler())
    return log
