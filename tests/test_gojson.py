"""Tests for the exact path, Go's stream decoding in Python.

That is :mod:`dra_metadata._gojson`, on Go's scanner in :mod:`dra_metadata._goscan`
and Go's time parsing in :mod:`dra_metadata._gotime`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._gojson import KNOWN_VERSIONS, RawJSON, decode_entry, decode_stream
from dra_metadata._goscan import GoDecodeError, next_value_start, read_value_end
from dra_metadata._lint import lint_exact
from tests.conftest import DECODE_CASES, case_input, needs_corpus
from tests.conftest import wire as corpus_wire
from tests.exploration import examples

# --- the conformance corpus ---------------------------------------------------


def _plain(value: object) -> object:
    """The wire value with RawJSON parsed, comparable to the corpus' JSON."""
    if isinstance(value, RawJSON):
        return json.loads(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


@needs_corpus(DECODE_CASES)
def test_corpus_decode_case(case: dict[str, Any]) -> None:
    """Every decode case of the corpus decodes, or fails, exactly as the Go reference did."""
    data = case_input(case)
    expect = case["expect"]
    if expect["error"] is None:
        body, api_version, start, end = decode_stream(data)
        assert _plain(body) == corpus_wire(expect["object"])
        assert api_version == expect["version"]
        assert 0 <= start < end <= len(data)
        return
    with pytest.raises(GoDecodeError) as caught:
        decode_stream(data)
    assert str(caught.value) == expect["error"]


# --- helpers ------------------------------------------------------------------

BETA = "metadata.resource.k8s.io/v1beta1"
AS_LAYOUT = 'as "2006-01-02T15:04:05Z07:00"'
HEAD = b'{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1"'


def entry(body: str = "") -> bytes:
    """A v1beta1 DeviceMetadata entry with the given extra members (JSON text)."""
    return HEAD + (b"," + body.encode() if body else b"") + b"}"


def wire_of(data: bytes) -> dict[str, Any]:
    """The wire body of the first decodable entry (Any: tests index into it freely)."""
    return decode_stream(data)[0]


def error_of(data: bytes) -> str:
    with pytest.raises(GoDecodeError) as caught:
        decode_stream(data)
    return str(caught.value)


# --- layer 1: reading values --------------------------------------------------


def test_invalid_utf8_becomes_one_replacement_per_bad_byte() -> None:
    """Invalid UTF-8 in a string becomes U+FFFD per bad byte, as Go's utf8.DecodeRune walks it."""
    data = HEAD + b',"podClaimName":"a\xe2\x82b\xff\xed\xa0\x80c\xc3\xa9"}'
    assert wire_of(data)["podClaimName"] == "a\ufffd\ufffdb\ufffd\ufffd\ufffd\ufffdc\u00e9"


def test_escaped_surrogates() -> None:
    """A valid escaped surrogate pair combines; lone or mismatched halves become U+FFFD."""
    text = r'"\ud83d\ude00|\ud800|\udc00|\ud800\u0041|\ud800\ud83d\ude00"'
    claim = wire_of(entry(f'"podClaimName":{text}'))["podClaimName"]
    assert claim == "\U0001f600|\ufffd|\ufffd|\ufffdA|\ufffd\U0001f600"


def test_depth_10000_is_accepted_and_10001_is_a_read_error() -> None:
    """Nesting up to depth 10000 (the entry counts) decodes; one more is 'exceeded max depth'."""
    deepest_ok = entry('"x":' + "[" * 9999 + "]" * 9999)
    assert wire_of(deepest_ok) == {"metadata": {}}
    too_deep = entry('"x":' + "[" * 10000 + "]" * 10000)
    assert error_of(too_deep) == "read metadata object from stream: exceeded max depth"
    assert (
        error_of(b"{" + b'"a":{' * 10000) == "read metadata object from stream: exceeded max depth"
    )
    assert error_of(b"[" * 10000) == "read metadata object from stream: unexpected EOF"


def test_more_quirk_ends_the_stream_at_a_closing_bracket() -> None:
    """A leading ']' or '}' makes the stream look empty; after skipped entries it ends quietly."""
    assert error_of(b"]" + entry()) == "no metadata objects found in stream"
    assert error_of(b" \n\t}" + entry()) == "no metadata objects found in stream"
    unknown = b'{"kind":"DeviceMetadata","apiVersion":"v2"}'
    assert error_of(unknown + b"\n]" + entry()) == (
        "no compatible metadata version found in stream (unknown versions: v2)"
    )
    assert next_value_start(b"  ]", 0) is None
    assert next_value_start(b"  }", 0) is None
    assert next_value_start(b" \r\n\t", 0) is None
    assert next_value_start(b"  x", 0) == 2
    assert next_value_start(b"  ,", 0) == 2


def test_values_need_no_separator_and_trailing_bytes_are_never_read() -> None:
    """Entries may touch; bytes after the first decodable entry are ignored, even garbage."""
    unknown = b'{"kind":"DeviceMetadata","apiVersion":"metadata.k8s.io/v99"}'
    data = unknown + entry('"podClaimName":"a"') + b"{broken \xff"
    wire, version, start, end = decode_stream(data)
    assert (wire["podClaimName"], version) == ("a", BETA)
    assert (start, end) == (len(unknown), len(unknown) + len(entry('"podClaimName":"a"')))


def test_top_level_delimiters_are_read_errors() -> None:
    """A comma or colon between top-level values is Go's 'looking for beginning of value'."""
    unknown = b'{"kind":"DeviceMetadata","apiVersion":"v2"}'
    expected = (
        "read metadata object from stream: invalid character ',' looking for beginning of value"
    )
    assert error_of(unknown + b"," + entry()) == expected
    assert error_of(unknown + b" , ]") == expected


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not-json", "invalid character 'n' looking for beginning of object key string"),
        (b'{"a":1,}', "invalid character '}' looking for beginning of object key string"),
        (b'{"a" 1}', "invalid character '1' after object key"),
        (b'{"a":01}', "invalid character '1' after object key:value pair"),
        (b"[1 2]", "invalid character '2' after array element"),
        (b"[1,]", "invalid character ']' looking for beginning of value"),
        (b'{"a":tru', "unexpected EOF"),
        (b'{"a":trux}', "invalid character 'x' in literal true (expecting 'e')"),
        (b'{"a":-x}', "invalid character 'x' in numeric literal"),
        (b'{"a":1.e5}', "invalid character 'e' in numeric literal"),
        (b'{"a":"\x01"}', "invalid character '\\x01' in string"),
        (b'{"a":"\t"}', "invalid character '\\t' in string"),
        (b'{"a":"\\q"}', "invalid escape sequence `\\q` in string"),
        (b'{"a":"\\u12po"}', "invalid escape sequence `\\u12po` in string"),
        (b'{"a":"\\u12', "unexpected EOF"),
        (b"\xef\xbb\xbf{}", "invalid character '\\ufeff' looking for beginning of value"),
        (b"\xff", "invalid character '\\xff' looking for beginning of value"),
        (b"\xc3\xa9", "invalid character '\u00e9' looking for beginning of value"),
        (b"/* c */{}", "invalid character '/' looking for beginning of value"),
    ],
)
def test_syntax_error_messages(data: bytes, message: str) -> None:
    """Syntax errors carry Go's scanner wording behind the read prefix."""
    assert error_of(data) == "read metadata object from stream: " + message


def test_read_value_end_returns_the_end_of_one_value() -> None:
    """read_value_end finds the end of a value and raises the read error for a broken one."""
    assert read_value_end(b'  {"a":[1,2,{"b":null}]} {"c":1}', 2) == 24
    assert read_value_end(b"123abc", 0) == 3
    assert read_value_end(b"truefalse", 0) == 4
    with pytest.raises(GoDecodeError, match=r"^read metadata object from stream: unexpected EOF$"):
        read_value_end(b'{"a":', 0)


# --- what Go's stream buffer holds ---------------------------------------------
# Go's answers below are the reference's (tests/goref runs these streams through it).

SMILE = "\U0001f600".encode()
#: A v9 entry Go skips (an unknown version), 181 bytes with its newline.
SKIPPED = (
    b'{"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v9", "p": "'
    + b"b" * 100
    + b'"}\n'
)


def key_then(pos: int, junk: bytes, before: bytes = b"") -> bytes:
    """``before``, then an object whose first key is followed by ``junk`` at byte ``pos``."""
    data = before + b'{"' + b"k" * (pos - len(before) - 3) + b'"' + junk + b': "x"}'
    assert data.index(junk, len(before)) == pos
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # The first buffer holds 64 bytes, then 128, 256 ... while one value is read.
        pytest.param(
            key_then(60, SMILE),
            "invalid character '\U0001f600' after object key",
            id="whole-before-64",
        ),
        pytest.param(
            key_then(61, SMILE), "invalid character '\\xf0' after object key", id="cut-at-64"
        ),
        pytest.param(
            key_then(63, SMILE), "invalid character '\\xf0' after object key", id="cut-at-64-last"
        ),
        pytest.param(
            key_then(64, SMILE),
            "invalid character '\U0001f600' after object key",
            id="whole-after-64",
        ),
        pytest.param(
            key_then(127, SMILE), "invalid character '\\xf0' after object key", id="cut-at-128"
        ),
        pytest.param(
            key_then(62, "\u20ac".encode()),
            "invalid character '\\xe2' after object key",
            id="cut-3-bytes",
        ),
        # A skipped entry ends at 180; from then on the buffer keeps from there: 180 + 256.
        pytest.param(
            key_then(254, SMILE, SKIPPED),
            "invalid character '\\xf0' after object key",
            id="second-cut-at-256",
        ),
        pytest.param(
            key_then(256, SMILE, SKIPPED),
            "invalid character '\U0001f600' after object key",
            id="second-whole-after-256",
        ),
        pytest.param(
            key_then(434, SMILE, SKIPPED),
            "invalid character '\\xf0' after object key",
            id="second-cut-at-436",
        ),
        pytest.param(
            key_then(436, SMILE, SKIPPED),
            "invalid character '\U0001f600' after object key",
            id="second-whole-after-436",
        ),
        # A \u escape is quoted as far as the buffer holds it, unless that may still be one.
        pytest.param(
            b'{"' + b"k" * 50 + b'": "vvv\\u1zab"}',
            "invalid escape sequence `\\u1za` in string",
            id="escape-cut",
        ),
        pytest.param(
            b'{"' + b"k" * 50 + b'": "vvvv\\u12zb"}',
            "invalid escape sequence `\\u12zb` in string",
            id="escape-prefix-reads-on",
        ),
    ],
)
def test_a_character_cut_by_the_buffer_is_quoted_as_its_first_byte(
    data: bytes, message: str
) -> None:
    """Go quotes what its 64, 128 ... byte buffer holds: a cut character as its first byte."""
    assert error_of(data) == "read metadata object from stream: " + message


def test_one_value_read_whole_quotes_the_whole_character() -> None:
    """Without a stream (Go's Unmarshal of one value) nothing is cut."""
    with pytest.raises(GoDecodeError, match="invalid character '\U0001f600' after object key"):
        decode_entry(key_then(61, SMILE))


def test_lint_words_a_later_entry_as_go_reads_it() -> None:
    """lint reads the entries after the first with Go's buffer too: 93 + 128 ends it at 221."""
    good = entry('"podClaimName": "c"') + b"\n"
    data = key_then(218, SMILE, good)
    assert len(good) == 94
    [problem] = [p for p in dm.lint(data) if p.code == "DRA108"]
    assert problem.message.endswith("invalid character '\\xf0' after object key")
    assert [p.message for p in lint_exact(data) if p.code == "DRA108"] == [problem.message]


def test_escapes_quote_characters_go_can_print_in_backquotes() -> None:
    """U+31350 (Unicode 15, unknown to Python 3.11's tables) prints as Go prints it."""
    data = b'{"a": "\\u\xf0\xb1\x8d\x90"}'
    assert error_of(data) == (
        "read metadata object from stream: invalid escape sequence `\\u\U00031350` in string"
    )


# --- layers 2 and 3: apiVersion/kind and the scheme ---------------------------


def test_type_meta_keys_match_case_insensitively_with_unicode_folds() -> None:
    """apiVersion/kind keys match under Go's EqualFold (Kelvin sign, long s); last one wins."""
    data = f'{{"\u212aIND":"Wrong","kInD":"DeviceMetadata","APIVER\u017fION":"{BETA}"}}'
    assert decode_stream(data.encode())[1] == BETA
    assert error_of(b'{"KIND":5}') == (
        "decode metadata object: couldn't get version/kind; json parse error: "
        "json: cannot unmarshal number into Go struct field .KIND of type string"
    )


def test_body_keys_are_case_sensitive() -> None:
    """The body is matched case-sensitively: 'Requests' and 'Metadata' are unknown keys."""
    assert wire_of(entry('"Requests":[{"name":"x"}],"Metadata":{"name":"m"}')) == {"metadata": {}}


def test_first_type_error_in_type_meta_wins() -> None:
    """Go keeps decoding the two-field struct and reports its first type error."""
    assert error_of(b'{"kind":[],"apiVersion":{}}').endswith(
        "json: cannot unmarshal array into Go struct field .kind of type string"
    )


def test_missing_kind_is_checked_before_missing_version() -> None:
    """Kind is checked first; the prefix names the group/version only when it has a version."""
    assert error_of(b"{}") == "decode metadata object: Object 'Kind' is missing in '{}'"
    assert error_of(b"null") == "decode metadata object: Object 'Kind' is missing in 'null'"
    raw = b'{"apiVersion":"metadata.k8s.io/v99"}'
    assert (
        error_of(raw) == f"decode metadata.k8s.io/v99: Object 'Kind' is missing in '{raw.decode()}'"
    )
    raw = b'{"kind":"DeviceMetadata","apiVersion":"g/"}'
    assert error_of(raw) == (
        f"decode metadata object: Object 'apiVersion' is missing in '{raw.decode()}'"
    )


def test_group_version_parsing() -> None:
    """Two slashes are rejected; '/v2' is the core group's 'v2'."""
    assert error_of(b'{"kind":"K","apiVersion":"a/b/c"}') == (
        "decode metadata object: unexpected GroupVersion string: a/b/c"
    )
    assert error_of(b'{"kind":"K","apiVersion":"/v2"}') == (
        "no compatible metadata version found in stream (unknown versions: v2)"
    )


def test_unknown_versions_are_listed_in_order_with_duplicates() -> None:
    """Unregistered group/versions are skipped and listed in stream order, duplicates kept."""
    entries = [
        b'{"kind":"DeviceMetadata","apiVersion":"v2"}',
        b'{"kind":"Anything","apiVersion":"metadata.resource.k8s.io/v9"}',
        b'{"kind":"DeviceMetadata","apiVersion":"v2"}',
    ]
    assert error_of(b"\n".join(entries)) == (
        "no compatible metadata version found in stream "
        "(unknown versions: v2, metadata.resource.k8s.io/v9, v2)"
    )


def test_registered_versions_with_unknown_kinds_are_fatal() -> None:
    """A registered group/version (including core v1) with an unknown kind is fatal."""
    assert error_of(b'{"kind":"DeviceMetadata","apiVersion":"v1"}') == (
        'decode v1: no kind "DeviceMetadata" is registered for version "v1" '
        'in scheme "pkg/runtime/scheme.go:111"'
    )
    assert error_of(f'{{"kind":"Foo","apiVersion":"{BETA}"}}'.encode()) == (
        f'decode {BETA}: no kind "Foo" is registered for version "{BETA}" '
        'in scheme "pkg/runtime/scheme.go:111"'
    )


def test_meta_kinds_fail_in_conversion() -> None:
    """Unversioned and meta kinds decode, then cannot be converted into DeviceMetadata."""
    assert error_of(b'{"kind":"Status","apiVersion":"x.example/v1"}') == (
        "convert x.example/v1, Kind=Status: converting (v1.Status) "
        "to (metadata.DeviceMetadata): unknown conversion"
    )
    assert error_of(f'{{"kind":"ListOptions","apiVersion":"{BETA}"}}'.encode()) == (
        f"convert {BETA}, Kind=ListOptions: converting (v1.ListOptions) "
        "to (metadata.DeviceMetadata): unknown conversion"
    )


def test_non_object_top_level_values() -> None:
    """Arrays, numbers, strings and booleans at top level fail identification."""
    message = error_of(b"[{}]")
    assert message.startswith(
        "decode metadata object: couldn't get version/kind; json parse error: "
        "json: cannot unmarshal array into Go value of type struct { APIVersion string"
    )
    assert "cannot unmarshal bool into" in error_of(b"true")
    assert "cannot unmarshal string into" in error_of(b'"x"')


def test_both_versions_are_known() -> None:
    """v1alpha1 and v1beta1 decode to the same wire body and report their own version."""
    for version in KNOWN_VERSIONS:
        data = f'{{"kind":"DeviceMetadata","apiVersion":"{version}","podClaimName":"p"}}'.encode()
        assert decode_entry(data) == ({"metadata": {}, "podClaimName": "p"}, version)
    assert decode_entry(b'{"kind":"DeviceMetadata","apiVersion":"v2"}') == "v2"


# --- layer 4: the body --------------------------------------------------------


def test_duplicate_struct_keys_merge() -> None:
    """A second 'metadata' object is decoded into the first: its keys survive."""
    wire = wire_of(entry('"metadata":{"name":"a","uid":"u"},"metadata":{"name":"b"}'))
    assert wire["metadata"] == {"name": "b", "uid": "u"}


def test_duplicate_map_keys_merge_and_map_values_are_fresh() -> None:
    """Maps merge across duplicate keys; a repeated attribute name is replaced, not merged."""
    body = (
        '"metadata":{"labels":{"b":"1"},"labels":{"a":"2"}},'
        '"requests":[{"devices":[{"attributes":{"x":{"int":1,"ints":[1]},"x":{"bool":true}}}]}]'
    )
    wire = wire_of(entry(body))
    assert wire["metadata"] == {"labels": {"a": "2", "b": "1"}}
    assert wire["requests"] == [
        {
            "name": "",
            "devices": [
                {"driver": "", "pool": "", "name": "", "attributes": {"x": {"bool": True}}}
            ],
        }
    ]


def test_duplicate_slices_decode_element_wise_into_the_old_backing_array() -> None:
    """Request i of a second array merges into request i; hidden old elements come back."""
    body = (
        '"requests":[{"name":"a","devices":[{"driver":"d"}]},{"name":"b"},{"name":"c"}],'
        '"requests":[{"devices":[]}],'
        '"requests":[{},{"devices":[{"name":"n"}]}]'
    )
    assert wire_of(entry(body))["requests"] == [
        {"name": "a"},
        {"name": "b", "devices": [{"driver": "", "pool": "", "name": "n"}]},
    ]
    assert "requests" not in wire_of(entry('"requests":[{"name":"a"}],"requests":[]'))


def test_null_rules() -> None:
    """null clears pointers, slices and maps and leaves strings, ints, bools and structs alone."""
    body = (
        '"podClaimName":"p","podClaimName":null,'
        '"metadata":{"name":"n","name":null,"generation":3,"generation":null,'
        '"labels":{"a":"b"},"labels":null,"finalizers":["f"],"finalizers":null},'
        '"metadata":null,'
        '"requests":[{"devices":[{"driver":null,"networkData":{"ips":["i"]},"networkData":null,'
        '"attributes":{"k":null,"s":{"strings":["x",null]}}}]}]'
    )
    assert wire_of(entry(body)) == {
        "metadata": {"name": "n", "generation": 3},
        "requests": [
            {
                "name": "",
                "devices": [
                    {
                        "driver": "",
                        "pool": "",
                        "name": "",
                        "attributes": {"k": {}, "s": {"strings": ["x", ""]}},
                    }
                ],
            }
        ],
    }


def test_pointer_scalars_are_kept_even_when_zero() -> None:
    """int/bool/string/version pointers are written when set, even to 0, false or ''."""
    attribute = '{"int":0,"bool":false,"string":"","version":""}'
    body = f'"requests":[{{"devices":[{{"attributes":{{"a":{attribute}}}}}]}}]'
    device = wire_of(entry(body))["requests"][0]["devices"][0]
    assert device["attributes"] == {"a": {"int": 0, "bool": False, "string": "", "version": ""}}


def test_empty_network_data_object_is_kept() -> None:
    """networkData given as {} is a non-nil pointer and re-encodes as {}."""
    device = wire_of(entry('"requests":[{"devices":[{"networkData":{}}]}]'))["requests"]
    assert device == [
        {"name": "", "devices": [{"driver": "", "pool": "", "name": "", "networkData": {}}]}
    ]


@pytest.mark.parametrize(
    ("literal", "result"),
    [
        ("9223372036854775807", 9223372036854775807),
        ("-9223372036854775808", -9223372036854775808),
        ("-0", None),
        ("9223372036854775808", "number 9223372036854775808"),
        ("-9223372036854775809", "number -9223372036854775809"),
        ("18446744073709551615", "number 18446744073709551615"),
        ("1.0", "number 1.0"),
        ("2E+1", "number 2E+1"),
        ("1" * 5000, "number " + "1" * 5000),
        ('"1"', "string"),
        ("true", "bool"),
    ],
)
def test_int64_bounds(literal: str, result: object) -> None:
    """Only integer literals within int64 decode; anything else is Go's type error."""
    data = entry(f'"metadata":{{"generation":{literal}}}')
    if isinstance(result, str):
        assert error_of(data) == (
            f"decode {BETA}: json: cannot unmarshal {result} into Go struct field "
            "ObjectMeta.metadata.generation of type int64"
        )
    elif result is None:
        assert wire_of(data) == {"metadata": {}}
    else:
        assert wire_of(data) == {"metadata": {"generation": result}}


def test_type_error_paths_name_the_innermost_struct() -> None:
    """The error names the innermost Go struct and the JSON field path without indexes or keys."""
    data = entry('"requests":[{"devices":[{"attributes":{"m":{"ints":[1,"x"]}}}]}]')
    assert error_of(data) == (
        f"decode {BETA}: json: cannot unmarshal string into Go struct field "
        "DeviceAttribute.requests.devices.attributes.ints of type int64"
    )
    alpha = data.replace(b"v1beta1", b"v1alpha1").replace(
        b'"requests":[{', b'"requests":"x","r":[{'
    )
    assert error_of(alpha).endswith(
        "cannot unmarshal string into Go struct field DeviceMetadata.requests "
        "of type []v1alpha1.DeviceMetadataRequest"
    )


def test_first_type_error_is_reported_but_a_time_error_aborts_at_once() -> None:
    """Type errors are collected (first wins); a timestamp's own error wins because it aborts."""
    both = entry('"podClaimName":1,"metadata":{"generation":"x"}')
    assert error_of(both).endswith(
        "cannot unmarshal number into Go struct field DeviceMetadata.podClaimName of type string"
    )
    with_time = entry('"podClaimName":1,"metadata":{"creationTimestamp":"nope"}')
    assert error_of(with_time) == (
        f'decode {BETA}: parsing time "nope" as "2006-01-02T15:04:05Z07:00": '
        'cannot parse "nope" as "2006"'
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"2025-10-21T08:38:17Z"', "2025-10-21T08:38:17Z"),
        ('"2025-10-21T08:38:17.999999999Z"', "2025-10-21T08:38:17Z"),
        ('"2025-10-21T08:38:17+02:30"', "2025-10-21T06:08:17Z"),
        ('"2025-10-21T8:38:17,5-01:00"', "2025-10-21T09:38:17Z"),
        ('"0000-01-01T00:00:00+01:00"', "-0001-12-31T23:00:00Z"),
        ('"9999-12-31T23:30:00-24:00"', "10000-01-01T23:30:00Z"),
        ('"0001-01-01T00:00:00Z"', None),
        ("null", None),
    ],
)
def test_timestamps_normalise_to_utc_seconds(value: str, expected: str | None) -> None:
    """Timestamps parse like time.Parse(RFC3339) and re-encode in UTC; the zero time is omitted."""
    meta = wire_of(entry(f'"metadata":{{"creationTimestamp":{value}}}'))["metadata"]
    assert meta == ({} if expected is None else {"creationTimestamp": expected})


def test_zero_pointer_timestamps_encode_as_null() -> None:
    """A *Time holding the zero time re-encodes as null; a JSON null makes it absent."""
    body = (
        '"metadata":{"deletionTimestamp":"0001-01-01T01:00:00+01:00",'
        '"managedFields":[{"time":null,"manager":"m"}]}'
    )
    assert wire_of(entry(body))["metadata"] == {
        "deletionTimestamp": None,
        "managedFields": [{"manager": "m"}],
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            '"not-a-time"',
            f'parsing time "not-a-time" {AS_LAYOUT}: cannot parse "not-a-time" as "2006"',
        ),
        ('"2025-13-01T00:00:00Z"', 'parsing time "2025-13-01T00:00:00Z": month out of range'),
        ('"2025-02-29T00:00:00Z"', 'parsing time "2025-02-29T00:00:00Z": day out of range'),
        (
            '"2025-10-21T08:38:17z"',
            f'parsing time "2025-10-21T08:38:17z" {AS_LAYOUT}: cannot parse "z" as "Z07:00"',
        ),
        (
            '"2025-10-21"',
            'parsing time "2025-10-21" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"',
        ),
        ('"2025-10-21T08:38:17Zx"', 'parsing time "2025-10-21T08:38:17Zx": extra text: "x"'),
        (
            '"2025-10-21T08:38:17+25:00"',
            'parsing time "2025-10-21T08:38:17+25:00": time zone offset hour out of range',
        ),
        ('"2025-10-21T08:38:60Z"', 'parsing time "2025-10-21T08:38:60Z": second out of range'),
        (
            '"2025-10-21T08:38:17\u00e9"',
            f'parsing time "2025-10-21T08:38:17\\xc3\\xa9" {AS_LAYOUT}: '
            'cannot parse "\\xc3\\xa9" as "Z07:00"',
        ),
        ("5", "json: cannot unmarshal number into Go value of type string"),
        ("{}", "json: cannot unmarshal object into Go value of type string"),
    ],
)
def test_timestamp_errors(value: str, message: str) -> None:
    """Timestamp errors are Go's time.ParseError (or the string unmarshal error) texts."""
    assert (
        error_of(entry(f'"metadata":{{"creationTimestamp":{value}}}'))
        == f"decode {BETA}: {message}"
    )


def test_fields_v1_keeps_raw_json_compacted_and_html_escaped() -> None:
    """fieldsV1 is raw JSON, compacted and HTML-escaped as Go's encoder writes it."""
    body = '"metadata":{"managedFields":[{"fieldsV1":{ "f:a" : [ 1 , "<&> \\u0041" ] }}]}'
    fields = wire_of(entry(body))["metadata"]["managedFields"][0]["fieldsV1"]
    assert isinstance(fields, RawJSON)
    assert fields == '{"f:a":[1,"\\u003c\\u0026\\u003e \\u0041"]}'


def test_wire_key_order_follows_go_struct_order() -> None:
    """Keys come out in Go struct order, map keys sorted by byte order."""
    body = (
        '"requests":[{"devices":[{"networkData":{"ips":["i"],"interfaceName":"e"},'
        '"attributes":{"b":{"ints":[1],"int":2},"a":{"bool":true}},"name":"n","pool":"p","driver":"d"}],'
        '"name":"r"}],"podClaimName":"c","metadata":{"uid":"u","name":"x","generation":2}'
    )
    wire = wire_of(entry(body))
    assert list(wire) == ["metadata", "podClaimName", "requests"]
    assert list(wire["metadata"]) == ["name", "uid", "generation"]
    device = wire["requests"][0]["devices"][0]
    assert list(device) == ["driver", "pool", "name", "attributes", "networkData"]
    assert list(device["attributes"]) == ["a", "b"]
    assert list(device["attributes"]["b"]) == ["int", "ints"]
    assert list(device["networkData"]) == ["interfaceName", "ips"]


# --- robustness ---------------------------------------------------------------

_SEEDS = [case_input(case)[:4000] for case in DECODE_CASES[:60]] or [entry()]
_JSONISH = st.sampled_from(
    list(b'{}[],:"\\ \t\n0123456789-.eEtrufalsn\x00\x7f\xc3\xa9\xff\xed\xa0')
)


def _decode_quietly(data: bytes) -> None:
    try:
        result = decode_stream(data)
    except GoDecodeError:
        return
    assert isinstance(result, tuple)
    assert isinstance(result[0], dict)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_raise_go_decode_error(data: bytes) -> None:
    """Any byte string yields a result tuple or a GoDecodeError, never another exception."""
    _decode_quietly(data)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(_SEEDS),
    st.lists(
        st.tuples(st.integers(0, 4000), st.integers(0, 8), st.lists(_JSONISH, max_size=6)),
        max_size=6,
    ),
)
def test_mutated_corpus_streams_only_raise_go_decode_error(
    seed: bytes, edits: list[tuple[int, int, list[int]]]
) -> None:
    """Corpus streams with bytes replaced, cut or inserted still only raise GoDecodeError."""
    data = bytearray(seed)
    for position, removed, inserted in edits:
        at = position % (len(data) + 1)
        data[at : at + removed] = bytes(inserted)
    _decode_quietly(bytes(data))
