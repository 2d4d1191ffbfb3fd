"""The ``dra-metadata`` console script: a start-up that an early Ctrl-C cannot break.

A SIGINT that lands while the package is still being imported would end the
process with a traceback from the middle of an import. Here the signal is held
back (blocked, not lost) until the imports are done; it is then delivered, and
the command ends as every interrupted command does: one line on stderr and exit
code 130. (``python -m dra_metadata`` imports the package before any of this
can run; it gets the guard against msgspec's half-initialised state that
``dra_metadata/__init__.py`` describes, but not this one.)
"""

import signal  # signal.py loads in about a millisecond: the one window left before SIGINT is held
import sys

__all__ = ["main"]

#: The exit code of an interrupted command, as shells report SIGINT.
_INTERRUPTED = 130


def main() -> int:
    """Import the command line with SIGINT held back, then run it."""
    held = {signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        try:
            from dra_metadata._cli import console_main as run
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)  # a held SIGINT is raised here
    except KeyboardInterrupt:
        if sys.stderr is not None:
            try:
                sys.stderr.write("dra-metadata: interrupted\n")
                sys.stderr.flush()
            except OSError:
                pass
        return _INTERRUPTED
    return run()
