"""Encoding streams byte for byte as the Go kubelet plugin writes them."""

from __future__ import annotations

import json
import os

import pytest

import dra_metadata as dm


def test_upstream_fixtures_round_trip_byte_for_byte(upstream_fixtures: dict[str, bytes]) -> None:
    """Decoding an upstream fixture and encoding it in the file's versions gives the same bytes."""
    for name, data in upstream_fixtures.items():
        versions = [json.loads(line)["apiVersion"] for line in _objects(data)]
        assert dm.encode(dm.decode(data), versions) == data, name


def _objects(data: bytes) -> list[str]:
    decoder = json.JSONDecoder()
    text, pos, found = data.decode(), 0, []
    while pos < len(text.rstrip()):
        obj, end = decoder.raw_decode(text, pos)
        found.append(json.dumps(obj))
        pos = end + 1
    return found


def test_escaping_and_map_order_match_go() -> None:
    """HTML characters and U+2028/9 are escaped, other non-ASCII raw, map keys sorted."""
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(labels={"b": "1", "a": "<&>"}),
        requests=(
            dm.DeviceMetadataRequest(
                "r",
                (
                    dm.Device(
                        "d",
                        "p",
                        "n",
                        {
                            "z": dm.DeviceAttribute(string='é\u2028\x01\n"\\'),
                            "a": dm.DeviceAttribute(int=1),
                        },
                    ),
                ),
            ),
        ),
    )
    text = dm.encode(md, [dm.V1BETA1]).decode()
    assert '"a": "\\u003c\\u0026\\u003e"' in text
    assert '"string": "é\\u2028\\u0001\\n\\"\\\\"' in text
    assert text.index('"a": {') < text.index('"z": {')
    assert text.index('"a": "') < text.index('"b": "1"')
    assert text.endswith("}\n")
    assert text.startswith(
        '{\n  "kind": "DeviceMetadata",\n  "apiVersion": "metadata.resource.k8s.io/v1beta1",\n'
    )


def test_default_versions_are_v1beta1_then_v1alpha1() -> None:
    """Without versions, the stream holds v1beta1 then v1alpha1, each followed by a newline."""
    data = dm.encode(dm.DeviceMetadata())
    assert [json.loads(o)["apiVersion"] for o in _objects(data)] == [dm.V1BETA1, dm.V1ALPHA1]
    assert data.count(b"\n}\n") == 2


@pytest.mark.parametrize("versions", [[], "metadata.resource.k8s.io/v1beta1", ["a/b/c"], [""]])
def test_bad_version_lists_are_refused(versions: object) -> None:
    """An empty list, a bare string or a malformed apiVersion raises."""
    with pytest.raises((ValueError, TypeError)):
        dm.encode(dm.DeviceMetadata(), versions)  # type: ignore[arg-type]


def test_lone_surrogates_are_written_as_go_writes_invalid_utf8() -> None:
    """A name decoded from non-UTF-8 bytes (surrogate escapes) becomes U+FFFD, not an error."""
    name = os.fsdecode(b"caf\xe9")
    md = dm.DeviceMetadata(metadata=dm.ObjectMeta(name=name))
    data = dm.encode(md, [dm.V1BETA1])
    assert b'"name": "caf\\ufffd"' in data
    assert dm.decode(data).metadata.name == "caf\ufffd"
    assert md.to_dict()["metadata"] == {"name": name}


@pytest.mark.parametrize("spelled", ["\x00dra-metadata-raw-0", "\x00dra-metadata-raw-7"])
def test_a_string_that_spells_the_raw_marker_stays_a_string(spelled: str) -> None:
    """Raw fieldsV1 goes where its own marker is, never in place of a value that looks like one."""
    entry = dm.ManagedFieldsEntry(manager="m", fields_v1='{"f:a":{}}')
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", managed_fields=(entry,)),
        requests=(
            dm.DeviceMetadataRequest(
                "r",
                (dm.Device("d.x", "p", "n", attributes={"a": dm.DeviceAttribute(string=spelled)}),),
            ),
        ),
    )
    data = dm.encode(md)
    back = dm.decode(data)
    assert back.requests[0].devices[0].attributes == {"a": dm.DeviceAttribute(string=spelled)}
    assert back.metadata.managed_fields[0].fields_v1 == '{"f:a":{}}'
    assert dm.encode(back) == data
