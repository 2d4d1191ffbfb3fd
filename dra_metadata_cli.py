"""The ``dra-metadata`` console script: a start-up that an early Ctrl-C cannot break.

A SIGINT that lands while the package is still being imported would end the
process with a traceback from the middle of an import. Here the signal is held
back (blocked, not lost) until the imports are done; it is then delivered, and
the command ends as every interrupted command does: one line on stderr and exit
code 130. (``python -m dra_metadata`` imports the package before any of this
can run; it gets the guard against msgspec's half-initialised state that
``dra_metadata/__init__.py`` describes, but not this one.)
"""

import sys

TYPE_CHECKING = False  # typing's flag, without importing typing first (mypy reads it as true)
if TYPE_CHECKING:
    import signal
else:
    try:
        # signal.py's C core: the same functions and constants, without the enums
        # signal.py builds when it loads (about 3 M instructions, a millisecond: the
        # one window left before SIGINT is held).
        import _signal as signal
    except ImportError:  # an interpreter without it
        import signal

__all__ = ["main"]

#: The exit code of an interrupted command, as shells report SIGINT.
_INTERRUPTED = 130


def _import_msgspec() -> None:
    """Import msgspec as it loads where ``typing_extensions`` is not installed.

    msgspec's C core imports ``msgspec._utils`` when it loads, which imports
    ``typing_extensions`` if it can (pydantic, a dependency, installs it) for
    ``get_type_hints``, ``Required`` and ``NotRequired``, and falls back to
    ``typing``'s (Python 3.11 has all three) when the import fails. Importing
    ``typing_extensions`` imports ``inspect``, and with it ``ast``, ``dis`` and
    ``tokenize``: a sixth of a one-shot command's start-up, for nothing a
    command uses (our types are plain ``typing``). So while msgspec loads here,
    and only then, the import of ``typing_extensions`` fails the standard way
    (a ``None`` entry in ``sys.modules``); the entry is removed at once, and
    anything later (pydantic, for ``validate``) imports ``typing_extensions``
    as usual. Nothing of msgspec is changed: it runs its own code for an
    interpreter without ``typing_extensions``, which it supports.
    """
    import datetime  # noqa: F401 - before msgspec, as dra_metadata/__init__.py explains

    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return  # already loaded: nothing left to save
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]
    try:
        import msgspec  # noqa: F401 - loaded now, with typing's names
    finally:
        if sys.modules.get("typing_extensions", "") is None:
            del sys.modules["typing_extensions"]


def main() -> int:
    """Import the command line with SIGINT held back, then run it.

    Every ``KeyboardInterrupt`` from here on is answered the same way, wherever
    it is raised: while SIGINT is being blocked (Python raises one that arrived
    just before, as the call returns), where the held one is released, in the
    moments before the command's own handler is in place, or after it. Nothing
    before the block imports a module that is not loaded yet (importing runs
    importlib's Python code, where a SIGINT would end the process with a traceback
    from this file); ``sys`` and ``_signal`` are loaded when the interpreter starts.

    The garbage collector is off while the modules load: they make no garbage,
    and its passes over every new object are about 1 % of a one-shot command.
    It is on again before the command runs (:func:`dra_metadata._cli.console_main`
    turns it off for a one-shot command).
    """
    held = {signal.SIGINT}
    collecting = False
    try:
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, held)  # one that came just now is raised here
            import gc

            collecting = gc.isenabled()
            gc.disable()
            _import_msgspec()
            from dra_metadata._cli import console_main as run
        finally:
            if collecting:
                gc.enable()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)  # a held SIGINT is raised here
        return run()
    except KeyboardInterrupt:
        if sys.stderr is not None:
            try:
                sys.stderr.write("dra-metadata: interrupted\n")
                sys.stderr.flush()
            except OSError:
                pass
        return _INTERRUPTED
