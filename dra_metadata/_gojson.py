"""The exact path: Go's stream decoding of a metadata file, replayed in pure Python.

This is the library's *slow path*. It answers exactly what the Go reference
(``devicemetadata.DecodeMetadataFromStream`` of Kubernetes v1.37) answers for
any byte string, including hostile ones, and it only ever raises
:class:`~._goscan.GoDecodeError`. The msgspec fast path hands a stream over
whenever it is not sure it would agree.

The Go reference is four libraries stacked on each other; each layer below is
modelled on its own, in the order Go runs them:

1. **Reading raw values** (``encoding/json.Decoder`` built on ``jsontext``):
   Go's stream scanner, in :mod:`._goscan`. It reads each value into a
   :class:`~._goscan.Node`, every object member kept in input order, and words
   syntax errors as Go does. The three layers after it are here.
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

``metav1.Time`` fields are parsed and written back with Go's ``time`` package
as :mod:`._gotime` models it.

Nothing here recurses in proportion to the input's nesting: the scanner parses
values with an explicit stack, and the typed decoder only descends as deep as
the Go types go (a handful of levels); everything else is skipped as a parsed
node.
"""

from __future__ import annotations

import re
import typing
from typing import Final, cast

import msgspec
import msgspec.structs

from ._field_error import go_quote
from ._goscan import GoDecodeError, Node, go_utf8, next_value_start, read_value, read_whole_value
from ._gotime import ZERO_TIME, GoTime, GoTimeError, format_time, parse_time
from ._model import DeviceMetadata
from ._versions import API_VERSIONS, GROUP, version_of

__all__ = [
    "KNOWN_VERSIONS",
    "RawJSON",
    "decode_entry",
    "decode_node",
    "decode_stream",
]


class RawJSON(str):
    """A raw JSON value (``managedFields[].fieldsV1``), compacted as Go re-encodes it."""

    __slots__ = ()


_GROUP: Final = GROUP
#: The apiVersions decoded into a DeviceMetadata (the rest are skipped or fatal).
KNOWN_VERSIONS: Final = API_VERSIONS

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


def _unmarshal_time(node: Node) -> GoTime | None:
    """``metav1.Time.UnmarshalJSON``: ``null`` is the zero time, else a string for time.Parse."""
    if node.kind == "n":
        return None
    if node.kind != '"':
        raise _Fatal(f"json: cannot unmarshal {_WORDS[node.kind]} into Go value of type string")
    try:
        return parse_time(node.text)
    except GoTimeError as err:
        raise _Fatal(str(err)) from None


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
    return go_utf8(escaped)


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
        return not isinstance(value, tuple) or value == ZERO_TIME
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
        instant = cast(GoTime, value)
        return None if instant == ZERO_TIME else format_time(instant)
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
            raw_text = go_utf8(data[node.start : node.end])
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
        raw_text = go_utf8(data[node.start : node.end])
        raise GoDecodeError(f"{prefix}Object 'Kind' is missing in '{raw_text}'")
    if not version:
        raw_text = go_utf8(data[node.start : node.end])
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
    return decode_node(raw, read_whole_value(raw))


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
