"""The generated JSON Schemas: committed, valid, and in agreement with validate_wire."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from dra_metadata._formats import utf8_len
from dra_metadata._schema import json_schema, main, schema_file_name, schema_text
from dra_metadata._validate import validate_wire
from dra_metadata._versions import API_VERSIONS, V1ALPHA1, V1BETA1, version_of
from tests.conftest import VALIDATED_CASES, needs_corpus, valid_wire_object
from tests.exploration import examples

REPO = Path(__file__).resolve().parents[1]


@cache
def _v1beta1_validator() -> Draft202012Validator:
    return Draft202012Validator(json_schema(V1BETA1))


@pytest.fixture
def validator() -> Draft202012Validator:
    """A validator for the v1beta1 schema (``format`` is an annotation, not asserted)."""
    return _v1beta1_validator()


def _typed(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "kind": "DeviceMetadata", "apiVersion": V1BETA1}


# Where Go counts UTF-8 bytes and JSON Schema's maxLength counts characters.
_BYTE_LIMITS = {"interfaceName": 256, "hardwareAddress": 128}
_STRINGS_ELEMENT_LIMIT = 64


def _bytes_and_characters_disagree(obj: Any) -> bool:
    """Whether some byte-limited string fits in characters but not in bytes."""

    def over(value: object, limit: int) -> bool:
        return isinstance(value, str) and len(value) <= limit < utf8_len(value)

    def walk(node: Any) -> Iterator[bool]:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _BYTE_LIMITS:
                    yield over(value, _BYTE_LIMITS[key])
                if key == "strings" and isinstance(value, list):
                    yield any(over(element, _STRINGS_ELEMENT_LIMIT) for element in value)
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    return any(walk(obj))


# --------------------------------------------------------------------------- files


@pytest.mark.parametrize("version", API_VERSIONS)
def test_committed_schema_is_current(version: str) -> None:
    """schemas/<group>_<version>.json equals what the models generate now."""
    committed = REPO / "schemas" / schema_file_name(version)
    assert committed.read_text(encoding="utf-8") == schema_text(version)


def test_main_writes_then_checks(tmp_path: Path) -> None:
    """main writes both files; --check passes on them and fails once one is stale or gone."""
    assert main([str(tmp_path)]) == 0
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == [
        "metadata.resource.k8s.io_v1alpha1.json",
        "metadata.resource.k8s.io_v1beta1.json",
    ]
    assert main(["--check", str(tmp_path)]) == 0
    stale = tmp_path / names[1]
    stale.write_text(stale.read_text(encoding="utf-8") + " ", encoding="utf-8")
    assert main(["--check", str(tmp_path)]) == 1
    stale.unlink()
    assert main(["--check", str(tmp_path)]) == 1


def test_schema_text_is_sorted_two_space_json() -> None:
    """The committed form is sorted keys, 2-space indent and one final newline."""
    text = schema_text(V1BETA1)
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


# --------------------------------------------------------------------------- shape


@pytest.mark.parametrize("version", API_VERSIONS)
def test_schema_is_valid_draft_2020_12(version: str) -> None:
    """Each schema is a valid draft 2020-12 schema with its $schema, $id and title."""
    schema = json_schema(version)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert str(schema["$id"]).endswith(schema_file_name(version))
    assert version in str(schema["title"])


def test_versions_differ_only_in_api_version() -> None:
    """The schemas of all API versions are the same apart from the version they name."""
    texts = {version: json.dumps(json_schema(version), sort_keys=True) for version in API_VERSIONS}
    assert len(set(texts.values())) == len(API_VERSIONS)
    neutral = {text.replace(version_of(version), "VERSION") for version, text in texts.items()}
    assert len(neutral) == 1


def test_kind_and_api_version_are_required_constants(validator: Draft202012Validator) -> None:
    """kind must be DeviceMetadata and apiVersion this schema's version; both are required."""
    assert validator.is_valid({"kind": "DeviceMetadata", "apiVersion": V1BETA1})
    assert not validator.is_valid({"kind": "DeviceMetadata"})
    assert not validator.is_valid({"apiVersion": V1BETA1})
    assert not validator.is_valid({"kind": "Other", "apiVersion": V1BETA1})
    assert not validator.is_valid({"kind": "DeviceMetadata", "apiVersion": V1ALPHA1})


def test_short_version_names_are_accepted_and_unknown_ones_rejected() -> None:
    """json_schema takes "v1beta1" as well as the full apiVersion, and nothing else."""
    assert json_schema("v1beta1") == json_schema(V1BETA1)
    with pytest.raises(ValueError, match="unknown apiVersion"):
        json_schema("metadata.resource.k8s.io/v2")


def test_every_described_field_has_a_description() -> None:
    """The fields the protocol defines carry descriptions in the schema."""
    defs = cast("dict[str, Any]", json_schema(V1BETA1)["$defs"])
    for model, fields in {
        "Device": ["driver", "pool", "name", "attributes", "networkData"],
        "DeviceAttribute": ["int", "bool", "string", "version", "ints", "bools", "strings"],
        "NetworkDeviceData": ["interfaceName", "ips", "hardwareAddress"],
        "DeviceMetadataRequest": ["name", "devices"],
    }.items():
        assert defs[model]["description"]
        for field in fields:
            assert defs[model]["properties"][field]["description"], (model, field)


# --------------------------------------------------------------------------- rules

Mutation = Callable[[dict[str, Any]], object]


_base = valid_wire_object


def _dev(obj: dict[str, Any]) -> dict[str, Any]:
    device: dict[str, Any] = obj["requests"][0]["devices"][0]
    return device


def _attr(**member: Any) -> Mutation:
    return lambda o: _dev(o)["attributes"].update(k=member)


def _net(**fields: Any) -> Mutation:
    return lambda o: _dev(o)["networkData"].update(fields)


def _numbered(count: int) -> dict[str, Any]:
    return {f"a{i}": {"int": i} for i in range(count)}


INVALID: list[tuple[str, Mutation]] = [
    ("podClaimName not a label", lambda o: o.update(podClaimName="Bad")),
    ("podClaimName empty", lambda o: o.update(podClaimName="")),
    ("podClaimName 64 characters", lambda o: o.update(podClaimName="a" * 64)),
    ("request name missing", lambda o: o["requests"][0].pop("name")),
    ("request name empty", lambda o: o["requests"][0].update(name="")),
    ("driver missing", lambda o: _dev(o).pop("driver")),
    ("driver not a subdomain", lambda o: _dev(o).update(driver="gpu..example")),
    ("driver 64 characters", lambda o: _dev(o).update(driver="a" * 64)),
    ("driver with dotless i", lambda o: _dev(o).update(driver="\u0131ntel.com")),
    ("pool missing", lambda o: _dev(o).pop("pool")),
    ("pool empty segment", lambda o: _dev(o).update(pool="worker-0/")),
    ("pool upper case", lambda o: _dev(o).update(pool="Worker")),
    ("pool 254 characters", lambda o: _dev(o).update(pool="a" * 127 + "/" + "a" * 126)),
    ("name missing", lambda o: _dev(o).pop("name")),
    ("name with dots", lambda o: _dev(o).update(name="gpu.0")),
    ("name 64 characters", lambda o: _dev(o).update(name="a" * 64)),
    ("33 attributes", lambda o: _dev(o).update(attributes=_numbered(33))),
    ("attribute with no member", _attr()),
    ("attribute with an empty list only", _attr(ints=[])),
    ("attribute with two members", _attr(int=1, bool=True)),
    ("attribute with two list members", _attr(ints=[1], strings=["a"])),
    ("strings element 65 characters", _attr(strings=["a" * 65])),
    ("interface name 257 characters", _net(interfaceName="a" * 257)),
    ("hardware address 129 characters", _net(hardwareAddress="a" * 129)),
    ("17 IPs", _net(ips=[f"10.0.0.{i}/8" for i in range(17)])),
    ("duplicate IPs", _net(ips=["a", "b", "a"])),
    ("negative generation", lambda o: o["metadata"].update(generation=-1)),
    ("managed fields entry without operation", lambda o: o["metadata"].update(
        managedFields=[{"manager": "m"}])),
    ("managed fields operation not supported", lambda o: o["metadata"].update(
        managedFields=[{"operation": "Patch"}])),
]  # fmt: skip

VALID: list[tuple[str, Mutation]] = [
    ("base object", lambda o: None),
    ("caseless driver", lambda o: _dev(o).update(driver="Gpu.Example.COM")),
    ("driver with the Kelvin sign", lambda o: _dev(o).update(driver="\u212a8s.io")),
    ("pool of several segments", lambda o: _dev(o).update(pool="a.b/c-d/e")),
    ("an empty list beside one member", _attr(int=0, ints=[])),
    ("empty string member", _attr(string="")),
    ("scalar string of 100 characters", _attr(string="x" * 100)),
    ("32 attributes", lambda o: _dev(o).update(attributes=_numbered(32))),
    ("16 IPs", _net(ips=[f"10.0.0.{i}/8" for i in range(16)])),
    ("any attribute key", lambda o: _dev(o).update(attributes={"!!": {"bool": False}})),
    ("generation 0", lambda o: o["metadata"].update(generation=0)),
    ("no metadata, no requests", lambda o: (o.pop("metadata"), o.pop("requests"))),
    ("unknown keys", lambda o: (o.update(extra=[1]), _dev(o).update(vendor={"x": 1}))),
    ("managed fields with raw fieldsV1", lambda o: o["metadata"].update(
        managedFields=[{"operation": "Apply", "fieldsV1": {"f:spec": {}}}])),
]  # fmt: skip


def _apply(mutate: Mutation) -> dict[str, Any]:
    obj = copy.deepcopy(_base())
    mutate(obj)
    return obj


@pytest.mark.parametrize("mutate", [c[1] for c in INVALID], ids=[c[0] for c in INVALID])
def test_schema_rejects_what_validation_rejects(
    validator: Draft202012Validator, mutate: Mutation
) -> None:
    """Each rule validate_wire enforces is also in the schema."""
    obj = _apply(mutate)
    assert validate_wire(obj) != []
    assert not validator.is_valid(obj)


@pytest.mark.parametrize("mutate", [c[1] for c in VALID], ids=[c[0] for c in VALID])
def test_schema_accepts_what_validation_accepts(
    validator: Draft202012Validator, mutate: Mutation
) -> None:
    """The schema adds no rule that validate_wire does not have."""
    obj = _apply(mutate)
    assert validate_wire(obj) == []
    assert validator.is_valid(obj), [error.message for error in validator.iter_errors(obj)]


def test_bytes_and_characters_are_the_known_difference(validator: Draft202012Validator) -> None:
    """A strings element of 33 two-byte characters fails Go's 64 bytes but fits maxLength 64."""
    obj = _apply(_attr(strings=["é" * 33]))
    assert _bytes_and_characters_disagree(obj)
    assert validate_wire(obj) != []
    assert validator.is_valid(obj)


# --------------------------------------------------------------------------- agreement


@needs_corpus(VALIDATED_CASES)
def test_schema_agrees_with_validation_on_corpus(
    validator: Draft202012Validator, case: dict[str, Any]
) -> None:
    """Every corpus object is schema-valid iff validate_wire finds no error.

    Where a string fits a limit in characters but not in Go's bytes, the schema
    (which counts characters) is looser: validation must then find the error.
    """
    instance = _typed(case["expect"]["object"])
    if _bytes_and_characters_disagree(instance):
        assert validate_wire(instance) != []
    else:
        assert validator.is_valid(instance) is (validate_wire(instance) == [])


# No "\n" in names: python-jsonschema runs patterns with Python's re, whose "$" also
# matches before a final newline (ECMA-262's does not).
NAME = st.text(alphabet="ab0-._/AZ\u212a\u0131é", max_size=12) | st.sampled_from(
    ["gpu-0", "gpu.example.com", "a" * 63, "a" * 64, "worker-0/x", ""]
)
SHORT = st.text(alphabet="aé", max_size=3)
ATTRIBUTE = st.fixed_dictionaries(
    {},
    optional={
        "int": st.integers(),
        "bool": st.booleans(),
        "string": SHORT,
        "version": SHORT,
        "ints": st.lists(st.integers(), max_size=2),
        "bools": st.lists(st.booleans(), max_size=2),
        "strings": st.lists(st.text(alphabet="aé", min_size=30, max_size=70), max_size=2),
        "versions": st.lists(SHORT, max_size=2),
    },
)
NETWORK = st.fixed_dictionaries(
    {},
    optional={
        "interfaceName": st.sampled_from(["", "eth0", "a" * 256, "a" * 257, "é" * 200]),
        "ips": st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=5)
        | st.lists(st.integers(0, 99).map(str), min_size=15, max_size=18, unique=True),
        "hardwareAddress": st.sampled_from(["", "02:42", "a" * 128, "a" * 129]),
    },
)
DEVICE = st.fixed_dictionaries(
    {},
    optional={
        "driver": NAME,
        "pool": NAME,
        "name": NAME,
        "attributes": st.dictionaries(SHORT, ATTRIBUTE, max_size=3)
        | st.dictionaries(st.text(min_size=4), st.just({"int": 1}), min_size=31, max_size=34),
        "networkData": NETWORK,
    },
)
WIRE = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "generation": st.integers(-2, 2),
                "managedFields": st.lists(
                    st.fixed_dictionaries(
                        {}, optional={"operation": st.sampled_from(["Apply", "Update", "", "x"])}
                    ),
                    max_size=2,
                ),
            },
        ),
        "podClaimName": NAME,
        "requests": st.lists(
            st.fixed_dictionaries(
                {}, optional={"name": NAME, "devices": st.lists(DEVICE, max_size=2)}
            ),
            max_size=2,
        ),
    },
)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(WIRE)
def test_schema_agrees_with_validation_on_generated_objects(obj: dict[str, Any]) -> None:
    """Generated objects are schema-valid iff valid, bytes-versus-characters cases aside."""
    instance = _typed(obj)
    if _bytes_and_characters_disagree(instance):
        return
    schema_valid = _v1beta1_validator().is_valid(instance)
    assert schema_valid is (validate_wire(instance) == [])
