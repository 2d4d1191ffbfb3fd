"""Lint a metadata file for the interoperability problems validation does not catch.

A file can decode and validate and still let readers down: a network key that
no reader looks at (``hwAddress``), an attribute value under a Go field name
(``stringValue``), a standard attribute in the wrong domain, versions in the
wrong order, entries of one stream that say different things, or a path that
does not match the content. :func:`lint` reports each as a :class:`LintProblem`
with a stable code (see :data:`RULES`), the field path (Go's syntax, as in
validation errors, or ``stream[i]`` for the ``i``-th object of the stream,
counted from 0) and a one-line message.

Unknown keys are invisible after decoding (the decoder ignores them), so the
rules about keys read each object of the stream as plain JSON.

>>> import dra_metadata as dm
>>> from dra_metadata._lint import lint
>>> md = dm.DeviceMetadata(metadata=dm.ObjectMeta(name="c", generation=1),
...                        requests=(dm.DeviceMetadataRequest("gpu"),))
>>> lint(dm.encode(md), path="resourceclaims/c/gpu/gpu.example.com-metadata.json")
[]
>>> for problem in lint(dm.encode(md, [dm.V1ALPHA1]).replace(b'"name": "gpu"', b'"Name": "gpu"')):
...     print(problem.code, problem.field)
DRA106 stream
DRA114 requests[0].Name
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, cast

import msgspec
import msgspec.structs

from ._errors import DecodeError
from ._formats import MAX_ATTRIBUTES
from ._model import (
    ATTRIBUTE_KINDS,
    DOMAIN_SEPARATOR,
    NETWORK_FIELDS,
    STANDARD_DOMAIN,
    Device,
    DeviceAttribute,
    DeviceMetadata,
    DeviceMetadataRequest,
    ManagedFieldsEntry,
    ObjectMeta,
    OwnerReference,
)
from ._paths import (
    METADATA_FILE_SUFFIX,
    NODE_METADATA_FILE,
    NODE_METADATA_SUBDIR,
    RESOURCE_CLAIM_TEMPLATES_SUBDIR,
    RESOURCE_CLAIMS_SUBDIR,
    check_path,
    driver_of,
)
from ._read import _decode_fast, decode, from_wire, stream_bytes
from ._standard import is_pcie_root, normal_pci_address, numa_of
from ._values import wire_names
from ._versions import GROUP, NEWEST

if TYPE_CHECKING:
    from ._goscan import Node

__all__ = ["MAX_ATTRIBUTES", "RULES", "LintProblem", "lint", "lint_exact"]


class LintProblem(msgspec.Struct, frozen=True, gc=False):
    """One interoperability problem: a stable ``code``, the ``field`` path and a ``message``.

    ``str()`` gives ``CODE field: message``.
    """

    #: The rule's stable code (see :data:`LINT_RULES`).
    code: str
    #: The field path the problem is about.
    field: str
    #: What is wrong and what to do, one line.
    message: str

    def __str__(self) -> str:
        return f"{self.code} {self.field}: {self.message}"


#: Every rule's code and what it finds.
RULES: Final[dict[str, str]] = {
    "DRA101": "a networkData key readers do not know, in place of a real one (hwAddress, ip)",
    "DRA102": "an attribute value under a Go field name (stringValue) instead of its JSON name",
    "DRA103": "a standard attribute (pciBusID, pcieRoot, numaNode) under a wrong domain or case",
    "DRA104": "a PCI address with upper-case hex digits",
    "DRA105": "API versions not newest first",
    "DRA106": f"no {NEWEST} entry",
    "DRA107": "entries of one stream that are not the same object",
    "DRA108": "a later entry that does not decode (readers that skip to it fail)",
    "DRA109": "podClaimName does not fit resourceclaimtemplates/ or resourceclaims/",
    "DRA110": "the claim directory does not match the content's claim",
    "DRA111": "the file name's driver is not the devices' driver",
    "DRA112": "the request directory is not the base of the request's name",
    "DRA113": "more attributes on a device than the API allows",
    "DRA114": "an unknown field (decoders ignore it: likely a typo)",
    "DRA115": "generation below 1",
    "DRA116": "a key that appears twice in one object",
    "DRA117": "apiVersion or kind spelled in another case",
    "DRA118": "a NUMA node that is negative (no NUMA affinity: leave it out) or past 1023",
    "DRA119": "a standard attribute not in its standard form (pciBusID, pcieRoot)",
}

_STANDARD: Final = {"pcibusid": "pciBusID", "pcieroot": "pcieRoot", "numanode": "numaNode"}
_PCI_ADDRESS_ATTRIBUTES: Final = ("pciBusID", "pcieRoot")
_KUBERNETES_DOMAINS: Final = ("k8s.io", "kubernetes.io")

# The keys each object of the wire form may have: the model's field names.
_TOP: Final = wire_names(DeviceMetadata)
_META: Final = wire_names(ObjectMeta)
_OWNER: Final = wire_names(OwnerReference)
_MANAGED: Final = wire_names(ManagedFieldsEntry)
_REQUEST: Final = wire_names(DeviceMetadataRequest)
_DEVICE: Final = wire_names(Device)
_NETWORK: Final = tuple(NETWORK_FIELDS)
# Network keys seen in drivers and docs of other projects, and the field they mean.
_NETWORK_MISTAKES: Final = {
    "hwaddress": "hardwareAddress",
    "hwaddr": "hardwareAddress",
    "hardwareaddr": "hardwareAddress",
    "macaddress": "hardwareAddress",
    "macaddr": "hardwareAddress",
    "mac": "hardwareAddress",
    "addresses": "ips",
    "address": "ips",
    "addrs": "ips",
    "ip": "ips",
    "ipaddress": "ips",
    "ipaddresses": "ips",
    "ipaddrs": "ips",
    "cidrs": "ips",
    "interface": "interfaceName",
    "ifname": "interfaceName",
    "iface": "interfaceName",
    "name": "interfaceName",
}


class _Object(dict[str, Any]):
    """A JSON object as parsed for linting: the last value of each key, and repeated keys."""

    __slots__ = ("repeated",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        seen: set[str] = set()
        repeated: list[str] = []
        for key, _ in pairs:
            if key in seen and key not in repeated:
                repeated.append(key)
            seen.add(key)
        self.repeated = repeated


class _Entry(msgspec.Struct, gc=False):
    """One object of the stream: where it is, what it decodes to, what it is as plain JSON."""

    index: int
    api_version: str  # the apiVersion Go saw ("" when it could not tell)
    decoded: DeviceMetadata | None  # None: an unknown version, or broken
    error: str | None  # why it does not decode (known-version or malformed entries)
    raw: _Object | None  # the plain-JSON view, None when Python's parser refuses it


class _Problems:
    def __init__(self) -> None:
        self.found: list[LintProblem] = []
        self._seen: set[LintProblem] = set()

    def add(self, code: str, field: str, message: str) -> None:
        problem = LintProblem(code, field, message)
        if problem not in self._seen:
            self._seen.add(problem)
            self.found.append(problem)


def lint(
    data: bytes | bytearray | memoryview | str, *, path: str | os.PathLike[str] | None = None
) -> list[LintProblem]:
    """The interoperability problems of one metadata stream (empty when there are none).

    ``path`` (the file's path, in the container layout or the kubelet plugin's
    node layout) enables the rules that compare the path with the content.
    Raises :class:`~dra_metadata.DecodeError` when the stream does not decode at
    all; no other exception escapes, whatever the bytes. :class:`TypeError` when
    ``data`` is not bytes or str, or ``path`` not a ``str`` path (bytes included).
    """

    raw = stream_bytes(data, "lint()")
    if path is not None:
        path = check_path("path", path)
    return _lint(raw, path, fast=True, keep=False)[1]


def lint_decoded(raw: bytes) -> tuple[DeviceMetadata, list[LintProblem]]:
    """One pass over a stream: the object :func:`~dra_metadata.decode` returns, and the problems.

    For a writer that checks what it wrote: validation and lint read one decode.
    Raises :class:`~dra_metadata.DecodeError` as :func:`~dra_metadata.decode` does.
    """
    found, problems = _lint(raw, None, fast=True, keep=True)
    assert found is not None  # kept
    return found, problems


def lint_exact(
    data: bytes | bytearray | memoryview | str, *, path: str | os.PathLike[str] | None = None
) -> list[LintProblem]:
    """:func:`lint` with every entry read by the exact (Go-replaying) path; the same answers."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    return _lint(raw, None if path is None else os.fspath(path), fast=False, keep=False)[1]


def _lint(
    raw: bytes, path: str | None, *, fast: bool, keep: bool
) -> tuple[DeviceMetadata | None, list[LintProblem]]:
    """The problems, and (``keep``) the object Go returns, held while the rest is read."""

    stream = _Stream()
    chosen = False  # whether the entry Go returns (the first decoded one) was seen
    kept: DeviceMetadata | None = None
    # One entry at a time: each is dropped before the next is read (unless kept).
    for entry in _entries(raw, fast=fast):
        if not chosen and entry.decoded is None and entry.error is not None:
            break  # the first entry Go meets that is not skipped is broken: decode() raises
        stream.add(entry)
        if entry.decoded is not None:
            if not chosen:
                if path is not None:
                    _check_path(os.fspath(path), entry.decoded, stream.path_problems)
                if keep:
                    kept = entry.decoded
            chosen = True
            if entry.raw is not None:
                _check_keys(entry.raw, stream.entry_problems)
            _check_content(entry.decoded, stream.entry_problems)
        del entry
    if not chosen:
        # Go decodes nothing from this stream: raise its error (decoding the bytes
        # again, so that the message is exactly decode()'s).
        kept = decode(raw)
        if path is not None:  # pragma: no cover - decode() raises whenever _entries found none
            _check_path(os.fspath(path), kept, stream.path_problems)
    return kept, stream.problems()


# --- the stream ---------------------------------------------------------------------------


def _entries(data: bytes, *, fast: bool = True) -> Iterator[_Entry]:
    """Every object of the stream, read as Go reads it; stops at the first unreadable one."""
    # Go's decoder: only the exact path needs it
    from ._gojson import decode_node
    from ._goscan import GoDecodeError, next_value_start, read_value

    pos = 0
    index = 0
    ends: list[int] = []  # where each entry read so far ends: Go's buffer keeps from there
    while True:
        start = next_value_start(data, pos)
        if start is None:
            return
        quick = _fast_entry(data, start, index) if fast else None
        if quick is not None:
            entry, pos = quick
            del quick
            yield entry
            del entry  # not kept while the next entry is read
            end = pos
            while data[end - 1] in b" \t\r\n":  # the entry ends with its closing brace
                end -= 1
            ends.append(end)
            index += 1
            continue
        try:
            node, end = read_value(data, start, ends)
        except GoDecodeError as err:
            yield _Entry(index, "", None, str(err), None)
            return
        plain = _plain_json(data, node)
        try:
            result = decode_node(data, node)
        except GoDecodeError as err:
            yield _Entry(index, _api_version_of(plain), None, str(err), plain)
        else:
            if isinstance(result, str):
                yield _Entry(index, result, None, None, plain)
            else:
                wire, api_version = result
                try:
                    decoded = from_wire(wire, api_version)
                except DecodeError as err:  # pragma: no cover - the exact path emits valid shapes
                    yield _Entry(index, api_version, None, str(err), plain)
                else:
                    yield _Entry(index, api_version, decoded, None, plain)
        ends.append(end)
        pos = end
        index += 1


#: A key and its colon with whitespace between them (or such text in a string).
_SPACED_COLON: Final = re.compile(rb'"[ \t\r\n]+:')


def _fast_entry(data: bytes, start: int, index: int) -> tuple[_Entry, int] | None:
    """The entry at ``start`` when msgspec can prove what Go makes of it; else None.

    This is how large files are linted fast: the entry is taken to end where the
    next line starting with ``{`` begins (as the Go writer and compact writers
    put entries) and accepted only when that span is one JSON value with no
    key twice in any object, and the decoder's fast path decodes it (a known
    version, no unknown or case-variant key: so none of the key rules can
    fire). Anything else is left to the exact path, which reads the entry as
    Go does.
    """

    following = data.find(b"\n{", start)
    end = len(data) if following < 0 else following
    while end > start and data[end - 1] in b" \t\r\n":
        end -= 1
    span = data[start:end]
    try:
        plain = msgspec.json.decode(span)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(plain, dict) or _key_count(plain) != _text_key_count(span):
        return None  # a repeated key, or not sure there is none: the exact path tells
    del plain
    md = _decode_fast(span)
    if md is None:
        return None
    return _Entry(index, md.api_version, md, None, None), end


def _key_count(value: object) -> int:
    """How many keys the objects of a decoded JSON value hold, all levels counted."""
    count = 0
    stack = [value]
    push = stack.append
    pop = stack.pop
    while stack:
        item = pop()
        values: Iterable[object]
        if type(item) is dict:
            count += len(item)
            values = item.values()
        else:
            values = cast("list[object]", item)
        for child in values:
            kind = type(child)
            if kind is dict or kind is list:
                push(child)
    return count


def _text_key_count(span: bytes) -> int:
    """At least how many keys the valid JSON text ``span`` writes, or -1 when unsure.

    Every key is a closing quote followed by a colon; text in a string can only
    add to the count (an escaped quote before a colon), never hide a key, as
    long as no key is spaced from its colon (then -1: the exact path decides).
    So a count equal to the decoded objects' key count proves no key repeats.
    """
    if _SPACED_COLON.search(span) is not None:
        return -1
    return span.count(b'":')


#: How deep the plain view goes; no rule looks deeper, and below it a value is its raw text.
_PLAIN_DEPTH: Final = 64


class _Deep(str):
    """A value nested deeper than :data:`_PLAIN_DEPTH`, kept as its raw JSON text."""

    __slots__ = ()


def _plain(data: bytes, node: Node, depth: int = 0) -> object:
    """The plain-JSON view of a parsed value: objects as :class:`_Object`, duplicates kept.

    Built from the exact decoder's parse (which has no depth limit of Python's), so a
    stream nested as deep as Go allows is linted like any other.
    """
    kind = node.kind
    if kind in "{[" and depth >= _PLAIN_DEPTH:
        return _Deep(data[node.start : node.end].decode("utf-8", "replace"))
    if kind == "{":
        return _Object([(key, _plain(data, value, depth + 1)) for key, value in node.members])
    if kind == "[":
        return [_plain(data, item, depth + 1) for item in node.items]
    if kind == '"':
        return node.text
    if kind == "0":
        text = node.text
        return float(text) if any(c in text for c in ".eE") else int(text)
    return {"t": True, "f": False}.get(kind)


def _plain_json(data: bytes, node: Node) -> _Object | None:
    """One stream object as plain JSON (``None`` when it is not an object)."""
    value = _plain(data, node)
    return value if isinstance(value, _Object) else None


def _api_version_of(plain: _Object | None) -> str:
    """The apiVersion Go would see: keys compared ignoring case, the last one wins."""
    found = ""
    for key, value in (plain or {}).items():
        if key.lower() == "apiversion" and isinstance(value, str):
            found = value
    return found


def _version_rank(api_version: str) -> tuple[int, int, int] | None:
    """Kubernetes version priority of a ``metadata.resource.k8s.io`` version (higher is newer)."""
    group, _, version = api_version.rpartition("/")
    if group != GROUP:
        return None
    match = re.fullmatch(r"v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?", version)
    if match is None:
        return None
    major, level, minor = match.groups()
    stability = {"alpha": 0, "beta": 1, None: 2}[level]
    return (stability, int(major), int(minor or 0))


class _Stream:
    """What lint learns entry by entry, and its problems in the order they are reported.

    Entries are looked at one at a time and then dropped: only the first decoded
    entry's wire form is kept (compactly encoded) to compare later entries with,
    so linting a large file costs about one decoded copy of it at a time.
    Problems come out as a whole-stream pass would find them: stream problems
    first, then each entry's key and content problems, then the path's.
    """

    def __init__(self) -> None:
        self.records: list[tuple[int, str, bool, str | None, str | None]] = []
        self.first: tuple[int, str] | None = None  # index and apiVersion of the first decoded
        self.reference: bytes | dict[str, Any] | None = None
        self.entry_problems = _Problems()
        self.path_problems = _Problems()

    def add(self, entry: _Entry) -> None:
        """Record ``entry``: its version, and how it differs from the first decoded entry."""
        difference: str | None = None
        decoded = entry.decoded
        if decoded is not None:
            if self.first is None:
                self.first = (entry.index, entry.api_version)
                self.reference = _comparable(decoded)
            else:
                difference = self._difference(decoded)
        self.records.append(
            (entry.index, entry.api_version, decoded is not None, entry.error, difference)
        )

    def _difference(self, md: DeviceMetadata) -> str | None:
        """Where ``md`` differs from the first decoded entry (``""``: at the top), or None."""
        assert self.reference is not None  # set with the first decoded entry
        if _comparable(md) == self.reference:
            return None
        reference = self.reference
        if isinstance(reference, bytes):
            reference = _wire_of(reference)
        return _first_difference(reference, md.wire_body(), "")

    def problems(self) -> list[LintProblem]:
        """Every problem found, stream problems first, each once."""
        problems = _Problems()
        newest: tuple[tuple[int, int, int], str] | None = None
        for index, api_version, _decoded, _error, _where in self.records:
            rank = _version_rank(api_version)
            if rank is None:
                continue
            if newest is not None and rank > newest[0]:
                problems.add(
                    "DRA105",
                    f"stream[{index}].apiVersion",
                    f"{api_version} comes after the older {newest[1]}: write the newest "
                    "version first (readers take the first version they know)",
                )
            if newest is None or rank < newest[0]:
                newest = (rank, api_version)
        if not any(api_version == NEWEST for _i, api_version, *_rest in self.records):
            problems.add(
                "DRA106",
                "stream",
                f"no {NEWEST} entry: the v1.37 kubelet plugin always writes one, "
                "and readers may know no other version",
            )
        if self.first is not None:
            first_index, first_version = self.first
            for index, api_version, decoded, error, where in self.records:
                if index <= first_index:
                    continue
                if not decoded and error is not None:
                    problems.add(
                        "DRA108",
                        f"stream[{index}]",
                        "does not decode, so readers that skip the entries before it fail: "
                        f"{error}",
                    )
                elif decoded and where is not None:
                    problems.add(
                        "DRA107",
                        f"stream[{index}]",
                        f"the {api_version} entry differs from the {first_version} entry "
                        f"at {where or 'the top'}: readers of different versions see "
                        "different data",
                    )
        for found in (self.entry_problems, self.path_problems):
            for problem in found.found:
                problems.add(problem.code, problem.field, problem.message)
        return problems.found


def _comparable(md: DeviceMetadata) -> bytes | dict[str, Any]:
    """``md``'s wire form in a form cheap to keep and to compare: compact JSON when it encodes."""
    try:
        return msgspec.json.encode(msgspec.structs.replace(md, api_version=""))
    except UnicodeEncodeError:  # a lone surrogate: the dict form, as wire_body() gives it
        return md.wire_body()


def _wire_of(encoded: bytes) -> dict[str, Any]:
    """The :meth:`DeviceMetadata.wire_body` of the object :func:`_comparable` encoded."""
    raw: dict[str, Any] = msgspec.json.decode(encoded)
    for key in DeviceMetadata._NOT_WIRE:
        raw.pop(key, None)
    return {"metadata": raw.pop("metadata", {}), **raw}


def _first_difference(a: object, b: object, where: str) -> str | None:
    """The Go-style path of the first place where two wire bodies differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if where.endswith(_MAPS):  # a Go map: its keys in Go's (sorted) order, whatever was read
            keys = sorted(a.keys() | b.keys())
        else:
            keys = list(a) + [key for key in b if key not in a]
        for key in keys:
            if key not in a or key not in b:
                return _join(where, key)
            found = _first_difference(a[key], b[key], _join(where, key))
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _first_difference(x, y, f"{where}[{i}]")
            if found is not None:
                return found
        return None if len(a) == len(b) else f"{where}[{min(len(a), len(b))}]"
    return None if a == b and type(a) is type(b) else where


#: The wire fields that are Go maps (their keys print as ``[key]``).
_MAPS: Final = ("attributes", "labels", "annotations")


def _join(where: str, key: str) -> str:
    # Map keys print as [key]; struct fields as .field.
    if where.endswith(_MAPS):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


# --- keys: what only the plain JSON shows --------------------------------------------------


def _check_keys(top: _Object, problems: _Problems) -> None:
    _check_object(top, _TOP, "", problems)
    meta = top.get("metadata")
    if isinstance(meta, _Object):
        _check_object(meta, _META, "metadata", problems)
        for name, known in (("ownerReferences", _OWNER), ("managedFields", _MANAGED)):
            for i, item in _objects(meta.get(name)):
                _check_object(item, known, f"metadata.{name}[{i}]", problems)
    for i, request in _objects(top.get("requests")):
        where = f"requests[{i}]"
        _check_object(request, _REQUEST, where, problems)
        for j, device in _objects(request.get("devices")):
            at = f"{where}.devices[{j}]"
            _check_object(device, _DEVICE, at, problems)
            attributes = device.get("attributes")
            if isinstance(attributes, _Object):
                _check_repeated(attributes, f"{at}.attributes", problems)
                for name, value in attributes.items():
                    if isinstance(value, _Object):
                        _check_attribute_value(value, f"{at}.attributes[{name}]", problems)
            network = device.get("networkData")
            if isinstance(network, _Object):
                _check_network(network, f"{at}.networkData", problems)


def _objects(value: object) -> Iterator[tuple[int, _Object]]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, _Object):
                yield i, item


def _field(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _check_repeated(obj: _Object, where: str, problems: _Problems) -> None:
    for key in obj.repeated:
        problems.add(
            "DRA116",
            _field(where, key),
            f'key "{key}" appears more than once in one object: Go merges the values, '
            "other JSON readers keep only the last",
        )


def _check_object(obj: _Object, known: tuple[str, ...], where: str, problems: _Problems) -> None:
    _check_repeated(obj, where, problems)
    for key in obj:
        if key in known:
            continue
        if not where and key.lower() in ("apiversion", "kind"):
            right = "apiVersion" if key.lower() == "apiversion" else "kind"
            problems.add(
                "DRA117",
                key,
                f'"{key}" is read as "{right}" only because Go ignores its case; '
                f'other readers need "{right}"',
            )
            continue
        _unknown(key, known, where, problems)


def _unknown(key: str, known: tuple[str, ...], where: str, problems: _Problems) -> None:
    hint = _suggest(key, known)
    problems.add(
        "DRA114",
        _field(where, key),
        f'unknown field "{key}" (decoders ignore it)'
        + (f'; did you mean "{hint}"?' if hint else ""),
    )


def _suggest(key: str, known: tuple[str, ...]) -> str | None:
    """The known field ``key`` likely meant (``pool_name`` -> ``poolName``): the one
    suggestion rule, written without separators, and strict (these are typos)."""
    # only on the way to a message
    from ._text import closest

    return closest(key.replace("_", "").replace("-", ""), known, cutoff=0.8, prefix=False)


def _check_attribute_value(value: _Object, where: str, problems: _Problems) -> None:
    _check_repeated(value, where, problems)
    for key in value:
        if key in ATTRIBUTE_KINDS:
            continue
        folded = key.lower()
        kind = folded[: -len("value")] if folded.endswith("value") else folded
        if kind in ATTRIBUTE_KINDS:
            problems.add(
                "DRA102",
                _field(where, key),
                f'"{key}" is the Go field name; the JSON key is "{kind}" '
                "(readers see an attribute with no value)",
            )
        else:
            _unknown(key, ATTRIBUTE_KINDS, where, problems)


def _check_network(network: _Object, where: str, problems: _Problems) -> None:
    _check_repeated(network, where, problems)
    for key in network:
        if key in _NETWORK:
            continue
        folded = key.lower().replace("_", "").replace("-", "")
        right = _NETWORK_MISTAKES.get(folded) or _suggest(key, _NETWORK)
        if right is not None:
            problems.add(
                "DRA101",
                _field(where, key),
                f'"{key}" is not a networkData field, readers never see it; use "{right}"',
            )
        else:
            _unknown(key, _NETWORK, where, problems)


# --- content: what the decoded object shows ------------------------------------------------


def _check_content(md: DeviceMetadata, problems: _Problems) -> None:
    generation = md.metadata.generation
    if generation < 1:
        problems.add(
            "DRA115",
            "metadata.generation",
            f"generation is {generation}: the kubelet plugin writes 1 first and adds 1 on "
            "every update, and readers compare generations to notice changes",
        )
    for i, request in enumerate(md.requests):
        for j, device in enumerate(request.devices):
            where = f"requests[{i}].devices[{j}].attributes"
            count = len(device.attributes)
            if count > MAX_ATTRIBUTES:
                problems.add(
                    "DRA113",
                    where,
                    f"{count} attributes: the API allows at most {MAX_ATTRIBUTES} per device",
                )
            _check_numa(device, where, problems)
            for standard in ("pciBusID", "pcieRoot"):
                entry = device.attributes.get(_STANDARD_PREFIX + standard)
                if entry is not None and not _standard_form(standard, entry):
                    problems.add(
                        "DRA119",
                        f"{where}[{_STANDARD_PREFIX + standard}]",
                        f"{entry.value!r} is not in the standard form "
                        f"({_STANDARD_FORMS[standard]}): readers refuse it",
                    )
            for name, attribute in device.attributes.items():
                local = _standard_local(name, device.driver)
                if local is None:
                    continue
                right = f"{STANDARD_DOMAIN}{DOMAIN_SEPARATOR}{local}"
                if name != right:
                    problems.add(
                        "DRA103",
                        f"{where}[{name}]",
                        f'"{name}" is not the standard attribute "{right}": readers '
                        "looking for the standard one will not find it",
                    )
                if local in _PCI_ADDRESS_ATTRIBUTES:
                    for value in (attribute.string, *attribute.strings):
                        if value is not None and value != value.lower():
                            problems.add(
                                "DRA104",
                                f"{where}[{name}]",
                                f'PCI address "{value}" has upper-case hex digits: sysfs and '
                                f'Kubernetes use lower case ("{value.lower()}")',
                            )


_STANDARD_PREFIX: Final = STANDARD_DOMAIN + DOMAIN_SEPARATOR
_STANDARD_FORMS: Final = {"pciBusID": "0000:3b:00.0", "pcieRoot": "pci0000:3a"}
#: Linux's limit on NUMA node numbers (MAX_NUMNODES: 1 << CONFIG_NODES_SHIFT, at most 10
#: bits); the Go helper refuses larger ones too.
_MAX_NUMA_NODES: Final = 1024


def _standard_form(standard: str, entry: DeviceAttribute) -> bool:
    """Whether a standard ``pciBusID`` or ``pcieRoot`` entry is in its standard form
    (upper-case hex is DRA104's finding, not this one's)."""
    value = entry.value
    values = value if isinstance(value, tuple) else (value,)
    if not values or not all(isinstance(v, str) for v in values):
        return False
    if standard == "pciBusID":
        return len(values) == 1 and normal_pci_address(str(values[0]).lower()) is not None
    return all(is_pcie_root(str(v).lower()) for v in values)


def _check_numa(device: Device, where: str, problems: _Problems) -> None:
    """DRA118: NUMA attributes the model reads that hold no NUMA node."""
    numa = numa_of(device)
    for name in numa.unknown:
        problems.add(
            "DRA118",
            f"{where}[{name}]",
            "a negative NUMA node means no NUMA affinity: KEP-6072 drivers leave the "
            "attribute out (a negative value would match every other NUMA-less device), "
            "and readers take it as unknown",
        )
    for name, nodes in numa.sources:
        big = [node for node in nodes if node >= _MAX_NUMA_NODES]
        if big:
            problems.add(
                "DRA118",
                f"{where}[{name}]",
                f"NUMA node {big[0]} is past the largest Linux has ({_MAX_NUMA_NODES - 1})",
            )


def _standard_local(name: str, driver: str) -> str | None:
    """The standard attribute ``name`` means (``pciBusID``...), or None for any other.

    Names in the driver's own domain (or unqualified) are the driver's attributes,
    not a misspelt standard one.
    """
    domain, sep, local = name.rpartition(DOMAIN_SEPARATOR)
    standard = _STANDARD.get(local.lower())
    if standard is None or not sep or domain == driver:
        return None
    folded = domain.lower()
    if folded in _KUBERNETES_DOMAINS or folded.endswith(
        tuple("." + d for d in _KUBERNETES_DOMAINS)
    ):
        return standard
    return None


# --- the path -----------------------------------------------------------------------------


def _check_path(path: str, md: DeviceMetadata, problems: _Problems) -> None:
    parts = [part for part in re.split(r"[\\/]+", path) if part]
    if not parts:
        return
    name = parts[-1]
    driver: str | None = None
    request_dir: str | None = None
    if name.endswith(METADATA_FILE_SUFFIX) and len(name) > len(METADATA_FILE_SUFFIX):
        driver = driver_of(name)
        if len(parts) >= 4 and parts[-4] in (
            RESOURCE_CLAIMS_SUBDIR,
            RESOURCE_CLAIM_TEMPLATES_SUBDIR,
        ):
            request_dir = parts[-2]
            _check_claim_dir(parts[-4], parts[-3], md, problems)
    elif name == NODE_METADATA_FILE and len(parts) >= 5 and parts[-4] == NODE_METADATA_SUBDIR:
        # The kubelet plugin's node layout: <plugin dir>/dra-device-metadata/<ns>_<claim>/<req>/
        driver, request_dir = parts[-5], parts[-2]
        meta = md.metadata
        expected = f"{meta.namespace}_{meta.name}"
        if meta.name and parts[-3] != expected:
            problems.add(
                "DRA110",
                "metadata.name",
                f'the claim directory is "{parts[-3]}" but the content is claim "{expected}" '
                "(<namespace>_<name>)",
            )
    for i, request in enumerate(md.requests):
        if request_dir is not None and request.base_name != request_dir:
            problems.add(
                "DRA112",
                f"requests[{i}].name",
                f'request "{request.name}" is in the directory "{request_dir}": readers look '
                f'for it in "{request.base_name}"',
            )
        for j, device in enumerate(request.devices):
            if driver is not None and device.driver != driver:
                problems.add(
                    "DRA111",
                    f"requests[{i}].devices[{j}].driver",
                    f'device of driver "{device.driver}" in the file of driver "{driver}": '
                    "readers that ask for one driver's file miss it",
                )


def _check_claim_dir(subdir: str, claim_dir: str, md: DeviceMetadata, problems: _Problems) -> None:
    pod_claim = md.pod_claim_name
    if subdir == RESOURCE_CLAIM_TEMPLATES_SUBDIR:
        if not pod_claim:
            problems.add(
                "DRA109",
                "podClaimName",
                f"missing under {RESOURCE_CLAIM_TEMPLATES_SUBDIR}/: files of claims made from a "
                "template carry the pod's claim name",
            )
        elif pod_claim != claim_dir:
            problems.add(
                "DRA110",
                "podClaimName",
                f'"{pod_claim}" but the file is in {RESOURCE_CLAIM_TEMPLATES_SUBDIR}/{claim_dir}/',
            )
        return
    if pod_claim:
        problems.add(
            "DRA109",
            "podClaimName",
            f'"{pod_claim}" is set but the file is under {RESOURCE_CLAIMS_SUBDIR}/: claims made '
            f"from a template belong in {RESOURCE_CLAIM_TEMPLATES_SUBDIR}/{pod_claim}/",
        )
    name = md.metadata.name
    if name and name != claim_dir:
        problems.add(
            "DRA110",
            "metadata.name",
            f'claim "{name}" but the file is in {RESOURCE_CLAIMS_SUBDIR}/{claim_dir}/',
        )
