"""Go's stream scanner: reading raw JSON values as Go's ``encoding/json.Decoder`` does.

This is the first layer of the exact path (:mod:`._gojson` holds the layers that
turn what is read here into a typed object): ``encoding/json.Decoder`` built on
``jsontext``, as the corpus shows by its ``in string`` / ``invalid escape
sequence`` wording. Values may follow each other with or without whitespace;
``More()`` stops at EOF or a ``]``/``}``; strings may hold invalid UTF-8;
nesting is capped at depth 10000. Syntax errors are rendered in the v1 wording
Go maps them to, quoting only what Go's read buffer holds (:func:`_buffer_end`),
and are the only errors raised (:class:`GoDecodeError`, which the layers above
raise too).

A value is read into a :class:`Node`: its kind, its byte span and its content,
objects keeping every member in input order, duplicates included, for the
decoder to interpret as Go would. Nothing here recurses in proportion to the
input's nesting: values are parsed with an explicit stack.

The Go text helpers the error messages need (runes decoded and quoted as Go's
``utf8`` and ``strconv`` do) are here too.

Python's :mod:`json` is deliberately not used: its UTF-8, surrogate and number
rules differ from Go's.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from typing import Final

from ._field_error import go_escape_rune, go_is_print

__all__ = [
    "GoDecodeError",
    "Node",
    "go_utf8",
    "next_value_start",
    "read_value",
    "read_value_end",
    "read_whole_value",
]


class GoDecodeError(Exception):
    """A stream the Go reference rejects; ``str(err)`` is Go's error text."""


# ---------------------------------------------------------------------------
# Go text helpers
# ---------------------------------------------------------------------------

_GO_REPLACE: Final = "dra_metadata.goscan-replace"


def _go_replace(err: UnicodeError) -> tuple[str, int]:
    """Codec error handler: one U+FFFD per bad byte, as Go's ``utf8.DecodeRune`` walks."""
    if isinstance(err, UnicodeDecodeError):
        return "\ufffd", err.start + 1
    raise err


codecs.register_error(_GO_REPLACE, _go_replace)


def go_utf8(raw: bytes) -> str:
    """Decode bytes as Go converts them to runes: each invalid byte becomes U+FFFD."""
    return raw.decode("utf-8", _GO_REPLACE)


def _decode_rune(data: bytes, pos: int) -> tuple[int, int]:
    """Go's ``utf8.DecodeRune(data[pos:])``: (rune, size), with (-1, 1) for an invalid byte."""
    lead = data[pos]
    if lead < 0x80:
        return lead, 1
    if 0xC2 <= lead <= 0xDF:
        size = 2
    elif 0xE0 <= lead <= 0xEF:
        size = 3
    elif 0xF0 <= lead <= 0xF4:
        size = 4
    else:
        return -1, 1
    try:
        text = data[pos : pos + size].decode("utf-8")
    except UnicodeDecodeError:
        return -1, 1
    if len(text) != 1:  # truncated at the end of the data
        return -1, 1
    return ord(text), size


def _quote_rune(data: bytes, pos: int) -> str:
    """jsonwire's ``QuoteRune``: the rune at ``pos`` as Go's %q, or ``'\\xff'`` for a bad byte."""
    code, _size = _decode_rune(data, pos)
    if code < 0:
        return f"'\\x{data[pos]:x}'"
    return "'" + go_escape_rune(code, "'") + "'"


def _strconv_quote(raw: bytes) -> str:
    """Go's ``strconv.Quote`` of a byte string (invalid UTF-8 bytes as ``\\xNN``)."""
    out = ['"']
    pos = 0
    while pos < len(raw):
        code, size = _decode_rune(raw, pos)
        if code < 0:
            out.append(f"\\x{raw[pos]:02x}")
        else:
            out.append(go_escape_rune(code, '"'))
        pos += size
    out.append('"')
    return "".join(out)


# ---------------------------------------------------------------------------
# Reading raw values (jsontext with v1 options, v1 error wording)
# ---------------------------------------------------------------------------

_READ: Final = "read metadata object from stream: "
_EOF: Final = "unexpected EOF"
_MAX_DEPTH: Final = 10000
_WS: Final = frozenset(b" \t\r\n")
_ws_end = re.compile(rb"[ \t\r\n]*").match
_ascii_run = re.compile(rb'[^"\\\x00-\x1f\x80-\xff]*').match
_string_run = re.compile(rb'[^"\\\x00-\x1f]*').match
_digit_run = re.compile(rb"[0-9]*").match
_hex4 = re.compile(rb"[0-9a-fA-F]{4}").fullmatch
_SIMPLE_ESCAPES: Final = {
    0x22: '"',
    0x5C: "\\",
    0x2F: "/",
    0x62: "\b",
    0x66: "\f",
    0x6E: "\n",
    0x72: "\r",
    0x74: "\t",
}


def _end_of(match: re.Match[bytes] | None) -> int:
    assert match is not None  # these patterns all match the empty string
    return match.end()


def _syntax(message: str) -> GoDecodeError:
    return GoDecodeError(_READ + message)


#: jsontext's stream buffer: its first size, and the size below which it doubles
#: whenever the data kept is over twice its size (``maxBufferSize / growthSizeFactor``).
_BUFFER_FIRST: Final = 64
_BUFFER_EAGER: Final = 2048


def _buffer_end(pos: int, previous: Sequence[int], size: int) -> int:
    """Where the buffer of Go's stream decoder ends once it has looked at ``data[pos]``.

    ``json.NewDecoder`` reads its input in chunks into one buffer, 64 bytes first.
    Whenever it needs a byte past the end, it keeps the bytes from the end of the
    last value it read (``previous`` holds the ends of the values read before, in
    order; the first value keeps everything from 0), doubles the buffer when that
    leaves it at least three quarters full (or, up to 2,048 bytes, when the data
    read so far is over twice its size), and fills it from the input. Files and
    ``bytes.Reader`` fill it completely, so the ends follow from the positions alone.
    """
    base, capacity, end = 0, _BUFFER_FIRST, min(_BUFFER_FIRST, size)
    kept = 0
    ends = iter(previous)
    following = next(ends, None)
    while end <= pos and end < size:
        while following is not None and following <= end:
            kept, following = following, next(ends, None)
        if (capacity <= _BUFFER_EAGER and capacity < kept // 2) or (
            kept == base and end - base >= 3 * capacity // 4
        ):
            capacity *= 2
        base = kept
        end = min(base + capacity, size)
    return end


class _QuotingError(GoDecodeError):
    """A syntax error that quotes the input from ``pos`` on.

    Go quotes what its buffer holds: read from a stream, a character the buffer's
    end cuts is quoted as its first byte (``'\\xf0'``). :meth:`in_stream` words it so.
    """

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos

    def in_stream(self, data: bytes, previous: Sequence[int]) -> GoDecodeError:
        """The error as Go's stream decoder words it, the values before ending at ``previous``."""
        raise NotImplementedError  # pragma: no cover - each kind says


class _CharError(_QuotingError):
    """``invalid character 'x' <where>``: the rune at ``pos``."""

    def __init__(self, data: bytes, pos: int, where: str) -> None:
        super().__init__(_READ + f"invalid character {_quote_rune(data, pos)} {where}", pos)
        self.where = where

    def in_stream(self, data: bytes, previous: Sequence[int]) -> GoDecodeError:
        """The character as far as the buffer holds it."""
        end = _buffer_end(self.pos, previous, len(data))
        return _CharError(data[:end], self.pos, self.where)


class _UnicodeEscapeError(_QuotingError):
    """``invalid escape sequence`` for a ``\\u`` escape at ``pos``: its six bytes, or fewer."""

    def in_stream(self, data: bytes, previous: Sequence[int]) -> GoDecodeError:
        """The escape as far as the buffer holds it; a cut that may still be an escape reads on."""
        pos, size = self.pos, len(data)
        end = _buffer_end(pos + 1, previous, size)
        while end - pos < 6 and end < size and _is_utf16_prefix(data[pos:end]):
            end = _buffer_end(end, previous, size)
        return _unicode_escape_error(data[pos : min(end, pos + 6)], pos)


def _bad_char(data: bytes, pos: int, where: str) -> GoDecodeError:
    return _CharError(data, pos, where)


class Node:
    """One parsed JSON value: its kind, its byte span and its content.

    ``kind`` is ``{`` ``[`` ``"`` ``0`` (number) ``t`` ``f`` or ``n``; ``text`` is
    the decoded string or the number literal; objects keep every member in input
    order (duplicates included) and arrays their items.
    """

    __slots__ = ("end", "items", "kind", "members", "start", "text")

    kind: str
    start: int
    end: int
    text: str
    members: list[tuple[str, Node]]
    items: list[Node]

    def __init__(self, kind: str, start: int, end: int, text: str) -> None:
        self.kind = kind
        self.start = start
        self.end = end
        self.text = text
        self.members = _NO_MEMBERS
        self.items = _NO_ITEMS


_NO_MEMBERS: list[tuple[str, Node]] = []  # shared by scalars; never appended to
_NO_ITEMS: list[Node] = []


def _escape_text(raw: bytes) -> str:
    """jsonwire's invalid-escape message for the raw escape text."""
    text = go_utf8(raw)
    if len(text) == 1:
        what = _quote_rune(raw, 0)
    # jsonwire escapes a backquote, U+FFFD, a space or what Go cannot print (its Unicode
    # tables, not Python's); every other space of Go's unicode.IsSpace is unprintable.
    elif any(
        char == "`" or char == "\ufffd" or char == " " or not go_is_print(ord(char))
        for char in text
    ):
        what = _strconv_quote(raw)
    else:
        what = "`" + text + "`"
    return _READ + f"invalid escape sequence {what} in string"


def _escape_error(raw: bytes) -> GoDecodeError:
    """A two-byte escape Go does not know (``\\x``): the same whatever the buffer holds."""
    return GoDecodeError(_escape_text(raw))


def _unicode_escape_error(raw: bytes, pos: int) -> GoDecodeError:
    """A ``\\u`` escape at ``pos`` that is not one; ``raw`` is what Go quotes of it."""
    return _UnicodeEscapeError(_escape_text(raw), pos)


def _is_utf16_prefix(rest: bytes) -> bool:
    """Whether ``rest`` may be a ``\\uXXXX`` escape cut short by the end of the input."""
    for index, byte in enumerate(rest):
        if index == 0:
            ok = byte == 0x5C
        elif index == 1:
            ok = byte == 0x75
        else:
            ok = index < 6 and chr(byte) in "0123456789abcdefABCDEF"
        if not ok:
            return False
    return True


def _scan_string(data: bytes, pos: int, size: int) -> tuple[str, int]:
    """Validate and decode the string starting at ``data[pos] == '"'``."""
    end = _end_of(_ascii_run(data, pos + 1))
    if end < size and data[end] == 0x22:
        return data[pos + 1 : end].decode("ascii"), end + 1
    parts: list[str] = []
    cursor = pos + 1
    while True:
        end = _end_of(_string_run(data, cursor))
        if end > cursor:
            parts.append(go_utf8(data[cursor:end]))
        if end >= size:
            raise _syntax(_EOF)
        byte = data[end]
        if byte == 0x22:
            return "".join(parts), end + 1
        if byte != 0x5C:
            raise _bad_char(data, end, "in string")
        if end + 1 >= size:
            raise _syntax(_EOF)
        simple = _SIMPLE_ESCAPES.get(data[end + 1])
        if simple is not None:
            parts.append(simple)
            cursor = end + 2
            continue
        if data[end + 1] != 0x75:
            raise _escape_error(data[end : end + 2])
        if size - end < 6:
            if _is_utf16_prefix(data[end:]):
                raise _syntax(_EOF)
            raise _unicode_escape_error(data[end:], end)
        if _hex4(data, end + 2, end + 6) is None:
            raise _unicode_escape_error(data[end : end + 6], end)
        code = int(data[end + 2 : end + 6], 16)
        cursor = end + 6
        if 0xD800 <= code <= 0xDFFF:
            char = "\ufffd"  # a lone surrogate decodes to U+FFFD
            if (
                code < 0xDC00
                and size - cursor >= 6
                and data[cursor] == 0x5C
                and data[cursor + 1] == 0x75
                and _hex4(data, cursor + 2, cursor + 6) is not None
            ):
                low = int(data[cursor + 2 : cursor + 6], 16)
                if 0xDC00 <= low <= 0xDFFF:
                    char = chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
                    cursor += 6
            parts.append(char)
        else:
            parts.append(chr(code))


def _scan_number(data: bytes, pos: int, size: int) -> int:
    """Validate the number starting at ``pos``; return its end."""
    cursor = pos
    if data[cursor] == 0x2D:
        cursor += 1
        if cursor >= size:
            raise _syntax(_EOF)
    byte = data[cursor]
    if byte == 0x30:
        cursor += 1
    elif 0x31 <= byte <= 0x39:
        cursor = _end_of(_digit_run(data, cursor + 1))
    else:
        raise _bad_char(data, cursor, "in numeric literal")
    if cursor < size and data[cursor] == 0x2E:
        cursor = _required_digits(data, cursor + 1, size)
    if cursor < size and data[cursor] in (0x65, 0x45):
        cursor += 1
        if cursor < size and data[cursor] in (0x2B, 0x2D):
            cursor += 1
        cursor = _required_digits(data, cursor, size)
    return cursor


def _required_digits(data: bytes, cursor: int, size: int) -> int:
    """The end of a run of one or more digits at ``cursor`` (a fraction or an exponent)."""
    if cursor >= size:
        raise _syntax(_EOF)
    if not 0x30 <= data[cursor] <= 0x39:
        raise _bad_char(data, cursor, "in numeric literal")
    return _end_of(_digit_run(data, cursor + 1))


def _scan_literal(data: bytes, pos: int, size: int, literal: bytes) -> int:
    if data.startswith(literal, pos):
        return pos + len(literal)
    for index, expected in enumerate(literal):
        at = pos + index
        if at >= size:
            raise _syntax(_EOF)
        if data[at] != expected:
            name = literal.decode("ascii")
            raise _bad_char(data, at, f"in literal {name} (expecting '{chr(expected)}')")
    raise AssertionError("unreachable")  # pragma: no cover


def _scan_key(data: bytes, pos: int, size: int) -> tuple[str, int]:
    """An object member name, its colon and the whitespace up to the value."""
    if pos >= size:
        raise _syntax(_EOF)
    if data[pos] != 0x22:
        raise _bad_char(data, pos, "looking for beginning of object key string")
    key, pos = _scan_string(data, pos, size)
    if pos < size and data[pos] in _WS:
        pos = _end_of(_ws_end(data, pos))
    if pos >= size:
        raise _syntax(_EOF)
    if data[pos] != 0x3A:
        raise _bad_char(data, pos, "after object key")
    pos += 1
    if pos < size and data[pos] in _WS:
        pos = _end_of(_ws_end(data, pos))
    return key, pos


# Fast paths for the common shapes. Each only accepts what Go accepts with the same
# result; when one does not match, the exact scanners above take over at the same
# position and produce Go's result or error.
_fast_scalar = re.compile(
    rb'"([^"\\\x00-\x1f\x80-\xff]*)"'  # a plain ASCII string
    rb"|(?>-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][-+]?[0-9]++)?)(?![.eE])"  # a number
    rb"|true|false|null"
).match
_fast_member = re.compile(rb'[ \t\r\n]*+"([^"\\\x00-\x1f\x80-\xff]*)"[ \t\r\n]*+:[ \t\r\n]*+').match
_fast_next = re.compile(rb"[ \t\r\n]*+(?:(,)[ \t\r\n]*+|([\]}]))").match
_LITERAL_KINDS: Final = {0x74: "t", 0x66: "f", 0x6E: "n"}


def _member_name(data: bytes, pos: int, size: int) -> tuple[str, int]:
    """The next member name at ``pos`` (whitespace allowed) and the start of its value."""
    match = _fast_member(data, pos)
    if match is not None:
        return match.group(1).decode("ascii"), match.end()
    if pos < size and data[pos] in _WS:
        pos = _end_of(_ws_end(data, pos))
    return _scan_key(data, pos, size)


def _parse_value(data: bytes, pos: int) -> tuple[Node, int]:
    """Read one complete value at ``pos`` (no leading whitespace) as Go's Decoder does.

    Returns the parsed node and the index just past it. Raises the Go read error
    for the first problem met, scanning left to right like Go.
    """
    size = len(data)
    stack: list[Node] = []
    keys: list[str] = []
    while True:
        if pos >= size:
            raise _syntax(_EOF)
        byte = data[pos]
        node: Node
        if byte == 0x7B or byte == 0x5B:
            if len(stack) == _MAX_DEPTH:
                raise _syntax("exceeded max depth")
            is_object = byte == 0x7B
            node = Node("{" if is_object else "[", pos, -1, "")
            cursor = pos + 1
            if cursor < size and data[cursor] in _WS:
                cursor = _end_of(_ws_end(data, cursor))
            if cursor >= size:
                raise _syntax(_EOF)
            if is_object:
                node.members = []
                if data[cursor] != 0x7D:
                    stack.append(node)
                    key, pos = _member_name(data, cursor, size)
                    keys.append(key)
                    continue
            else:
                node.items = []
                if data[cursor] != 0x5D:
                    stack.append(node)
                    pos = cursor
                    continue
            end = cursor + 1
            node.end = end
        else:
            fast = _fast_scalar(data, pos)
            if fast is not None:
                end = fast.end()
                if byte == 0x22:
                    node = Node('"', pos, end, fast.group(1).decode("ascii"))
                elif byte in _LITERAL_KINDS:
                    node = Node(_LITERAL_KINDS[byte], pos, end, "")
                else:
                    node = Node("0", pos, end, data[pos:end].decode("ascii"))
            elif byte == 0x22:
                text, end = _scan_string(data, pos, size)
                node = Node('"', pos, end, text)
            elif byte == 0x2D or 0x30 <= byte <= 0x39:
                end = _scan_number(data, pos, size)
                node = Node("0", pos, end, data[pos:end].decode("ascii"))
            elif byte == 0x74:
                end = _scan_literal(data, pos, size, b"true")
                node = Node("t", pos, end, "")
            elif byte == 0x66:
                end = _scan_literal(data, pos, size, b"false")
                node = Node("f", pos, end, "")
            elif byte == 0x6E:
                end = _scan_literal(data, pos, size, b"null")
                node = Node("n", pos, end, "")
            else:
                raise _bad_char(data, pos, "looking for beginning of value")
        pos = end
        # Hand the finished value to its container; close containers that end here.
        while True:
            if not stack:
                return node, pos
            parent = stack[-1]
            in_object = parent.kind == "{"
            if in_object:
                parent.members.append((keys.pop(), node))
            else:
                parent.items.append(node)
            step = _fast_next(data, pos)
            if step is None:  # end of input or an unexpected byte after the value
                if pos < size and data[pos] in _WS:
                    pos = _end_of(_ws_end(data, pos))
                if pos >= size:
                    raise _syntax(_EOF)
                where = "after object key:value pair" if in_object else "after array element"
                raise _bad_char(data, pos, where)
            if step.group(1) is not None:  # a comma, and the whitespace after it
                pos = step.end()
                if in_object:
                    key, pos = _member_name(data, pos, size)
                    keys.append(key)
                break
            pos = step.end()
            if data[pos - 1] != (0x7D if in_object else 0x5D):
                where = "after object key:value pair" if in_object else "after array element"
                raise _bad_char(data, pos - 1, where)
            parent.end = pos
            stack.pop()
            node = parent


def next_value_start(data: bytes, pos: int) -> int | None:
    """Go ``json.Decoder.More()``: skip JSON whitespace (space, tab, CR, LF) from pos; return the
    index of the next byte, or None when at EOF or the next byte is ']' or '}'."""
    size = len(data)
    if pos < size and data[pos] in _WS:
        pos = _end_of(_ws_end(data, pos))
    if pos >= size or data[pos] in (0x5D, 0x7D):
        return None
    return pos


def read_value(data: bytes, start: int, stream: Sequence[int] | None = None) -> tuple[Node, int]:
    """Go's ``Decoder.Decode(&raw)`` at ``start``: skips whitespace, rejects a leading delimiter.

    ``stream``: the ends of the values read before this one from ``data`` (empty for
    the first), when ``data`` is a stream Go reads with ``json.NewDecoder``; a syntax
    error then quotes only what Go's buffer holds (:func:`_buffer_end`). Without it,
    the value is read as ``json.Unmarshal`` reads bytes, whole.
    """
    size = len(data)
    try:
        if start < size and data[start] in _WS:
            start = _end_of(_ws_end(data, start))
        if start >= size:
            raise _syntax("EOF")
        if data[start] in (0x2C, 0x3A):  # a top-level value needs no comma or colon before it
            raise _bad_char(data, start, "looking for beginning of value")
        return _parse_value(data, start)
    except _QuotingError as err:
        if stream is None:
            raise
        raise err.in_stream(data, stream) from None


def read_value_end(data: bytes, start: int) -> int:
    """Index just past the complete JSON value starting at `start` (Go's Decoder reading one
    raw value). Raises GoDecodeError('read metadata object from stream: <go scanner message>')
    on a syntax error."""
    return read_value(data, start)[1]


def read_whole_value(data: bytes) -> Node:
    """The one value ``data`` holds, read as ``json.Unmarshal`` reads bytes: whole.

    Whitespace may surround the value; anything else after it is Go's syntax error.
    """
    node, end = read_value(data, 0)
    if end < len(data) and data[end] in _WS:
        end = _end_of(_ws_end(data, end))
    if end < len(data):
        raise _bad_char(data, end, "after top-level value")
    return node
