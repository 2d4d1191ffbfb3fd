"""Decoding streams: the Go reference's answers, on the corpus and on generated input."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._read import _decode_fast, decode_exact
from tests import strategies
from tests.conftest import DECODE_CASES, case_input, needs_corpus, portable_prefix, wire
from tests.exploration import examples

Outcome = tuple[str, Any, Any]


def outcome(data: bytes, *, exact: bool = False) -> Outcome:
    """What decoding ``data`` gives: ("ok", version, wire dict) or ("error", message, None)."""
    try:
        md = decode_exact(data) if exact else dm.decode(data)
    except dm.DecodeError as err:
        return ("error", str(err), None)
    return ("ok", md.api_version, md.to_dict())


@needs_corpus(DECODE_CASES)
def test_corpus_case_decodes_like_go(case: dict[str, Any]) -> None:
    """Every corpus stream decodes to Go's object and version, or fails with Go's error text."""
    expect = case["expect"]
    kind, first, second = outcome(case_input(case))
    if expect["error"] is not None:
        assert kind == "error", f"Go failed with {expect['error']!r}; we decoded {second!r}"
        assert first.startswith(portable_prefix(expect["error"]))
        assert first == expect["error"]
    else:
        assert kind == "ok", f"Go decoded it; we failed with {first!r}"
        assert first == expect["version"]
        assert second == wire(expect["object"])


def test_upstream_fixtures_decode_to_the_newest_entry(upstream_fixtures: dict[str, bytes]) -> None:
    """HEAD decodes from its v1beta1 entry, v1.36.0 from its only (v1alpha1) entry."""
    head = dm.decode(upstream_fixtures["HEAD"])
    old = dm.decode(upstream_fixtures["v1.36.0"])
    assert head.api_version == dm.V1BETA1
    assert old.api_version == dm.V1ALPHA1
    assert head.to_dict() == old.to_dict()
    assert head.metadata.managed_fields[0].fields_v1 == "{}"
    assert head.requests[0].devices[0].attributes["model"].string == "LATEST-GPU-MODEL"


def test_empty_stream_is_an_error() -> None:
    """An empty or whitespace-only stream says no objects were found, like Go."""
    for data in (b"", b"  \n\t", b"]", "  "):
        with pytest.raises(dm.DecodeError, match=r"^no metadata objects found in stream$"):
            dm.decode(data)


def test_decode_error_is_a_value_error() -> None:
    """DecodeError is catchable as ValueError and as the package's root error."""
    with pytest.raises(ValueError, match="read metadata object from stream: "):
        dm.decode(b"{not-json")
    assert issubclass(dm.DecodeError, dm.DRAMetadataError)


def test_unknown_versions_are_skipped_and_listed() -> None:
    """A future version before a known one is skipped; only unknown ones list every version."""
    md = dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest("gpu"),))
    stream = dm.encode(md, ["metadata.resource.k8s.io/v2", dm.V1BETA1])
    assert dm.decode(stream).api_version == dm.V1BETA1
    only_future = dm.encode(md, ["metadata.resource.k8s.io/v2", "other.example.com/v1"])
    with pytest.raises(dm.DecodeError) as err:
        dm.decode(only_future)
    assert str(err.value) == (
        "no compatible metadata version found in stream "
        "(unknown versions: metadata.resource.k8s.io/v2, other.example.com/v1)"
    )


def test_trailing_garbage_after_the_chosen_entry_is_ignored() -> None:
    """Bytes after the first decodable entry are never looked at."""
    md = dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest("gpu"),))
    assert dm.decode(dm.encode(md, [dm.V1BETA1]) + b"{broken").requests[0].name == "gpu"


def test_str_and_buffers_are_accepted() -> None:
    """decode() takes bytes, bytearray, memoryview and str alike, and nothing else."""
    data = dm.encode(dm.DeviceMetadata(pod_claim_name="gpu"))
    for form in (data, bytearray(data), memoryview(data), data.decode()):
        assert dm.decode(form).pod_claim_name == "gpu"
    with pytest.raises(TypeError, match="takes bytes or str, not int"):
        dm.decode(5)  # type: ignore[arg-type]


def test_go_written_streams_take_the_fast_path() -> None:
    """Streams as the kubelet plugin writes them decode without the exact path."""
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid="u", generation=3),
        pod_claim_name="gpu",
        requests=(
            dm.DeviceMetadataRequest(
                "gpu",
                (
                    dm.Device(
                        "gpu.example.com",
                        "pool",
                        "gpu-0",
                        {"uuid": dm.DeviceAttribute(string="GPU-1")},
                        dm.NetworkDeviceData("net1", ("10.0.0.1/24",)),
                    ),
                ),
            ),
        ),
    )
    for versions in ([dm.V1BETA1, dm.V1ALPHA1], [dm.V1ALPHA1], [dm.V1BETA1]):
        fast = _decode_fast(dm.encode(md, versions))
        assert fast is not None
        assert fast.to_dict() == md.to_dict()


def test_duplicate_keys_merge_as_in_go() -> None:
    """A repeated nested key merges into the first value (Go), not last-wins (msgspec)."""
    stream = (
        b'{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1",'
        b'"metadata":{"name":"a","labels":{"x":"1"}},"metadata":{"uid":"u","labels":{"y":"2"}}}'
    )
    md = dm.decode(stream)
    assert (md.metadata.name, md.metadata.uid) == ("a", "u")
    assert md.metadata.labels == {"x": "1", "y": "2"}


def test_api_version_and_kind_match_case_insensitively() -> None:
    """apiVersion/kind keys match in any case (last wins); body keys are case-sensitive."""
    stream = (
        b'{"KIND":"DeviceMetadata","APIVERSION":"metadata.resource.k8s.io/v1alpha1",'
        b'"Requests":[{"name":"ignored"}],"podClaimName":"x"}'
    )
    md = dm.decode(stream)
    assert md.api_version == dm.V1ALPHA1
    assert md.requests == ()
    assert md.pod_claim_name == "x"


# --- property tests ---------------------------------------------------------------------


class Pairs(list[tuple[str, Any]]):
    """A JSON object that keeps duplicate keys and their order."""


def to_pairs(value: Any) -> Any:
    if isinstance(value, dict):
        return Pairs((key, to_pairs(item)) for key, item in value.items())
    if isinstance(value, list):
        return [to_pairs(item) for item in value]
    return value


def dump(value: Any) -> str:
    if isinstance(value, Pairs):
        return "{" + ",".join(json.dumps(k) + ":" + dump(v) for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def objects_in(value: Any) -> list[Pairs]:
    found: list[Pairs] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Pairs):
            found.append(item)
            stack.extend(v for _, v in item)
        elif isinstance(item, list):
            stack.extend(item)
    return found


@st.composite
def mutated_streams(draw: st.DrawFn) -> bytes:
    """Streams of generated metadata, then mutated the ways hostile or odd writers do."""
    md = draw(strategies.metadata)
    versions = draw(strategies.version_lists)
    if draw(st.booleans()):
        return dm.encode(md, versions)
    entries = []
    for version in versions:
        tree = to_pairs({"kind": "DeviceMetadata", "apiVersion": version, **md.to_dict()})
        for _ in range(draw(st.integers(min_value=0, max_value=3))):
            objects = objects_in(tree)
            target = draw(st.sampled_from(objects))
            action = draw(
                st.sampled_from(["duplicate", "case", "unknown", "null", "drop", "escape", "swap"])
            )
            if not target and action != "unknown":
                continue
            if action == "unknown":
                target.append((draw(st.sampled_from(["extra", "Metadata", "kInd"])), Pairs()))
                continue
            index = draw(st.integers(min_value=0, max_value=len(target) - 1))
            key, value = target[index]
            if action == "duplicate":
                other = draw(st.sampled_from(objects))
                extra = draw(st.sampled_from([value, other, [], [other], None]))
                target.append((key, copy.deepcopy(extra)))
            elif action == "case":
                target[index] = (key.upper() if draw(st.booleans()) else key.capitalize(), value)
            elif action == "null":
                target[index] = (key, None)
            elif action == "drop":
                del target[index]
            elif action == "escape" and key and ord(key[0]) < 0x10000:
                target[index] = ("\\u" + format(ord(key[0]), "04x") + key[1:], value)
            elif action == "swap":
                target.reverse()
        text = dump(tree)
        text = text.replace('"\\\\u', '"\\u')  # turn the escape action into a real JSON escape
        entries.append(text)
    return ("\n".join(entries) + "\n").encode("utf-8", "surrogatepass")


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_streams())
def test_fast_path_agrees_with_exact_path(stream: bytes) -> None:
    """Whenever the fast path answers, the exact Go-replaying path gives the same object."""
    exact = outcome(stream, exact=True)
    fast = _decode_fast(stream)
    if fast is not None:
        assert exact == ("ok", fast.api_version, fast.to_dict())
    assert outcome(stream) == exact


@settings(max_examples=examples(200), deadline=None)
@given(strategies.metadata, strategies.version_lists)
def test_encode_then_decode_round_trips(md: dm.DeviceMetadata, versions: list[str]) -> None:
    """Decoding an encoded stream gives back the object, from its first known version."""
    decoded = dm.decode(dm.encode(md, versions))
    assert decoded.to_dict() == md.to_dict()
    assert decoded.api_version == next(v for v in versions if v in (dm.V1ALPHA1, dm.V1BETA1))


@st.composite
def damaged_streams(draw: st.DrawFn) -> bytes:
    """Real streams cut short or with bytes overwritten, as torn reads and bit rot leave them."""
    data = bytearray(draw(mutated_streams()))
    if data and draw(st.booleans()):
        del data[draw(st.integers(min_value=0, max_value=len(data) - 1)) :]
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        if data:
            data[draw(st.integers(min_value=0, max_value=len(data) - 1))] = draw(
                st.sampled_from(list(b'{}[]":,\\\x00\xff\xc3 nu0-9'))
            )
    return bytes(data)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=300), damaged_streams()))
def test_any_bytes_give_an_object_or_a_decode_error(data: bytes) -> None:
    """Whatever the bytes, decode() returns a DeviceMetadata or raises DecodeError, nothing else."""
    try:
        md = dm.decode(data)
    except dm.DecodeError:
        return
    assert isinstance(md, dm.DeviceMetadata)
    assert isinstance(md.to_dict(), dict)
    assert outcome(data, exact=True) == ("ok", md.api_version, md.to_dict())


@pytest.mark.parametrize("depth", [20_000, 200_000])
def test_nesting_deeper_than_any_decoder_allows_is_a_decode_error(depth: int) -> None:
    """Objects nested past msgspec's recursion guard give Go's depth error, never RecursionError."""
    for data in (b'{"a":' * depth, b'{"a":' * depth + b"1" + b"}" * depth):
        with pytest.raises(dm.DecodeError, match="exceeded max depth"):
            dm.decode(data)
