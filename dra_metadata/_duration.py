"""The one duration parser: Go's ``time.ParseDuration`` form, plus plain seconds.

Every option that takes a duration (``--timeout``, ``--progress``) reads it
here. A duration is one or more decimal numbers, each with a unit, as Go
writes them (``1m30s``, ``1.5h``, ``500ms``, ``2h45m``; units ``ns``, ``us``
(or ``µs``), ``ms``, ``s``, ``m``, ``h``), or a plain number of seconds
(``1.5``, ``0``). Signs, exponents, ``inf``/``nan``, spaces and a number
without its unit inside a Go form (``1m30``) are refused.

>>> [parse_duration(t) for t in ("1m30s", "500ms", "1h", "1.5", "0", "2h45m", "1.5h")]
[90.0, 0.5, 3600.0, 1.5, 0.0, 9900.0, 5400.0]
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["DURATION_HELP", "parse_duration"]

#: How help texts describe the form.
DURATION_HELP: Final = "a duration as Go writes it (1m30s, 500ms, 2h, 1.5h) or plain seconds (1.5)"

_UNITS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,  # micro sign
    "\u03bcs": 1e-6,  # Greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_NUMBER: Final = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_PART: Final = re.compile(rf"({_NUMBER})(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_GO_FORM: Final = re.compile(rf"(?:{_PART.pattern})+")
_SECONDS: Final = re.compile(_NUMBER)


def parse_duration(text: str) -> float:
    """Seconds in ``text`` (see the module); a :class:`ValueError` naming the form otherwise."""
    if not isinstance(text, str):
        raise TypeError(f"a duration is a str, not {type(text).__name__}")
    if _SECONDS.fullmatch(text):
        return float(text)
    if _GO_FORM.fullmatch(text):
        return sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(text))
    raise ValueError(f"invalid duration {text!r}: expected {DURATION_HELP}")
