"""The compiled acceptor passes only what the models find no error in, and passes valid objects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings

import dra_metadata as dm
from dra_metadata import _validate_models
from dra_metadata._validate import _accepts, _validate_wire, validate_wire
from tests import strategies
from tests.conftest import SAMPLE_ROOT, VALIDATED_CASES, needs_corpus, valid_wire_object
from tests.exploration import examples
from tests.test_validate import DERIVED_CASES, UPSTREAM_CASES, WIRE, _mutated

REPO = Path(__file__).resolve().parents[1]


def _models_answer(md: dm.DeviceMetadata) -> object:
    """What validate() gave before the acceptor: the models on wire_body(), or the error."""
    try:
        return _validate_wire(md.wire_body())
    except Exception as exc:
        return type(exc)


def _validate_answer(md: dm.DeviceMetadata) -> object:
    try:
        return dm.validate(md)
    except Exception as exc:
        return type(exc)


# --------------------------------------------------------------------------- soundness


@needs_corpus(VALIDATED_CASES)
def test_acceptor_passes_no_corpus_object_go_finds_errors_in(case: dict[str, Any]) -> None:
    """No corpus object with a Go validation error passes the acceptor, strict or lax."""
    obj = case["expect"]["object"]
    if case["expect"]["validation"]:
        assert not _accepts(obj, strict=True)
        assert not _accepts(obj, strict=False)


@pytest.mark.parametrize(
    "mutate",
    [case[1] for case in DERIVED_CASES if case[2]] + [case[1] for case in UPSTREAM_CASES],
    ids=[case[0] for case in DERIVED_CASES if case[2]] + [case[0] for case in UPSTREAM_CASES],
)
def test_acceptor_fails_every_broken_rule(mutate: Any) -> None:
    """Each rule case with an error in Go is failed by the acceptor, so the models report it."""
    obj = _mutated(mutate)
    assert not _accepts(obj, strict=True)
    assert not _accepts(obj, strict=False)


@settings(max_examples=examples(400), suppress_health_check=[HealthCheck.too_slow])
@given(WIRE)
def test_what_the_acceptor_passes_the_models_pass(obj: dict[str, Any]) -> None:
    """Any wire object the acceptor passes, strict or lax, has no error for the models."""
    for strict in (True, False):
        if _accepts(obj, strict=strict):
            assert _validate_wire(obj) == []


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(strategies.metadata)
def test_validate_answers_as_the_models_on_wire_body(md: dm.DeviceMetadata) -> None:
    """validate(md) equals the models' answer on md.wire_body(), for any generated object."""
    assert dm.validate(md) == _validate_wire(md.wire_body())


DEVICE = dm.Device("gpu.example.com", "worker-0", "gpu-0")
ODD_OBJECTS: list[tuple[str, dm.DeviceMetadata]] = [
    ("a string where an int belongs", dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest(
        "r", (msgspec.structs.replace(DEVICE, attributes={"k": dm.DeviceAttribute(int="x")}),)),))),  # type: ignore[arg-type]  # a wrong type on purpose
    ("a numeric string where an int belongs", dm.DeviceMetadata(requests=(
        dm.DeviceMetadataRequest("r", (msgspec.structs.replace(
            DEVICE, attributes={"k": dm.DeviceAttribute(int="5")}),)),))),  # type: ignore[arg-type]  # a wrong type on purpose
    ("NaN where an int belongs", dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest(
        "r", (msgspec.structs.replace(
            DEVICE, attributes={"k": dm.DeviceAttribute(int=float("nan"))}),)),))),  # type: ignore[arg-type]  # a wrong type on purpose
    ("a float with no fraction where an int belongs",
     dm.DeviceMetadata(metadata=dm.ObjectMeta(generation=2.0))),  # type: ignore[arg-type]  # a wrong type on purpose
    ("a negative float generation",
     dm.DeviceMetadata(metadata=dm.ObjectMeta(generation=-2.0))),  # type: ignore[arg-type]  # a wrong type on purpose
    ("an int label key", dm.DeviceMetadata(metadata=dm.ObjectMeta(labels={1: "a"}))),  # type: ignore[dict-item]  # a wrong type on purpose
    ("lists where tuples belong", dm.DeviceMetadata(requests=[  # type: ignore[arg-type]  # a wrong type on purpose
        dm.DeviceMetadataRequest("r", [DEVICE])])),  # type: ignore[arg-type]  # a wrong type on purpose
    ("non-ASCII strings near the limit", dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest(
        "r", (msgspec.structs.replace(DEVICE, attributes={
            "k": dm.DeviceAttribute(strings=("é" * 32, "é" * 33))}),)),))),
    ("a lone surrogate in a name", dm.DeviceMetadata(requests=(dm.DeviceMetadataRequest(
        "r\udcff", (DEVICE,)),))),
    ("a lone surrogate in a strings element", dm.DeviceMetadata(requests=(
        dm.DeviceMetadataRequest("r", (msgspec.structs.replace(
            DEVICE, attributes={"k": dm.DeviceAttribute(strings=("\udcff" * 22,))}),)),))),
    ("an object msgspec cannot convert", dm.DeviceMetadata(
        metadata=dm.ObjectMeta(labels={"a": object()}))),  # type: ignore[dict-item]  # a wrong type on purpose
    ("a merged read", dm.MergedDeviceMetadata(pod_claim_name="gpu", sources=(
        dm.MetadataSource("/p", "gpu.example.com", dm.V1BETA1, 1, "u", "c", "n"),))),
]  # fmt: skip


@pytest.mark.parametrize("md", [case[1] for case in ODD_OBJECTS], ids=[c[0] for c in ODD_OBJECTS])
def test_odd_objects_built_in_code_get_the_models_answer(md: dm.DeviceMetadata) -> None:
    """Wrong types, NaN, int keys, surrogates: validate() answers (or raises) as the models did."""
    assert _validate_answer(md) == _models_answer(md)


def test_the_null_attribute_error_is_the_models() -> None:
    """The constant for a null attribute is what the model finds in an empty attribute."""
    assert (
        _validate_models.DeviceAttribute.model_validate({}).field_errors
        == _validate_models._NULL_ATTRIBUTE_ERRORS
    )


# --------------------------------------------------------------------------- the fast path is taken


def _sample_files() -> list[Path]:
    return sorted(SAMPLE_ROOT.rglob("*.json"))


@pytest.mark.parametrize("path", _sample_files(), ids=lambda p: p.parent.name + "/" + p.name)
def test_every_sample_file_passes_the_acceptor(path: Path) -> None:
    """Each valid sample file passes the acceptor: validate() answers without the models."""
    md = dm.read_file(path)
    assert _accepts(msgspec.to_builtins(md), strict=False)


def test_the_upstream_valid_object_passes_the_acceptor() -> None:
    """The upstream tests' valid object, network data included, passes strict and lax."""
    assert _accepts(valid_wire_object(), strict=True)
    assert _accepts(valid_wire_object(), strict=False)


def test_full_object_meta_passes_the_acceptor() -> None:
    """Owner references, managed fields, labels and timestamps pass when valid."""
    obj = valid_wire_object()
    obj["metadata"].update(
        uid="u",
        creationTimestamp="2008-01-01T01:01:01Z",
        labels={"k": "v"},
        ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}],
        finalizers=["f"],
        managedFields=[{"manager": "m", "operation": "Apply", "fieldsV1": {"f:a": {}}}],
    )
    assert _accepts(obj, strict=True)
    assert validate_wire(obj) == []


def test_a_valid_file_is_validated_without_the_models() -> None:
    """A fresh process imports no model for a valid file; an invalid object builds them."""
    path = _sample_files()[0]
    code = (
        "import sys\n"
        "import dra_metadata as dm\n"
        f"assert dm.validate(dm.read_file({str(path)!r})) == []\n"
        "print('dra_metadata._validate_models' in sys.modules)\n"
        "assert dm.validate(dm.DeviceMetadata(pod_claim_name='X'))\n"
        "from dra_metadata import _validate_models\n"
        "print(_validate_models.DeviceMetadata.__pydantic_complete__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert done.stdout.split() == ["False", "True"]


def _strings_element(text: str) -> dict[str, Any]:
    obj = valid_wire_object()
    obj["requests"][0]["devices"][0]["attributes"] = {"k": {"strings": [text]}}
    return obj


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        ("a" * 64, True),
        ("a" * 65, False),
        ("日" * 21, True),  # 63 bytes of three-byte characters
        ("日" * 22, False),  # 66 bytes
        ("é" * 22, False),  # 44 bytes: valid, but left to the models
        ("\U0001f600" * 16, True),  # 64 bytes of four-byte characters
        ("\U0001f600" * 17, False),
        ("a" * 60 + "日", False),  # 63 bytes, but no tier proves it: left to the models
    ],
    ids=["64 ascii", "65 ascii", "21 bmp", "22 bmp", "22 two-byte", "16 astral", "17 astral",
         "mixed"],
)  # fmt: skip
def test_byte_limits_pass_text_that_surely_fits(text: str, accepted: bool) -> None:
    """A strings element passes when its characters prove it fits 64 bytes; the answer holds."""
    obj = _strings_element(text)
    assert _accepts(obj, strict=True) is accepted
    fits = len(text.encode()) <= 64
    assert (validate_wire(obj) == []) is fits
