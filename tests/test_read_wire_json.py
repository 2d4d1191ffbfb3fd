"""The wire form as `show` prints it: exactly json.dumps(md.to_dict(), indent=2), made cheaply."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._encode import wire_json
from tests import strategies
from tests.exploration import examples

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=12,
)


def dumps(md: dm.DeviceMetadata) -> bytes:
    """What show printed before it had its own writer."""
    return json.dumps(md.to_dict(), indent=2, ensure_ascii=False).encode("utf-8", "surrogateescape")


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.metadata)
def test_wire_json_is_json_dumps_of_to_dict(md: dm.DeviceMetadata) -> None:
    """For any metadata object the bytes equal json.dumps(to_dict(), indent=2), ensure_ascii off."""
    assert b"".join(wire_json(md)) == dumps(md)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.metadata, st.lists(json_values, min_size=1, max_size=3))
def test_wire_json_writes_fields_v1_as_json_dumps_does(
    md: dm.DeviceMetadata, values: list[object]
) -> None:
    """Raw fieldsV1 values, however nested or duplicated, are written as json.dumps writes them."""
    managed = tuple(
        dm.ManagedFieldsEntry(manager="m", fields_v1=msgspec.json.encode(value).decode())
        for value in values
    )
    md = msgspec.structs.replace(
        md, metadata=msgspec.structs.replace(md.metadata, managed_fields=managed)
    )
    assert b"".join(wire_json(md)) == dumps(md)


def test_wire_json_of_merged_metadata_has_no_sources(sample_root: Path) -> None:
    """A merged read prints Go's merged object: empty metadata, no sources."""
    md = dm.read_resource_claim("train", "accel", root=str(sample_root))
    text = b"".join(wire_json(md))
    assert text == dumps(md)
    assert json.loads(text)["metadata"] == {}
    assert b"sources" not in text
