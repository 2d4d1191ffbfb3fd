"""Encoding a metadata stream byte for byte as the Go kubelet plugin writes it.

The writer encodes the object once per API version, in the order given, each as
Go's ``json.MarshalIndent`` output (two-space indent, struct fields in Go order,
map keys sorted, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, other non-ASCII
raw) followed by one newline.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any, Final

import msgspec

from ._model import DeviceMetadata
from ._versions import API_VERSIONS

__all__ = ["DEFAULT_VERSIONS", "encode", "wire_json"]

#: Versions the Go v1.37 writer is normally configured with, newest first.
DEFAULT_VERSIONS: Final = API_VERSIONS

_GO_ESCAPES: Final = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
# Patterns are compiled on first use (re caches them): import stays cheap.
_NEEDS_ESCAPE: Final = "[<>&\u2028\u2029\ud800-\udfff]"
# A raw fieldsV1 is written as a marker string, then put in place of the marker's line. The
# marker holds a fresh random token, and a text in which the markers are not exactly the
# ones placed (a value that spells one out) is made again with another token.
_RAW_MARK: Final = "\x00dra-metadata-raw-"
_RAW_LINE: Final = r'(?m)^( *)(.*)"\\u0000dra-metadata-raw-{token}-(\d+)"(,?)$'
_VERSION_SHAPE: Final = r"[^/\s]+/[^/\s]+|[^/\s]+"


def encode(md: DeviceMetadata, versions: Iterable[str] = DEFAULT_VERSIONS) -> bytes:
    """The metadata stream for ``md``: one object per version, in the order given.

    ``versions`` are full apiVersion strings; the Go writer lists the newest first
    (``v1beta1`` then ``v1alpha1``). Any ``group/version`` string is accepted so
    tests can write entries of versions this library does not know.

    >>> from dra_metadata import DeviceMetadata, DeviceMetadataRequest, V1BETA1
    >>> print(encode(DeviceMetadata(requests=(DeviceMetadataRequest("gpu"),)), [V1BETA1]).decode())
    {
      "kind": "DeviceMetadata",
      "apiVersion": "metadata.resource.k8s.io/v1beta1",
      "metadata": {},
      "requests": [
        {
          "name": "gpu"
        }
      ]
    }
    <BLANKLINE>
    """
    if isinstance(versions, str):
        raise TypeError("versions must be a sequence of apiVersion strings, not one string")
    chosen = list(versions)
    if not chosen:
        raise ValueError("encode needs at least one API version")
    for version in chosen:
        if not isinstance(version, str) or not re.fullmatch(_VERSION_SHAPE, version):
            raise ValueError(f"not an apiVersion: {version!r}")

    body, entries = _wire_for_encoding(md)

    def dump(version: str) -> str:
        top = {"kind": "DeviceMetadata", "apiVersion": version, **body}
        return json.dumps(top, indent=2, ensure_ascii=False)

    parts = []
    for version in chosen:
        text = _place_raws(entries, partial(dump, version))
        parts.append(_go_escape(text))
        parts.append("\n")
    return "".join(parts).encode("utf-8")


def _raw_entries(body: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The managedFields entries of a wire body that hold a raw ``fieldsV1``, with it."""
    return [
        (entry, entry["fieldsV1"])
        for entry in body["metadata"].get("managedFields", ())
        if "fieldsV1" in entry
    ]


def _marked_text(
    entries: list[tuple[dict[str, Any], str]], dump: Callable[[], str]
) -> tuple[str, list[re.Match[str]]]:
    """``dump()`` with each raw ``fieldsV1`` as a marker, and the lines of exactly those markers.

    The markers carry a random token; if the text holds any other line that looks
    like a marker of that token (a string that spells one out), a new token is drawn.
    """
    while True:
        token = os.urandom(8).hex()
        for index, (entry, _raw) in enumerate(entries):
            entry["fieldsV1"] = f"{_RAW_MARK}{token}-{index}"
        text = dump()
        found = list(re.finditer(_RAW_LINE.replace("{token}", token), text))
        indexes = [int(match.group(3)) for match in found]
        if indexes == list(range(len(entries))) and text.count(token) == len(entries):
            return text, found


def _place_raws(entries: list[tuple[dict[str, Any], str]], dump: Callable[[], str]) -> str:
    if not entries:
        return dump()
    text, found = _marked_text(entries, dump)
    pieces = []
    pos = 0
    for match in found:
        indent, prefix, index, comma = match.groups()
        raw = entries[int(index)][1]
        pieces.append(text[pos : match.start()] + indent + prefix + go_indent(raw, indent) + comma)
        pos = match.end()
    pieces.append(text[pos:])
    return "".join(pieces)


def _go_escape(text: str) -> str:
    if not re.search(_NEEDS_ESCAPE, text):
        return text
    return re.sub(_NEEDS_ESCAPE, lambda m: _GO_ESCAPES.get(m.group(), "\\ufffd"), text)


def _wire_for_encoding(
    md: DeviceMetadata,
) -> tuple[dict[str, Any], list[tuple[dict[str, Any], str]]]:
    """The wire body with Go's map order, and its entries with a raw ``fieldsV1``."""
    body = md.wire_body()
    meta = body["metadata"]
    for key in ("labels", "annotations"):
        if key in meta:
            meta[key] = dict(sorted(meta[key].items()))
    for request in body.get("requests", ()):
        for device in request.get("devices", ()):
            if "attributes" in device:
                device["attributes"] = dict(sorted(device["attributes"].items()))
    return body, _raw_entries(body)


def go_indent(raw: str, indent: str) -> str:
    """Go's ``json.Indent`` of compact JSON text, continuation lines prefixed by ``indent``."""
    out: list[str] = []
    depth = 0
    in_string = False
    escaped = False
    just_opened = False
    for ch in raw:
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch in " \t\r\n":
            continue
        if just_opened and ch not in "}]":
            depth += 1
            out.append("\n" + indent + "  " * depth)
        just_opened = False
        if ch == '"':
            in_string = True
            out.append(ch)
        elif ch in "{[":
            out.append(ch)
            just_opened = True
        elif ch in "}]":
            if out and out[-1] in "{[":
                out.append(ch)
            else:
                depth -= 1
                out.append("\n" + indent + "  " * depth + ch)
        elif ch == ",":
            out.append(",\n" + indent + "  " * depth)
        elif ch == ":":
            out.append(": ")
        else:
            out.append(ch)
    return "".join(out)


# --- the wire form as indented JSON text (``show``) --------------------------------------

#: Output is handed on in pieces of about this many characters.
_CHUNK: Final = 1 << 20


def wire_json(md: DeviceMetadata) -> Iterator[bytes]:
    """``json.dumps(md.to_dict(), indent=2, ensure_ascii=False)`` as UTF-8, in pieces, at any depth.

    The text is exactly that (names that are not UTF-8 as their own bytes), made
    without the Python dict of :meth:`~DeviceMetadata.to_dict`: the object is
    encoded compactly by msgspec and indented by it, which costs about twice the
    output's size, not ten times. Each ``fieldsV1`` is written from its raw JSON
    text, so a value nested as deep as Go allows (10000 levels, deeper than
    Python's ``json`` and ``msgspec`` go) is written all the same, and a number
    Python cannot hold (``1e400``) as the file has it. Pieces are written one by
    one: deep nesting, indented, makes text quadratic in the depth.
    """

    raw_fields = any(entry.fields_v1 is not None for entry in md.metadata.managed_fields)
    if not raw_fields:
        try:
            encoded = msgspec.json.encode(md)
        except UnicodeEncodeError:  # a lone surrogate (a name from a non-UTF-8 path)
            pass
        else:
            top = msgspec.json.decode(encoded, type=dict[str, msgspec.Raw])
            for key in md._NOT_WIRE:
                top.pop(key, None)
            body = {"metadata": top.pop("metadata", msgspec.Raw(b"{}")), **top}
            del encoded
            yield msgspec.json.format(msgspec.json.encode(body), indent=2)
            return
    for piece in _wire_text(md):
        yield piece.encode("utf-8", "surrogateescape")


def _wire_text(md: DeviceMetadata) -> Iterator[str]:
    """:func:`wire_json` as text, by :func:`json.dumps`, ``fieldsV1`` from its raw text."""

    body = md.wire_body()
    entries = _raw_entries(body)
    if not entries:
        yield json.dumps(body, indent=2, ensure_ascii=False)
        return
    text, found = _marked_text(entries, lambda: json.dumps(body, indent=2, ensure_ascii=False))
    pos = 0
    for match in found:
        indent, prefix, index, comma = match.groups()
        yield text[pos : match.start()] + indent + prefix
        yield from _indented_raw(entries[int(index)][1], indent)
        pos = match.end() - len(comma)
    yield text[pos:]


def _indented_raw(raw: str, indent: str) -> Iterator[str]:
    """``json.dumps(msgspec.json.decode(raw), indent=2)``, lines after the first indented."""

    try:
        text = json.dumps(msgspec.json.decode(raw), indent=2, ensure_ascii=False)
    except (RecursionError, msgspec.DecodeError):  # too deep, or a number Python cannot hold
        yield from _render_deep(raw.encode("utf-8", "surrogatepass"), indent)
    else:
        yield text.replace("\n", "\n" + indent)


def _render_deep(data: bytes, indent: str) -> Iterator[str]:
    """The JSON value ``data`` written as :func:`json.dumps` with ``indent=2`` would, by loop.

    Objects keep each key once, where it first appears, with its last value (as
    a dict does); scalars are written as ``json.dumps`` writes what msgspec
    decodes them to, or as their raw text when msgspec cannot decode them.
    """

    # Go's decoder: only the exact path needs it
    from ._goscan import GoDecodeError, Node, read_value

    try:
        root, _end = read_value(data, 0)
    except GoDecodeError:  # not JSON at all (an object built in code): the text as it is
        yield json.dumps(data.decode("utf-8", "surrogatepass"), ensure_ascii=False)
        return
    out: list[str] = []
    size = 0
    # Each frame: the members or items left to write, the closing bracket, the level, started.
    stack: list[tuple[Iterator[tuple[str | None, Node]], str, int]] = []

    def start(node: Node, level: int) -> None:
        kind = node.kind
        if kind == "{":
            members = dict(node.members)
            if not members:
                out.append("{}")
            else:
                out.append("{")
                stack.append((iter(members.items()), "}", level))
        elif kind == "[":
            if not node.items:
                out.append("[]")
            else:
                out.append("[")
                stack.append((((None, item) for item in node.items), "]", level))
        else:
            raw = data[node.start : node.end]
            try:
                out.append(json.dumps(msgspec.json.decode(raw), ensure_ascii=False))
            except msgspec.DecodeError:
                out.append(raw.decode("utf-8", "surrogatepass"))

    start(root, 0)
    opened = True  # the frame on top has written nothing yet
    while stack:
        members, closer, level = stack[-1]
        step = next(members, None)
        if step is None:
            stack.pop()
            out.append("\n" + indent + "  " * level + closer)
            opened = False
        else:
            key, node = step
            out.append(("\n" if opened else ",\n") + indent + "  " * (level + 1))
            if key is not None:
                out.append(json.dumps(key, ensure_ascii=False) + ": ")
            depth = len(stack)
            start(node, level + 1)
            opened = len(stack) > depth
        size += len(out[-1])
        if size >= _CHUNK:
            yield "".join(out)
            out.clear()
            size = 0
    yield "".join(out)
