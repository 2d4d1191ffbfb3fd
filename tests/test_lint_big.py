"""Linting large and tricky streams: the fast path gives exactly the exact path's answers."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._lint import lint, lint_exact
from tests.conftest import SAMPLE_ROOT
from tests.exploration import examples
from tests.test_decode import damaged_streams, mutated_streams


def outcome(data: bytes, *, exact: bool) -> list[str] | tuple[str, str]:
    """lint's problems as strings, or the DecodeError text."""
    try:
        found = (lint_exact if exact else lint)(data, path="resourceclaims/c/r/x.io-metadata.json")
    except dm.DecodeError as err:
        return ("error", str(err))
    return [str(problem) for problem in found]


def compact(stream: bytes) -> bytes:
    """The stream with each entry on one line, no indentation."""
    entries = []
    pos = 0
    text = stream.decode()
    decoder = json.JSONDecoder()
    while pos < len(text):
        _value, end = decoder.raw_decode(text, pos)
        entries.append(msgspec.json.format(text[pos:end].encode(), indent=0))
        pos = end + 1
    return b"\n".join(entries) + b"\n"


#: Found by this test on 3.12: two attributes differ, and the first difference named
#: must be the one of Go's (sorted) key order, "" before the other key.
MAP_ORDER_CASE = (
    b'{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1","metadata":{},'
    b'"requests":[{"name":"r","devices":[{"driver":"gpu.example.com","pool":"0","name":"0",'
    b'"attributes":{"\\ud9c5\\udd30e":{"bool":false},"":{"bool":false}}}]}]}\n'
    b'{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1alpha1","metadata":{},'
    b'"requests":[{"name":"r","devices":[{"driver":"gpu.example.com","pool":"0","name":"0",'
    b'"attributes":{"\\ud9c5\\udd30e":{},"":{"bool":null}}}]}]}\n'
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(mutated_streams(), damaged_streams()))
@example(MAP_ORDER_CASE)
def test_fast_lint_agrees_with_the_exact_path(data: bytes) -> None:
    """On generated, mutated and damaged streams lint() answers exactly as lint_exact()."""
    assert outcome(data, exact=False) == outcome(data, exact=True)


@pytest.mark.parametrize("path", sorted(SAMPLE_ROOT.rglob("*-metadata.json")), ids=str)
def test_compact_and_indented_samples_lint_alike(path: Path) -> None:
    """A sample file, compacted, has the same problems as written, by both paths."""
    data = path.read_bytes()
    want = outcome(data, exact=True)
    assert outcome(data, exact=False) == want
    assert outcome(compact(data), exact=False) == outcome(compact(data), exact=True) == want


def entry(body: str) -> bytes:
    """One compact v1beta1 entry with ``body`` as its members after kind and apiVersion."""
    return (
        f'{{"kind":"DeviceMetadata","apiVersion":"{dm.V1BETA1}",'
        f'"metadata":{{"name":"c","generation":1}},{body}}}'
    ).encode()


@pytest.mark.parametrize(
    "body",
    [
        '"requests":[{"name":"r","name" :"r"}]',  # a repeat spaced from its colon
        '"requests":[{"name":"r\\":","name":"r"}]',  # an escaped quote before a colon
        '"requests":[{"name":"r","devices":[{"driver":"x.io","pool":"p","name":"d",'
        '"attributes":{"a":{"int":1},"a":{"int":1}}}]}]',  # a repeated attribute
        '"requests" :[{"name":"r"}],"requests":[{"name":"r"}]',
    ],
)
def test_repeated_keys_are_found_however_they_are_written(body: str) -> None:
    """A key written twice is DRA116 whatever the spacing and the strings around it."""
    data = entry(body)
    found = outcome(data, exact=False)
    assert found == outcome(data, exact=True)
    assert any(" DRA116 " in f" {line}" for line in found), found
