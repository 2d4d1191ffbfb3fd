"""Text every door prints to a terminal, escaped one way.

:func:`one_line` is the one escaping: the CLI's messages and listings, the
topology's tree, matrix and headings, and doctor's findings all go through it.
:func:`did_you_mean` is the one suggestion, for options, commands, attributes,
kinds and profiles alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = ["closest", "did_you_mean", "escape_char", "one_line"]


#: Characters :func:`one_line` (and the CLI's ``json_text``) write as short escapes.
_SHORT_ESCAPES: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_char(char: str) -> str:
    """One unprintable character as a short escape (``\\n``, ``\\xNN``, ``\\uNNNN``)."""
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogate)
        return f"\\x{code - 0xDC00:02x}"
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def one_line(text: str) -> str:
    r"""``text`` as one line that cannot drive a terminal: every unprintable character escaped.

    Newlines, carriage returns, tabs, ESC and the other control characters, line
    and paragraph separators, and bytes of a name that were not UTF-8 become
    ``\n``, ``\r``, ``\t``, ``\xNN`` or ``\uNNNN``; printable text (``é``
    included) stays as it is.

    >>> print(one_line("evil/v1\x1b[2J\nFAKE LINE"))
    evil/v1\x1b[2J\nFAKE LINE
    >>> one_line("caf\xe9 gpu")
    'café gpu'
    """
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else escape_char(char) for char in text)


def did_you_mean(wanted: str, known: Iterable[str]) -> str:
    """``"; did you mean 'X'?"`` for the known name closest to ``wanted``, or ``""``.

    >>> did_you_mean("--clam", ["--claim", "--request"]), did_you_mean("sho", ["show", "ls"])
    ("; did you mean '--claim'?", "; did you mean 'show'?")
    >>> did_you_mean("UUID", ["uuid", "index"]), did_you_mean("--zzz", ["--root"])
    ("; did you mean 'uuid'?", '')
    """
    found = closest(wanted, known)
    return "" if found is None else f"; did you mean {found!r}?"


def closest(
    wanted: str, known: Iterable[str], *, cutoff: float = 0.6, prefix: bool = True
) -> str | None:
    """The known name ``wanted`` most likely meant, or ``None``: the one rule of every
    suggestion (options, commands, attributes, kinds, profiles, lint's field names).

    The same name in another case first (``UUID`` -> ``uuid``), then (with
    ``prefix``) a name that starts with it, then the closest by spelling, ignoring
    case, at least ``cutoff`` alike (:func:`difflib.get_close_matches`).
    """
    import difflib  # only on the way to an error

    names = [name for name in known if name != wanted]
    folded = wanted.casefold()
    for name in names:
        if name.casefold() == folded:
            return name
    if prefix and len(wanted) > 2:
        for name in names:
            if name.startswith(wanted):
                return name
    by_fold = {name.casefold(): name for name in reversed(names)}
    found = difflib.get_close_matches(folded, list(by_fold), n=1, cutoff=cutoff)
    return by_fold[found[0]] if found else None
