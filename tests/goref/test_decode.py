"""Decode and validation, differential: generated streams through our decode() and Go's.

Every example goes to the harness (``DecodeMetadataFromStream`` with validation and
the decoded version recorded) and to ``dm.decode()``/``dm.validate()``; the answers
are compared field by field (tests/goref/compare.py). ``DRA_METADATA_GOREF_EXAMPLES``
sets how many streams a run generates (default 2,000). A stream we disagree on is
saved in tests/goref/regressions/ and replayed by every later run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.errors import InvalidArgument

import dra_metadata as dm
from tests import strategies
from tests.conftest import DECODE_CASES, case_input
from tests.exploration import examples
from tests.goref.compare import REGRESSIONS, decode_differences, save_regression
from tests.goref.harness import Goref
from tests.test_decode import damaged_streams, mutated_streams

pytestmark = pytest.mark.goref

#: How many generated streams a run compares (at least 2,000 in CI; ten times as many
#: when exploring, tests/exploration.py).
EXAMPLES = int(os.environ.get("DRA_METADATA_GOREF_EXAMPLES", str(examples(2000))))

V1BETA1 = "metadata.resource.k8s.io/v1beta1"


def _entry(body: str, version: str = V1BETA1, kind: str = "DeviceMetadata") -> str:
    return f'{{"kind": "{kind}", "apiVersion": "{version}", {body}}}'


@st.composite
def edge_streams(draw: st.DrawFn) -> bytes:
    """The boundaries: int64 edges, deep nesting, invalid UTF-8, unknown versions, case."""
    choice = draw(
        st.sampled_from(["int", "deep", "utf8", "versions", "case", "boundary", "buffer"])
    )
    if choice == "int":
        number = draw(
            st.sampled_from(
                ["9223372036854775807", "9223372036854775808", "-9223372036854775808",
                 "-9223372036854775809", "1e3", "1.0", "-0", "01", "0x10", "1E400"]
            )
        )  # fmt: skip
        where = draw(st.sampled_from(["generation", "attr"]))
        if where == "generation":
            text = f'"metadata": {{"name": "c", "generation": {number}}}'
        else:
            text = (
                '"requests": [{"name": "r", "devices": [{"driver": "d.example.com", "pool": "p",'
                f' "name": "n", "attributes": {{"a": {{"int": {number}}}}}}}]}}]'
            )
        return _entry(text).encode()
    if choice == "deep":
        depth = draw(st.sampled_from([1, 100, 9_998, 9_999, 10_000, 10_001, 10_002]))
        field = draw(st.sampled_from(["x", "metadata", "requests"]))
        return _entry(f'"{field}": ' + "[" * depth + "]" * depth).encode()
    if choice == "utf8":
        junk = draw(
            st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"])
        )
        key = draw(st.sampled_from([b"name", b"podClaimName"]))
        return (
            b'{"kind": "DeviceMetadata", "apiVersion": "'
            + V1BETA1.encode()
            + b'", "'
            + (
                b'metadata": {"name": "a' + junk + b'"}}'
                if key == b"name"
                else b'podClaimName": "x' + junk + b'"}'
            )
        )
    if choice == "versions":
        versions = draw(
            st.lists(
                st.sampled_from(
                    ["metadata.resource.k8s.io/v1", "metadata.resource.k8s.io/v2", V1BETA1,
                     "metadata.resource.k8s.io/v1alpha1", "v1", "other.io/v1beta1", "",
                     "metadata.resource.k8s.io/", "metadata.resource.k8s.io/__internal"]
                ),
                min_size=1, max_size=4,
            )
        )  # fmt: skip
        kind = draw(st.sampled_from(["DeviceMetadata", "Status", "APIVersions", "Other", ""]))
        return "\n".join(_entry('"podClaimName": "a"', v, kind) for v in versions).encode()
    if choice == "case":
        k = draw(st.sampled_from(["kind", "KIND", "Kind", "k\u0131nd", "\u212aind"]))
        a = draw(st.sampled_from(["apiVersion", "APIVERSION", "apiversion", "apiVer\u017fion"]))
        p = draw(st.sampled_from(["podClaimName", "PodClaimName", "podclaimname"]))
        return f'{{"{k}": "DeviceMetadata", "{a}": "{V1BETA1}", "{p}": "a", "{p}": "b"}}'.encode()
    if choice == "buffer":
        return draw(buffer_streams())
    # boundary: names at their length limits, around them.
    length = draw(st.sampled_from([62, 63, 64, 252, 253, 254]))
    name = "a" * length
    target = draw(st.sampled_from(["podClaimName", "request", "driver", "attr", "pool"]))
    device: dict[str, object] = {"driver": "d.example.com", "pool": "p", "name": "n"}
    request: dict[str, object] = {"name": "r", "devices": [device]}
    body: dict[str, object] = {"podClaimName": "c", "requests": [request]}
    if target == "podClaimName":
        body["podClaimName"] = name
    elif target == "request":
        request["name"] = name
    elif target == "driver":
        device["driver"] = name[:-4] + ".com"
    elif target == "pool":
        device["pool"] = "/".join([name[:63]] * (length // 63 + 1))[:length]
    else:
        device["attributes"] = {f"x.io/{name[: length - 5]}": {"bool": True}}
    return _entry(json.dumps(body)[1:-1]).encode()


@st.composite
def buffer_streams(draw: st.DrawFn) -> bytes:
    """A character Go's stream buffer may cut: after skipped entries, near a 2**k boundary.

    Go reads a stream in chunks (64 bytes, then more), and quotes a syntax error's
    character from what it holds: the positions here land on and around the ends.
    """
    skipped = b"".join(
        b'{"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v9", "p": "'
        + b"b" * draw(st.integers(0, 3000))
        + b'"}'
        + draw(st.sampled_from([b"", b"\n", b" \n "]))
        for _ in range(draw(st.integers(0, 3)))
    )
    junk = draw(st.sampled_from(["\U0001f600", "\u20ac", "\u00e9", "\U00031350"])).encode()
    shape = draw(
        st.sampled_from(
            [b'{"KEY"JUNK: 1}', b'{"KEY": 1 JUNK}', b'{"KEY": tJUNK}', b'{"KEY": -JUNK}',
             b'{"KEY": [1 JUNK]}', b'{"KEY": JUNK}', b'{JUNK"KEY": 1}', b'{"KEY": "\\uJUNK"}',
             b'{"KEY": "\\u1JUNK"}', b'{"KEY": "\\u12zJUNK"}']
        )
    )  # fmt: skip
    head = len(skipped) + shape.index(b"JUNK") - 3  # where the junk is with an empty key
    end = draw(st.sampled_from([64, 128, 256, 512, 1024, 2048, 4096]))
    target = draw(st.sampled_from([end, len(skipped) + end, head + draw(st.integers(0, 600))]))
    key = b"k" * max(0, target - draw(st.integers(0, 6)) - head)
    return skipped + shape.replace(b"KEY", key).replace(b"JUNK", junk)


STREAMS = st.one_of(
    mutated_streams(),
    mutated_streams(),
    damaged_streams(),
    edge_streams(),
    st.builds(lambda md, vs: dm.encode(md, vs), strategies.metadata, strategies.version_lists),
    st.binary(max_size=120),
)


def _shrunk() -> bool:
    """Whether this is Hypothesis's final run of a failing example (the one to keep)."""
    try:
        return current_build_context().is_final
    except InvalidArgument:  # not in a Hypothesis test
        return False


def _check(goref: Goref, data: bytes) -> None:
    found = decode_differences(data, goref.decode(data), jsonv2=goref.jsonv2)
    if found:
        path: Path | str = "not saved: a run against the next release"
        if goref.rewrite is None and _shrunk():
            path = save_regression(data)
        elif goref.rewrite is None:
            path = "not saved: not Hypothesis's final example"
        pytest.fail(f"differs from Go (saved as {path}):\n" + "\n".join(found), pytrace=False)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
@given(STREAMS)
def test_generated_streams_decode_and_validate_as_go(goref: Goref, stream: bytes) -> None:
    """Each generated stream: the same object, version, validation errors and error as Go."""
    _check(goref, stream)


def _regressions() -> list[Path]:
    return sorted(REGRESSIONS.glob("*.bin")) if REGRESSIONS.is_dir() else []


@pytest.mark.parametrize("path", _regressions(), ids=lambda p: p.stem)
def test_saved_regressions_decode_as_go(goref: Goref, path: Path) -> None:
    """Every stream a run once disagreed on agrees now."""
    _check(goref, path.read_bytes())


def test_corpus_streams_decode_as_go(goref: Goref) -> None:
    """The shipped corpus's streams, with today's reference: our answers equal Go's."""
    failures = {}
    for case in DECODE_CASES:
        data = case_input(case)
        found = decode_differences(data, goref.decode(data), jsonv2=goref.jsonv2)
        if found:
            failures[case["id"]] = found
    assert not failures, failures


def test_the_harness_runs_the_pinned_module(goref: Goref) -> None:
    """The binary was built with the module (and Go) its module file pins, as the docs say."""
    from tests.goref.harness import MODULE, release

    built = goref.versions()
    assert built[MODULE] == release().version
    assert built["go"] == (release().toolchain or built["go"])


def test_the_shipped_corpus_holds_the_pinned_modules_answers(goref_root: Goref) -> None:
    """tests/data/conformance answers as the harness does now (scripts/regen-conformance)."""
    from tests.goref.regen import regenerate

    _, changed = regenerate(goref_root)
    assert not changed, "run scripts/regen-conformance:\n" + "\n".join(changed)
