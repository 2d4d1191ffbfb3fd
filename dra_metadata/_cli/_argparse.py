"""Import :mod:`argparse` without :mod:`gettext`: a faster start for every command.

argparse imports gettext (and, through it, locale) only to translate its own
messages, and looks every message up in the file system while parsers are
built. Python ships no translations for them, so that work buys nothing here,
yet it is about a twentieth of the start-up time of ``dra-metadata env``. When
neither module is loaded yet, argparse is imported against a stand-in gettext
that returns each message unchanged; the stand-in is removed right after, so a
later ``import gettext`` anywhere gets the real module.

``dra_metadata._cli`` imports this module before anything else.
"""

import sys
import types

__all__: list[str] = []

if "argparse" not in sys.modules and "gettext" not in sys.modules:
    _stand_in = types.ModuleType("gettext", "argparse's view of gettext: no translations")
    setattr(_stand_in, "gettext", lambda message: message)  # noqa: B010 - a module, typed loosely
    setattr(_stand_in, "ngettext", lambda singular, plural, n: singular if n == 1 else plural)  # noqa: B010
    sys.modules["gettext"] = _stand_in
    try:
        import argparse  # noqa: F401 - loaded here, used through sys.modules
    except ImportError:  # an argparse that wants more of gettext: it loads the real one later
        pass
    finally:
        del sys.modules["gettext"]
