"""The exact path: Go's stream decoding of a metadata file, replayed in pure Python.

This is the library's *slow path*. It answers exactly what the Go reference
(``devicemetadata.DecodeMetadataFromStream`` of Kubernetes v1.37) answers for
any byte string, including hostile ones, and it only ever raises
:class:`GoDecodeError`. The msgspec fast path hands a stream over whenever it is
not sure it would agree.

The Go reference is four libraries stacked on each other; each layer below is
modelled on its own, in the order Go runs them:

1. **Reading raw values** (``encoding/json.Decoder`` built on ``jsontext``, as
   the corpus shows by its ``in string`` / ``invalid escape sequence`` wording).
   Values may follow each other with or without whitespace; ``More()`` stops at
   EOF or a ``]``/``}``; strings may hold invalid UTF-8; nesting is capped at
   depth 10000. Syntax errors are rendered in the v1 wording Go maps them to,
   quoting only what Go's read buffer holds (:func:`_buffer_end`).
2. **Identifying apiVersion/kind** (apimachinery's ``SimpleMetaFactory``): the
   raw value is unmarshalled into a two-string struct with case-insensitive
   (Unicode simple-fold) key matching, then ``ParseGroupVersion``.
3. **Scheme lookup**: which group/version/kind makes a typed object, which is an
   unknown version to skip, which is fatal.
4. **Body decoding** (``sigs.k8s.io/json``, a fork of Go's v1
   ``encoding/json``): case-sensitive keys, unknown keys ignored, values decoded
   *into* what an earlier duplicate key left (structs and maps merge, slices are
   decoded element-wise into their old backing array), first type error kept
   while decoding goes on, ``metav1.Time`` parse errors abort at once.

The decoded object is returned as the dict Go's ``encoding/json`` would write
for it (omitempty rules, Go field order, sorted map keys), without ``kind`` and
``apiVersion``.

Nothing here recurses in proportion to the input's nesting: values are parsed
with an explicit stack, and the typed decoder only descends as deep as the Go
types go (a handful of levels); everything else is skipped as a parsed node.

Python's :mod:`json` is deliberately not used: its UTF-8, surrogate and number
rules differ from Go's.
"""

from __future__ import annotations

import codecs
import re
import typing
from collections.abc import Sequence
from typing import Final, NoReturn, TypeAlias, cast

import msgspec
import msgspec.structs

from ._field_error import go_escape_rune, go_is_print, go_quote
from ._model import DeviceMetadata
from ._versions import API_VERSIONS, GROUP, version_of

__all__ = [
    "KNOWN_VERSIONS",
    "GoDecodeError",
    "Node",
    "RawJSON",
    "decode_entry",
    "decode_node",
    "decode_stream",
    "next_value_start",
    "read_value",
    "read_value_end",
]


class GoDecodeError(Exception):
    """A stream the Go reference rejects; ``str(err)`` is Go's error text."""


class RawJSON(str):
    """A raw JSON value (``managedFields[].fieldsV1``), compacted as Go re-encodes it."""

    __slots__ = ()


_GROUP: Final = GROUP
#: The apiVersions decoded into a DeviceMetadata (the rest are skipped or fatal).
KNOWN_VERSIONS: Final = API_VERSIONS

# ---------------------------------------------------------------------------
# Go text helpers
# ---------------------------------------------------------------------------

_GO_REPLACE: Final = "dra_metadata.gojson-replace"


def _go_replace(err: UnicodeError) -> tuple[str, int]:
    """Codec error handler: one U+FFFD per bad byte, as Go's ``utf8.DecodeRune`` walks."""
    if isinstance(err, UnicodeDecodeError):
        return "\ufffd", err.start + 1
    raise err


codecs.register_error(_GO_REPLACE, _go_replace)


def _go_utf8(raw: bytes) -> str:
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
# Layer 1: reading raw values (jsontext with v1 options, v1 error wording)
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
    text = _go_utf8(raw)
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
            parts.append(_go_utf8(data[cursor:end]))
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


# ---------------------------------------------------------------------------
# Layer 2: apiVersion/kind (SimpleMetaFactory.Interpret) and ParseGroupVersion
# ---------------------------------------------------------------------------

_FIND_KIND_TYPE: Final = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)
_WORDS: Final = {
    "{": "object",
    "[": "array",
    '"': "string",
    "0": "number",
    "t": "bool",
    "f": "bool",
    "n": "null",
}
# Go's strings.EqualFold also matches the Kelvin sign to k and the long s to s.
_SIMPLE_FOLDS: Final = {0x212A: "k", 0x17F: "s"}


def _type_meta_field(key: str) -> str | None:
    """Which of apiVersion/kind a key matches under Go's case-insensitive struct matching."""
    if len(key) != 4 and len(key) != 10:
        return None
    folded = key.translate(_SIMPLE_FOLDS)
    if not folded.isascii():
        return None
    folded = folded.lower()
    if folded == "kind":
        return "kind"
    if folded == "apiversion":
        return "apiVersion"
    return None


def _interpret(root: Node) -> tuple[str, str]:
    """The apiVersion and kind strings Go finds in an object; raises on a non-string value."""
    found = {"apiVersion": "", "kind": ""}
    first_error: str | None = None
    for key, value in root.members:
        field = _type_meta_field(key)
        if field is None:
            continue
        if value.kind == '"':
            found[field] = value.text
        elif value.kind != "n" and first_error is None:
            first_error = (
                f"json: cannot unmarshal {_WORDS[value.kind]} "
                f"into Go struct field .{key} of type string"
            )
    if first_error is not None:
        raise GoDecodeError(
            "decode metadata object: couldn't get version/kind; json parse error: " + first_error
        )
    return found["apiVersion"], found["kind"]


def _parse_group_version(api_version: str) -> tuple[str, str]:
    if api_version in ("", "/"):
        return "", ""
    slashes = api_version.count("/")
    if slashes == 0:
        return "", api_version
    if slashes == 1:
        group, _, version = api_version.partition("/")
        return group, version
    raise GoDecodeError(f"decode metadata object: unexpected GroupVersion string: {api_version}")


# ---------------------------------------------------------------------------
# Layer 3: the metadata scheme
# ---------------------------------------------------------------------------

_SCHEME_NAME: Final = "pkg/runtime/scheme.go:111"
_INTERNAL: Final = "__internal"
_VERSIONED_META_KINDS: Final = frozenset(
    {
        "WatchEvent",
        "ListOptions",
        "GetOptions",
        "DeleteOptions",
        "CreateOptions",
        "UpdateOptions",
        "PatchOptions",
    }
)
# Registered with AddUnversionedTypes: the scheme creates them by kind alone.
_UNVERSIONED_KINDS: Final = frozenset(
    {"Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"}
)
# Scheme.IsVersionRegistered: __internal is never an "observed" version.
_OBSERVED_VERSIONS: Final = frozenset(
    {(_GROUP, version_of(api_version)) for api_version in API_VERSIONS} | {("", "v1")}
)


def _conversion_error(group: str, version: str, kind: str, go_type: str) -> GoDecodeError:
    # The decoded object is a meta type; nothing converts it into metadata.DeviceMetadata.
    # (Type errors inside such a body are not reproduced: conversion fails regardless.)
    return GoDecodeError(
        f"convert {group}/{version}, Kind={kind}: converting ({go_type}) "
        "to (metadata.DeviceMetadata): unknown conversion"
    )


# ---------------------------------------------------------------------------
# Layer 4: body decoding (sigs.k8s.io/json = Go v1 encoding/json, case-sensitive)
# ---------------------------------------------------------------------------


class _Type:
    """A Go type as the decoder needs it: its shape, its ``reflect`` name, its fields.

    A struct also knows which of its fields Go writes even when empty (those
    without ``omitempty``) and which it never writes back (the ``TypeMeta`` fields).
    """

    __slots__ = ("always", "elem", "fields", "go", "hidden", "name", "tag")

    def __init__(
        self,
        tag: str,
        go: str,
        elem: _Type | None = None,
        name: str = "",
        fields: dict[str, _Type] | None = None,
        always: frozenset[str] = frozenset(),
        hidden: frozenset[str] = frozenset(),
    ) -> None:
        self.tag = tag  # str int bool ptr slice map struct time raw
        self.go = go  # reflect.Type.String(), as error messages print it
        self.elem = elem
        self.name = name  # reflect.Type.Name() of a struct
        self.fields = fields or {}
        self.always = always
        self.hidden = hidden


def _ptr(elem: _Type) -> _Type:
    return _Type("ptr", elem.go, elem)


def _slice_of(elem: _Type) -> _Type:
    return _Type("slice", "[]" + elem.go, elem)


_STRING = _Type("str", "string")
_INT64 = _Type("int", "int64")
_BOOL = _Type("bool", "bool")
_TIME = _Type("time", "v1.Time")
_UID = _Type("str", "types.UID")

# The Go types are derived from the model classes (field names, order, pointers,
# omitempty); only what Python's types cannot say is written here.
#: Fields whose Go type is not the one their Python type maps to, by (class, wire name).
_GO_FIELD_TYPES: Final[dict[tuple[str, str], _Type]] = {
    ("ObjectMeta", "uid"): _UID,
    ("OwnerReference", "uid"): _UID,
    ("ObjectMeta", "creationTimestamp"): _TIME,
    ("ObjectMeta", "deletionTimestamp"): _ptr(_TIME),
    ("ManagedFieldsEntry", "operation"): _Type("str", "v1.ManagedFieldsOperationType"),
    ("ManagedFieldsEntry", "time"): _ptr(_TIME),
    ("ManagedFieldsEntry", "fieldsV1"): _ptr(_Type("raw", "v1.FieldsV1")),
}
#: Map fields whose Go key type is a named string type.
_GO_MAP_KEYS: Final = {("Device", "attributes"): "v1.QualifiedName"}
#: Classes that Go defines once for every version (the rest are per-version types).
_UNVERSIONED: Final = frozenset(
    {"ObjectMeta", "OwnerReference", "ManagedFieldsEntry", "DeviceAttribute", "NetworkDeviceData"}
)


def _go_type(annotation: object, owner: str, wire: str, package: str) -> _Type:
    """The Go type of a model field's Python ``annotation``."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    args = typing.get_args(annotation)
    if type(None) in args:  # X | None: a Go pointer
        (inner,) = (arg for arg in args if arg is not type(None))
        return _ptr(_go_type(inner, owner, wire, package))
    origin = typing.get_origin(annotation)
    if origin is tuple:
        return _slice_of(_go_type(args[0], owner, wire, package))
    if origin is dict:
        elem = _go_type(args[1], owner, wire, package)
        key = _GO_MAP_KEYS.get((owner, wire), "string")
        return _Type("map", f"map[{key}]{elem.go}", elem)
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return _struct_type(annotation, package)
    scalars: dict[object, _Type] = {str: _STRING, int: _INT64, bool: _BOOL}
    return scalars[annotation]


#: metav1.TypeMeta's fields, promoted into DeviceMetadata; Go never writes them back.
_TYPE_META: Final = frozenset({"kind", "apiVersion"})


def _struct_type(cls: type[msgspec.Struct], package: str) -> _Type:
    """The Go struct a model class mirrors, in the Go package ``package`` (its version)."""
    owner = cls.__name__
    fields: dict[str, _Type] = {}
    tag_field = cls.__struct_config__.tag_field
    if tag_field:  # kind: the tag, not a field of the class
        fields[tag_field] = _STRING
    always: set[str] = set()
    for field in msgspec.structs.fields(cls):
        wire = field.encode_name
        go = _GO_FIELD_TYPES.get((owner, wire))
        fields[wire] = go if go is not None else _go_type(field.type, owner, wire, package)
        if field.required:  # no default: not omitempty
            always.add(wire)
    return _Type(
        "struct",
        f"{'v1' if owner in _UNVERSIONED else package}.{owner}",
        name=owner,
        fields=fields,
        always=frozenset(always),
        hidden=_TYPE_META if tag_field else frozenset(),
    )


#: The Go type of each known version's DeviceMetadata, by version (``v1beta1``).
_DEVICE_METADATA: Final = {
    version_of(api_version): _struct_type(DeviceMetadata, version_of(api_version))
    for api_version in API_VERSIONS
}


class _Slice:
    """A Go slice: its backing array (``len(buf)`` is the capacity) and its length.

    Elements past the length survive in the backing array, and a later decode of
    the same field reaches them again; ``None`` is an element's zero value.
    """

    __slots__ = ("buf", "length")

    def __init__(self) -> None:
        self.buf: list[object] = []
        self.length = 0

    def visible(self) -> list[object]:
        return self.buf[: self.length]


class _Fatal(Exception):
    """An error that stops Go's decoder at once (one returned by an UnmarshalJSON method)."""


_int64_literal = re.compile(r"-?(?:0|[1-9][0-9]{0,18})").fullmatch
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


class _BodyDecoder:
    """Decodes a parsed object into a Go-typed value the way sigs.k8s.io/json does."""

    __slots__ = ("data", "saved")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.saved: str | None = None  # the first UnmarshalTypeError, reported at the end

    def mismatch(self, value: str, target: _Type, struct: str, path: str) -> None:
        if self.saved is not None:
            return
        if struct or path:
            self.saved = (
                f"json: cannot unmarshal {value} into Go struct field "
                f"{struct}.{path} of type {target.go}"
            )
        else:
            self.saved = f"json: cannot unmarshal {value} into Go value of type {target.go}"

    def value(self, target: _Type, node: Node, current: object, struct: str, path: str) -> object:
        """Decode ``node`` into a ``target`` value that holds ``current``; return the result."""
        tag = target.tag
        kind = node.kind
        if tag == "str":
            if kind == '"':
                return node.text
            if kind != "n":
                self.mismatch(_WORDS[kind], target, struct, path)
            return current
        if tag == "int":
            if kind == "0":
                if _int64_literal(node.text) is not None:
                    number = int(node.text)
                    if _INT64_MIN <= number <= _INT64_MAX:
                        return number
                self.mismatch("number " + node.text, target, struct, path)
            elif kind != "n":
                self.mismatch(_WORDS[kind], target, struct, path)
            return current
        if tag == "bool":
            if kind == "t" or kind == "f":
                return kind == "t"
            if kind != "n":
                self.mismatch(_WORDS[kind], target, struct, path)
            return current
        if tag == "ptr":
            assert target.elem is not None
            if kind == "n":
                return None
            return self.value(target.elem, node, current, struct, path)
        if tag == "struct":
            if kind == "{":
                fields = target.fields
                record = current if isinstance(current, dict) else {}
                for key, member in node.members:
                    field_type = fields.get(key)
                    if field_type is not None:
                        record[key] = self.value(
                            field_type,
                            member,
                            record.get(key),
                            target.name,
                            f"{path}.{key}" if path else key,
                        )
                return record
            if kind != "n":
                self.mismatch(_WORDS[kind], target, struct, path)
            return current
        if tag == "slice":
            assert target.elem is not None
            if kind == "[":
                return self.slice(target.elem, node, current, struct, path)
            if kind == "n":
                return None
            self.mismatch(_WORDS[kind], target, struct, path)
            return current
        if tag == "map":
            assert target.elem is not None
            if kind == "{":
                mapping = current if isinstance(current, dict) else {}
                for key, member in node.members:
                    # Each map value is decoded from a fresh zero value.
                    mapping[key] = self.value(target.elem, member, None, struct, path)
                return mapping
            if kind == "n":
                return None
            self.mismatch(_WORDS[kind], target, struct, path)
            return current
        if tag == "time":
            return _unmarshal_time(node)
        if tag == "raw":
            # FieldsV1.UnmarshalJSON keeps the raw bytes (null never reaches it: *FieldsV1).
            return RawJSON(_compact(self.data[node.start : node.end]))
        raise AssertionError(tag)  # pragma: no cover

    def slice(self, elem: _Type, node: Node, current: object, struct: str, path: str) -> _Slice:
        items = node.items
        target = _Slice()
        if not items:
            return target  # an empty array makes a new empty slice
        if isinstance(current, _Slice):
            target = current
        buf = target.buf
        for index, item in enumerate(items):
            if index >= len(buf):  # decode.go: grow by half, at least to 4
                capacity = len(buf)
                buf.extend([None] * (max(capacity + capacity // 2, 4) - capacity))
            if index >= target.length:
                target.length = index + 1
            buf[index] = self.value(elem, item, buf[index], struct, path)
        if len(items) < target.length:
            target.length = len(items)
        return target


# --- metav1.Time -----------------------------------------------------------

_LAYOUT: Final = "2006-01-02T15:04:05Z07:00"
_ZERO_TIME: Final = (-62135596800, 0)  # 0001-01-01T00:00:00Z, Go's zero time.Time
_GoTime: TypeAlias = tuple[int, int]  # (Unix seconds, nanoseconds)


def _unmarshal_time(node: Node) -> _GoTime | None:
    """``metav1.Time.UnmarshalJSON``: ``null`` is the zero time, else a string for time.Parse."""
    if node.kind == "n":
        return None
    if node.kind != '"':
        raise _Fatal(f"json: cannot unmarshal {_WORDS[node.kind]} into Go value of type string")
    return _parse_time(node.text)


def _time_quote(raw: bytes) -> str:
    """The ``time`` package's own quoting of values in ParseError messages."""
    out = ['"']
    for byte in raw:
        if byte >= 0x80 or byte < 0x20:
            out.append(f"\\x{byte:02x}")
        elif byte in (0x22, 0x5C):
            out.append("\\" + chr(byte))
        else:
            out.append(chr(byte))
    out.append('"')
    return "".join(out)


def _days_in(month: int, year: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def _digit(raw: bytes, index: int) -> bool:
    return index < len(raw) and 0x30 <= raw[index] <= 0x39


def _getnum(raw: bytes, fixed: bool) -> tuple[int, bytes] | None:
    """time's ``getnum``: one or two digits (exactly two when ``fixed``)."""
    if not _digit(raw, 0):
        return None
    if not _digit(raw, 1):
        if fixed:
            return None
        return raw[0] - 0x30, raw[1:]
    return (raw[0] - 0x30) * 10 + raw[1] - 0x30, raw[2:]


# The fields after the year, in layout order: the separator before each, Go's layout
# element (for "cannot parse" errors), whether it takes exactly two digits, and the
# range checked right away (the day is checked against its month at the end).
_TIME_FIELDS: Final[tuple[tuple[bytes, str, bool, tuple[int, int] | None, str], ...]] = (
    (b"-", "01", True, (1, 12), "month"),
    (b"-", "02", True, None, "day"),
    (b"T", "15", False, (0, 23), "hour"),
    (b":", "04", True, (0, 59), "minute"),
    (b":", "05", True, (0, 59), "second"),
)


def _parse_time(text: str) -> _GoTime:
    """Go's ``time.Parse(time.RFC3339, text)``, returning the instant or raising its error.

    The RFC 3339 fast path only accepts a subset of what the general layout
    parser accepts, with the same result, so only the general parser is modelled.
    """
    whole = text.encode("utf-8")
    quoted = _time_quote(whole)

    def cannot(value: bytes, element: str) -> NoReturn:
        raise _Fatal(
            f'parsing time {quoted} as "{_LAYOUT}": '
            f'cannot parse {_time_quote(value)} as "{element}"'
        )

    def out_of_range(what: str) -> NoReturn:
        raise _Fatal(f"parsing time {quoted}: {what} out of range")

    def skip(value: bytes, prefix: bytes) -> bytes:
        if not value.startswith(prefix):
            cannot(value, prefix.decode("ascii"))
        return value[len(prefix) :]

    value = whole
    if len(value) < 4 or not _digit(value, 0) or not value[:4].isdigit():
        cannot(value, "2006")
    year = int(value[:4])
    value = value[4:]
    numbers: list[int] = []
    for separator, element, fixed, bounds, name in _TIME_FIELDS:
        value = skip(value, separator)
        parsed = _getnum(value, fixed)
        if parsed is None:
            cannot(value, element)
        number, value = parsed
        if bounds is not None and not bounds[0] <= number <= bounds[1]:
            out_of_range(name)
        numbers.append(number)
    month, day, hour, minute, second = numbers
    nanos = 0
    if len(value) >= 2 and value[0] in (0x2E, 0x2C) and _digit(value, 1):
        digits = 2
        while _digit(value, digits):
            digits += 1
        fraction = value[1 : min(digits, 10)]
        nanos = int(fraction) * 10 ** (9 - len(fraction))
        value = value[digits:]
    offset = 0
    if value[:1] == b"Z":
        value = value[1:]
    else:
        hold = value
        if len(value) < 6 or value[3] != 0x3A:
            cannot(hold, "Z07:00")
        sign, hours, minutes, value = value[0], value[1:3], value[4:6], value[6:]
        parsed_hours = _getnum(hours, True)
        parsed_minutes = _getnum(minutes, True) if parsed_hours is not None else None
        offset_hours = parsed_hours[0] if parsed_hours is not None else 0
        offset_minutes = parsed_minutes[0] if parsed_minutes is not None else 0
        if offset_minutes > 60:
            out_of_range("time zone offset minute")
        if offset_hours > 24:
            out_of_range("time zone offset hour")
        if parsed_minutes is None or sign not in (0x2B, 0x2D):
            cannot(hold, "Z07:00")
        offset = (offset_hours * 60 + offset_minutes) * 60
        if sign == 0x2D:
            offset = -offset
    if value:
        raise _Fatal(f"parsing time {quoted}: extra text: {_time_quote(value)}")
    if not 1 <= day <= _days_in(month, year):
        out_of_range("day")
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return seconds - offset, nanos


def _format_time(instant: _GoTime) -> str:
    """``metav1.Time.MarshalJSON``: RFC 3339 in UTC, whole seconds."""
    days, seconds = divmod(instant[0], 86400)
    year, month, day = _civil_from_days(days)
    year_text = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    return (
        f"{year_text}-{month:02d}-{day:02d}T"
        f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"
    )


# --- FieldsV1 --------------------------------------------------------------

_compact_token = re.compile(rb'"(?:[^"\\]|\\.)*"|[ \t\r\n]+', re.DOTALL)
_html_chars = re.compile(rb"[<>&]|\xe2\x80[\xa8\xa9]")
_HTML_ESCAPES: Final = {
    b"<": b"\\u003c",
    b">": b"\\u003e",
    b"&": b"\\u0026",
    b"\xe2\x80\xa8": b"\\u2028",
    b"\xe2\x80\xa9": b"\\u2029",
}


def _compact(raw: bytes) -> str:
    """Go's encoder output for a raw value: whitespace outside strings dropped, HTML escaped."""
    compacted = _compact_token.sub(
        lambda match: match.group() if match.group()[:1] == b'"' else b"", raw
    )
    escaped = _html_chars.sub(lambda match: _HTML_ESCAPES[match.group()], compacted)
    return _go_utf8(escaped)


# ---------------------------------------------------------------------------
# Re-encoding as Go's encoding/json writes the decoded object
# ---------------------------------------------------------------------------


def _record(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _items(value: object) -> list[object]:
    return value.visible() if isinstance(value, _Slice) else []


def _omitted(target: _Type, value: object) -> bool:
    """Whether Go's ``omitempty`` leaves out a field of type ``target`` holding ``value``."""
    tag = target.tag
    if tag == "ptr":
        return value is None
    if tag == "str":
        return not (isinstance(value, str) and value)
    if tag == "int" or tag == "bool":
        return not value
    if tag == "slice":
        return not _items(value)
    if tag == "map":
        return not (isinstance(value, dict) and value)
    if tag == "time":  # the zero time is left out, as the reference's writer does
        return not isinstance(value, tuple) or value == _ZERO_TIME
    return False  # structs are always written


def _encode(target: _Type, value: object) -> object:
    """``value`` (as the body decoder left it) in the form Go's ``encoding/json`` writes it.

    Struct fields come in Go's order, map keys sorted, elements a decode never set
    as their zero value.
    """
    tag = target.tag
    if tag == "str":
        return value if isinstance(value, str) else ""
    if tag == "int":
        return value if isinstance(value, int) else 0
    if tag == "bool":
        return value is True
    if tag == "ptr":
        assert target.elem is not None
        return _encode(target.elem, value)
    if tag == "struct":
        record = _record(value)
        out: dict[str, object] = {}
        always = target.always
        for name, field in target.fields.items():
            if name in target.hidden:
                continue
            member = record.get(name)
            if name in always or not _omitted(field, member):
                out[name] = _encode(field, member)
        return out
    if tag == "slice":
        assert target.elem is not None
        return [_encode(target.elem, item) for item in _items(value)]
    if tag == "map":
        assert target.elem is not None
        mapping = _record(value)
        return {key: _encode(target.elem, mapping[key]) for key in sorted(mapping)}
    if tag == "time":  # a *metav1.Time that holds the zero time is written as null
        instant = cast(_GoTime, value)
        return None if instant == _ZERO_TIME else _format_time(instant)
    if tag == "raw":
        return value
    raise AssertionError(tag)  # pragma: no cover


# ---------------------------------------------------------------------------
# One entry, and the stream loop
# ---------------------------------------------------------------------------


def decode_node(data: bytes, node: Node) -> tuple[dict[str, object], str] | str:
    """Everything Go does with one raw value after reading it (layers 2 to 4)."""
    if node.kind != "{":
        # Not a JSON object: the universal deserializer hands it to its YAML
        # decoder, which (for any value jsontext accepts and YAML reads back
        # unchanged) fails in Interpret just like the JSON path would.
        if node.kind == "n":
            raw_text = _go_utf8(data[node.start : node.end])
            raise GoDecodeError(f"decode metadata object: Object 'Kind' is missing in '{raw_text}'")
        raise GoDecodeError(
            "decode metadata object: couldn't get version/kind; json parse error: "
            f"json: cannot unmarshal {_WORDS[node.kind]} into Go value of type {_FIND_KIND_TYPE}"
        )
    api_version, kind = _interpret(node)
    group, version = _parse_group_version(api_version)
    group_version = f"{group}/{version}" if group else version
    if not kind:
        prefix = f"decode {group_version}: " if version else "decode metadata object: "
        raw_text = _go_utf8(data[node.start : node.end])
        raise GoDecodeError(f"{prefix}Object 'Kind' is missing in '{raw_text}'")
    if not version:
        raw_text = _go_utf8(data[node.start : node.end])
        raise GoDecodeError(
            f"decode metadata object: Object 'apiVersion' is missing in '{raw_text}'"
        )

    if group == _GROUP and version in _DEVICE_METADATA:
        if kind == "DeviceMetadata":
            return _decode_device_metadata(data, node, version, group_version)
        if kind in _VERSIONED_META_KINDS:
            raise _conversion_error(group, version, kind, f"v1.{kind}")
    elif group == _GROUP and version == _INTERNAL:
        if kind == "DeviceMetadata":
            # Go would decode the body into the internal type, whose JSON keys are
            # its Go field names, and then convert internal into internal. Nobody
            # writes such files and this decoder does not model that path: it
            # rejects the entry as fatal, which is what Go does for every
            # registered version it cannot turn into a DeviceMetadata.
            raise GoDecodeError(
                f"decode {group_version}: the internal version is not a wire format "
                "(not supported by this decoder)"
            )
        if kind == "WatchEvent":
            raise _conversion_error(group, version, kind, "v1.InternalEvent")
    if kind in _UNVERSIONED_KINDS:
        raise _conversion_error(group, version, kind, f"v1.{kind}")
    if (group, version) not in _OBSERVED_VERSIONS:
        return group_version  # an unknown version: skipped by the stream loop
    raise GoDecodeError(
        f"decode {group_version}: no kind {go_quote(kind)} is registered for version "
        f"{go_quote(group_version)} in scheme {go_quote(_SCHEME_NAME)}"
    )


def _decode_device_metadata(
    data: bytes, node: Node, version: str, group_version: str
) -> tuple[dict[str, object], str]:
    decoder = _BodyDecoder(data)
    try:
        top = decoder.value(_DEVICE_METADATA[version], node, None, "", "")
    except _Fatal as fatal:
        raise GoDecodeError(f"decode {group_version}: {fatal}") from None
    if decoder.saved is not None:
        raise GoDecodeError(f"decode {group_version}: {decoder.saved}")
    return cast(dict[str, object], _encode(_DEVICE_METADATA[version], top)), group_version


def decode_entry(raw: bytes) -> tuple[dict[str, object], str] | str:
    """Decode one raw top-level value like Go: returns (wire_dict, api_version) on success,
    or the group/version string (e.g. 'metadata.k8s.io/v99', or 'v2' when the group is empty)
    when the entry is an unknown version to be skipped; raises GoDecodeError for every fatal
    case."""
    node, end = read_value(raw, 0)
    if end < len(raw) and raw[end] in _WS:
        end = _end_of(_ws_end(raw, end))
    if end < len(raw):
        raise _bad_char(raw, end, "after top-level value")
    return decode_node(raw, node)


def decode_stream(data: bytes) -> tuple[dict[str, object], str, int, int]:
    """The stream loop: returns (wire_dict, api_version, start, end) of the first
    decodable entry (start/end = byte offsets of that raw entry in data), or raises
    GoDecodeError with the exact message ('no metadata objects found in stream',
    'no compatible metadata version found in stream (unknown versions: a, b)',
    'read metadata object from stream: ...', 'decode metadata object: ...',
    'decode <group/version>: ...', 'convert <GVK>: ...')."""
    unknown: list[str] = []
    ends: list[int] = []
    pos = 0
    while True:
        start = next_value_start(data, pos)
        if start is None:
            break
        node, end = read_value(data, start, ends)
        result = decode_node(data, node)
        if isinstance(result, str):
            unknown.append(result)
            ends.append(end)
            pos = end
            continue
        wire, api_version = result
        return wire, api_version, node.start, end
    if not unknown:
        raise GoDecodeError("no metadata objects found in stream")
    raise GoDecodeError(
        "no compatible metadata version found in stream (unknown versions: "
        + ", ".join(unknown)
        + ")"
    )
