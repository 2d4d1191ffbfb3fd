"""The validation error record: :class:`FieldError`, its :class:`ErrorType`, Go's quoting.

Validation, lint and the exact decoder's messages use it; the commands that only
read metadata never load it.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = [
    "VALUE_OMITTED",
    "BadValue",
    "ErrorType",
    "FieldError",
    "go_escape_rune",
    "go_quote",
]


class ErrorType(enum.StrEnum):
    """The kind of a validation error; each value is the Go reference's text."""

    REQUIRED = "Required value"
    INVALID = "Invalid value"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"
    DUPLICATE = "Duplicate value"
    NOT_SUPPORTED = "Unsupported value"

    def __str__(self) -> str:
        return self.value


class _Omitted(str):
    """Go's private "value omitted" marker: equal to its text, told apart by identity."""

    __slots__ = ()


#: The bad value Go records for errors that do not show the value (``Too long``).
VALUE_OMITTED: Final = _Omitted("<value omitted>")


#: What a validation error's ``bad_value`` can hold.
BadValue = str | int | bool | None


_GO_SHORT_ESCAPES: Final = {
    0x07: "\\a",
    0x08: "\\b",
    0x0C: "\\f",
    0x0A: "\\n",
    0x0D: "\\r",
    0x09: "\\t",
    0x0B: "\\v",
}


# Go's IsPrint follows Go's Unicode tables (Go 1.26: Unicode 15.0.0), str.isprintable()
# Python's (3.11: 14.0.0, 3.12: 15.0.0, 3.13: 15.1.0). Where they differ, Go's wins: code
# points printable in 15.0.0 but unknown to 14.0.0, and ones 15.1.0 added. The goref
# suite compares every code point with Go's strconv.Quote (tests/goref/test_quote.py).
_GO_PRINT_RANGES: Final = (
    (0xCF3, 0xCF3), (0xECE, 0xECE), (0x10EFD, 0x10EFF), (0x1123F, 0x11241),
    (0x11B00, 0x11B09), (0x11F00, 0x11F10), (0x11F12, 0x11F3A), (0x11F3E, 0x11F59),
    (0x1342F, 0x1342F), (0x13440, 0x13455), (0x1B132, 0x1B132), (0x1B155, 0x1B155),
    (0x1D2C0, 0x1D2D3), (0x1DF25, 0x1DF2A), (0x1E030, 0x1E06D), (0x1E08F, 0x1E08F),
    (0x1E4D0, 0x1E4F9), (0x1F6DC, 0x1F6DC), (0x1F774, 0x1F776), (0x1F77B, 0x1F77F),
    (0x1F7D9, 0x1F7D9), (0x1FA75, 0x1FA77), (0x1FA87, 0x1FA88), (0x1FAAD, 0x1FAAF),
    (0x1FABB, 0x1FABD), (0x1FABF, 0x1FABF), (0x1FACE, 0x1FACF), (0x1FADA, 0x1FADB),
    (0x1FAE8, 0x1FAE8), (0x1FAF7, 0x1FAF8), (0x2B739, 0x2B739), (0x31350, 0x323AF),
)  # fmt: skip
_GO_NOT_PRINT_RANGES: Final = ((0x2FFC, 0x2FFF), (0x31EF, 0x31EF), (0x2EBF0, 0x2EE5D))


def _in_ranges(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(low <= code <= high for low, high in ranges)


def go_is_print(code: int) -> bool:
    """Go's ``strconv.IsPrint`` (categories L, M, N, P, S and ' ', in Go's Unicode version)."""
    if code < 0x80:
        return 0x20 <= code < 0x7F
    if chr(code).isprintable():
        return code < 0x2FFC or not _in_ranges(code, _GO_NOT_PRINT_RANGES)
    return code >= 0xCF3 and _in_ranges(code, _GO_PRINT_RANGES)


def go_escape_rune(code: int, quote: str) -> str:
    r"""Go's ``strconv`` escaping of the rune ``code`` inside a ``quote``-delimited literal.

    A lone surrogate cannot be in a Go string: Go would hold U+FFFD there.

    >>> print(go_escape_rune(0x0A, '"'), go_escape_rune(0x27, "'"), go_escape_rune(0x85, '"'))
    \n \' \u0085
    """
    char = chr(code)
    if char == quote or char == "\\":
        return "\\" + char
    if go_is_print(code):
        return char
    short = _GO_SHORT_ESCAPES.get(code)
    if short is not None:
        return short
    if code < 0x80:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def go_quote(text: str) -> str:
    r"""Quote ``text`` as Go's ``%q`` verb does (``strconv.Quote``).

    >>> print(go_quote('tab\there "quoted" é'))
    "tab\there \"quoted\" é"
    """
    return '"' + "".join([go_escape_rune(ord(char), '"') for char in text]) + '"'


class FieldError:
    """One validation error, as the Go reference's ``field.Error`` reports it.

    ``field`` is Go's path (``requests[0].devices[1].attributes[model]``),
    ``type`` an :class:`ErrorType`, ``bad_value`` the offending value (Go's
    ``"<value omitted>"`` for ``Too long``), ``detail`` the explanation, and
    ``origin`` the rule that fired (``format=k8s-short-name``, ``maxItems`` ...)
    where Go records one. ``str()`` is Go's rendering. Immutable, compared and
    hashed by its five fields.

    >>> str(FieldError("podClaimName", ErrorType.INVALID, "BAD", "must be lower case"))
    'podClaimName: Invalid value: "BAD": must be lower case'
    """

    # A plain class, not a dataclass: ``dataclasses`` imports ``inspect`` (and with it
    # ``ast``, ``dis`` and ``tokenize``), which every command would load for this class.
    __slots__ = ("bad_value", "detail", "field", "origin", "type")
    __match_args__ = ("field", "type", "bad_value", "detail", "origin")

    #: Go's path of the offending field.
    field: str
    #: What kind of error (Go's ``field.ErrorType``).
    type: ErrorType
    #: The offending value, or :data:`VALUE_OMITTED`.
    bad_value: BadValue
    #: The explanation (may be empty).
    detail: str
    #: The rule that fired, where Go records one (may be empty).
    origin: str

    def __init__(
        self,
        field: str,
        type: ErrorType,  # noqa: A002 - Go's name, and the field's
        bad_value: BadValue = None,
        detail: str = "",
        origin: str = "",
    ) -> None:
        for name, value in zip(
            self.__match_args__, (field, type, bad_value, detail, origin), strict=True
        ):
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple[object, ...]:
        return (self.field, self.type, self.bad_value, self.detail, self.origin)

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}("
            + ", ".join(
                f"{name}={value!r}"
                for name, value in zip(self.__match_args__, self._fields(), strict=True)
            )
            + ")"
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, FieldError)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (type(self), self._fields())  # pickle and copy go through __init__

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def body(self) -> str:
        """The message without the field path (Go's ``ErrorBody``)."""
        text = self.type.value
        if (
            self.type not in (ErrorType.REQUIRED, ErrorType.TOO_LONG)
            and self.bad_value is not VALUE_OMITTED
        ):
            value = self.bad_value
            if value is None:
                text += ': "null"'  # Go renders a nil value as the quoted string "null"
            elif isinstance(value, bool):
                text += ": true" if value else ": false"
            elif isinstance(value, int):
                text += f": {value}"
            else:
                text += ": " + go_quote(value)
        if self.detail:
            text += ": " + self.detail
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"
