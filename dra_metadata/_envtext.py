"""The names and the text of environment variables: what ``env`` writes, and how.

:mod:`._env` decides which variables a request gives; this module names them
(:func:`snake_name`, :func:`env_name`), turns values into text
(:func:`format_value`) and writes them in each format (:func:`render`,
:class:`Renderer`).

Formats
=======

``shell``
    ``export NAME=value``, the value in single quotes unless it only has
    characters no shell treats specially (a ``'`` is written ``'\\''``; a value
    starting with ``=``, or with ``:=`` in it, is quoted: zsh expands ``=cmd``
    there). Safe to ``eval`` or ``.`` in POSIX sh (dash, busybox), bash and zsh,
    and every value comes back exactly.
``dotenv``
    ``NAME=value`` for the docker compose ``env_file`` syntax (also read as
    written by python-dotenv with ``interpolate=False``). Values made only of
    ``A-Za-z0-9_-.,/:@+=%`` are written bare, which ``docker run --env-file``
    (it takes the rest of the line as is) reads the same. Other values are
    double-quoted with ``\\\\``, ``\\"``, ``\\n`` and ``\\r`` escapes, or, when they
    hold a ``$`` (which compose expands inside double quotes), single-quoted with
    ``'`` written ``\\'``. Some values have no form both readers take back
    exactly: one that ends with a backslash, and one with a ``$`` that also holds
    a carriage return, two backslashes in a row or a backslash before a ``'``.
    They are left out with an :class:`~dra_metadata.EnvError`. (python-dotenv's
    default ``interpolate=True`` also expands ``${NAME}`` in single quotes.)
``json``
    One JSON object, names in the order above.

>>> print(shell_line("DRA_NIC_ETH_0_PF_NAME", "enp94s0f0"))
export DRA_NIC_ETH_0_PF_NAME=enp94s0f0
>>> print(shell_line("X", "it's $(here)"))
export X='it'\\''s $(here)'
>>> print(dotenv_line("X", 'say "hi"'))
X="say \\"hi\\""
>>> snake_name("pciBusID"), snake_name("HTTPServer"), env_name("vfio-gpu")
('PCI_BUS_ID', 'HTTP_SERVER', 'VFIO_GPU')
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Final, Literal

import msgspec

from ._errors import EnvError

if TYPE_CHECKING:
    from typing import TypeAlias

    from ._values import AttributeValue

    #: An output format of :func:`render` (for type checkers: nothing reads it at run time).
    Format: TypeAlias = Literal["shell", "dotenv", "json"]

__all__ = [
    "FORMATS",
    "Renderer",
    "dotenv_line",
    "env_name",
    "format_value",
    "render",
    "shell_line",
    "snake_name",
    "valid_prefix",
]

#: The output formats of :func:`render`, the default first.
FORMATS: Final[tuple[Format, ...]] = ("shell", "dotenv", "json")

_DIGITS: Final = "0123456789"
_UPPER: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER: Final = "abcdefghijklmnopqrstuvwxyz"
#: Characters that no shell and no dotenv reader treats specially. A value is
#: made only of them when stripping them all leaves nothing (done in C).
_PLAIN_CHARS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.,/:@+=%"
_NAME_START: Final = frozenset(_UPPER + _LOWER + "_")
_NAME_CHARS: Final = frozenset(_UPPER + _LOWER + "_" + _DIGITS)


def env_name(text: str) -> str:
    """``text`` upper-cased, every character other than ``A-Z``/``0-9`` turned into ``_``.

    >>> env_name("gpu.example.com"), env_name("a_b"), env_name("café")
    ('GPU_EXAMPLE_COM', 'A_B', 'CAF_')
    """
    return _ascii(text).translate(_BYTE_TO_NAME).decode()


def _ascii(text: str) -> bytes:
    """``text`` as ASCII bytes, one per character: any other character is ``?``."""
    return text.encode("ascii", "replace")


def _byte_table(default: bytes, *ranges: tuple[str, str]) -> bytes:
    """A ``bytes.translate`` table: the bytes of each ``(these, become)`` pair map one to
    one, every other byte to ``default``."""
    table = bytearray(default * 256)
    for these, become in ranges:
        start = ord(these[0])
        table[start : start + len(these)] = become.encode()
    return bytes(table)


#: env_name() of each byte of ASCII text.
_BYTE_TO_NAME: Final = _byte_table(b"_", (_DIGITS, _DIGITS), (_UPPER, _UPPER), (_LOWER, _UPPER))
#: What snake_name() needs to know of each byte: "U" upper-case letter, "l" lower-case
#: letter, "d" digit, "-" anything else.
_BYTE_CLASS: Final = _byte_table(
    b"-", (_DIGITS, "d" * len(_DIGITS)), (_UPPER, "U" * len(_UPPER)), (_LOWER, "l" * len(_LOWER))
)


def snake_name(text: str) -> str:
    """A camelCase (or any) attribute name in UPPER_SNAKE, split where a reader splits it.

    A capital starts a word after a lower-case letter or a digit. In a run of
    capitals, the last one starts a word only when two or more lower-case letters
    follow it (``HTTPServer``, ``PFName``), so a run keeps a plural ``s`` or a
    one-letter tail (``numCPUs``, ``vfIDs``, ``IPv4Address``, ``PCIe``). Digits stay
    with the word they end. The words are joined with ``_`` and made an
    :func:`env_name`.

    >>> snake_name("numaNodeID"), snake_name("gpu0Memory"), snake_name("HTTPServer")
    ('NUMA_NODE_ID', 'GPU0_MEMORY', 'HTTP_SERVER')
    >>> snake_name("numCPUs"), snake_name("vfIDs"), snake_name("IPv4Address")
    ('NUM_CPUS', 'VF_IDS', 'IPV4_ADDRESS')
    """
    raw = _ascii(text)
    classes = raw.translate(_BYTE_CLASS)
    words: list[bytes] = []
    start = 0
    at = classes.find(b"U", 1)
    while at != -1:  # from capital to capital, in C between them
        before = classes[at - 1 : at]
        if before in b"ld" or (before == b"U" and classes.startswith(b"ll", at + 1)):
            words.append(raw[start:at])
            start = at
        at = classes.find(b"U", at + 1)
    if start:
        words.append(raw[start:])
        raw = b"_".join(words)
    return raw.translate(_BYTE_TO_NAME).decode()


def valid_prefix(prefix: str) -> bool:
    """Whether ``prefix`` can start an environment variable name (``[A-Za-z_][A-Za-z0-9_]*``)."""
    return bool(prefix) and prefix[0] in _NAME_START and all(ch in _NAME_CHARS for ch in prefix)


def format_value(value: AttributeValue) -> str:
    """An attribute value as text: ``true``/``false``, decimal, as is, lists comma-joined.

    >>> format_value(True), format_value(-3), format_value((0, 1)), format_value(("a", "b"))
    ('true', '-3', '0,1', 'a,b')
    """
    if isinstance(value, tuple):
        return ",".join(format_value(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def shell_line(name: str, value: str) -> str:
    """``export NAME=value`` for POSIX sh, bash and zsh, quoted when needed.

    Bare only when no shell expands it: plain characters, and no ``=`` where zsh
    takes it for a command's path (at the start, or after a ``:``, as in
    ``export X==ls``); ``~`` is never bare.
    """
    if value and not value.strip(_PLAIN_CHARS) and value[0] != "=" and ":=" not in value:
        return f"export {name}={value}"
    return "export " + name + "='" + value.replace("'", "'\\''") + "'"


def dotenv_line(name: str, value: str) -> str:
    """``NAME=value`` in the dotenv syntax of docker compose; raises :class:`EnvError`."""
    if not value.strip(_PLAIN_CHARS):
        return f"{name}={value}"
    if value.endswith("\\"):
        # python-dotenv takes the backslash and the closing quote for an escaped
        # quote, and compose cannot end a single-quoted value with one.
        raise EnvError(
            f"{name}: the value ends with a backslash: no dotenv form reads back the same "
            "(use --format shell or json)"
        )
    if "$" not in value:
        escaped = (
            value.replace("\\", "\\\\")
            .replace('"', '\\"')
            .replace("\n", "\\n")
            .replace("\r", "\\r")
        )
        return f'{name}="{escaped}"'
    if "\r" in value or "\\\\" in value or "\\'" in value:
        raise EnvError(
            f"{name}: the value holds a '$' and a carriage return or a backslash before "
            "a backslash or a quote: no dotenv form reads back the same "
            "(use --format shell or json)"
        )
    return name + "='" + value.replace("'", "\\'") + "'"


def render(variables: Mapping[str, str], format: Format = "shell") -> tuple[bytes, list[EnvError]]:  # noqa: A002 - the option's name
    """The variables in ``format`` as UTF-8 bytes, and the ones the format cannot hold.

    Only ``dotenv`` can refuse a value (see the module docs); refused variables
    are left out and reported, the others written.

    >>> text, refused = render({"A": "1", "B": "x y"}, "json")
    >>> print(text.decode(), end="")
    {
      "A": "1",
      "B": "x y"
    }
    """
    chunks: list[bytes] = []
    renderer = Renderer(format, chunks.append)
    renderer.add(variables)
    refused = renderer.close()
    return b"".join(chunks), refused


def _plain(values: Collection[str], *, empty: bool) -> bool:
    """Whether every value is made only of plain characters (and, unless ``empty``, not empty).

    The test :func:`shell_line` and :func:`dotenv_line` make of each value, made
    once over them all, in C: their text joined has only plain characters exactly
    when each has.
    """
    joined = "".join(values)
    return (
        joined.isascii()
        and not joined.encode().translate(None, _PLAIN_CHARS.encode())
        and (empty or all(values))
    )


#: How many variables :class:`Renderer` turns into text at a time.
_LINES_PER_WRITE: Final = 2048


class Renderer:
    """:func:`render` a part at a time: each :meth:`add` writes its variables' text.

    The parts written, joined, are exactly what :func:`render` gives for all the
    variables at once. ``write`` gets UTF-8 bytes.

    >>> parts = []
    >>> out = Renderer("json", parts.append)
    >>> out.add({"A": "1"}); out.add({"B": "x y"})
    >>> out.close(), b"".join(parts) == render({"A": "1", "B": "x y"}, "json")[0]
    ([], True)
    """

    def __init__(self, format: Format, write: Callable[[bytes], object]) -> None:  # noqa: A002 - the option's name
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
        self._format = format
        self._write = write
        self._refused: list[EnvError] = []
        self._started = False  # json: whether the opening brace (and a member) is out

    def add(self, variables: Mapping[str, str]) -> None:
        """Write the lines of ``variables`` (a block of lines per write)."""
        if len(variables) <= _LINES_PER_WRITE:
            if variables:
                self._add(variables.keys(), variables.values())
            return
        names = list(variables)
        for start in range(0, len(names), _LINES_PER_WRITE):
            block = names[start : start + _LINES_PER_WRITE]
            self._add(block, list(map(variables.__getitem__, block)))

    def _add(self, names: Collection[str], values: Collection[str]) -> None:
        lines: list[str] = []
        pairs = zip(names, values, strict=True)
        if self._format != "json" and _plain(values, empty=self._format == "dotenv"):
            # shell_line() and dotenv_line() of plain values: NAME=value, all in C
            lead = "export " if self._format == "shell" else ""
            text = lead + f"\n{lead}".join(map("=".join, pairs)) + "\n"
            self._write(text.encode())
        elif self._format == "shell":
            lines = [shell_line(name, value) for name, value in pairs]
        elif self._format == "dotenv":
            for name, value in pairs:
                try:
                    lines.append(dotenv_line(name, value))
                except EnvError as err:
                    self._refused.append(err)
        else:
            encode = msgspec.json.encode
            members = b",\n  ".join(encode(name) + b": " + encode(value) for name, value in pairs)
            self._write((b",\n  " if self._started else b"{\n  ") + members)
            self._started = True
        if lines:
            self._write(("\n".join(lines) + "\n").encode("utf-8"))

    def close(self) -> list[EnvError]:
        """Write the end (json's closing brace); return the variables the format refused."""
        if self._format == "json":
            self._write(b"\n}\n" if self._started else b"{}\n")
        return self._refused
