"""validate_wire and the format checks: the Go reference's v1.37 rules, paths and texts."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_metadata import _formats
from dra_metadata._field_error import VALUE_OMITTED, ErrorType, FieldError
from dra_metadata._validate import validate_wire
from dra_metadata._validate_models import (
    DeviceAttribute,
    DeviceMetadata,
    NetworkDeviceData,
    dedupe,
)
from tests.conftest import VALIDATED_CASES, needs_corpus, valid_wire_object
from tests.exploration import examples

# --------------------------------------------------------------------------- corpus


corpus = needs_corpus(VALIDATED_CASES)

GO_TYPE_NAMES = {
    ErrorType.REQUIRED: "FieldValueRequired",
    ErrorType.INVALID: "FieldValueInvalid",
    ErrorType.TOO_LONG: "FieldValueTooLong",
    ErrorType.TOO_MANY: "FieldValueTooMany",
    ErrorType.DUPLICATE: "FieldValueDuplicate",
    ErrorType.NOT_SUPPORTED: "FieldValueNotSupported",
}


def _expected_field_errors(case: dict[str, Any]) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = case["expect"]["validationErrors"]
    for error in errors:
        if error["type"] == "non-field-error":
            pytest.skip(f"not a field error (an undecodable stream): {error['error']}")
    return errors


@corpus
def test_corpus_fields_and_types_match_go(case: dict[str, Any]) -> None:
    """Every corpus object gets the same (field, error type) pairs and texts as in Go."""
    expected = _expected_field_errors(case)
    got = validate_wire(case["expect"]["object"])
    assert {(e.field, e.type.value) for e in got} == {(e["field"], e["typeText"]) for e in expected}
    assert Counter(str(e) for e in got) == Counter(case["expect"]["validation"])


@corpus
def test_corpus_error_records_match_go(case: dict[str, Any]) -> None:
    """Type, bad value, detail and origin of every error equal Go's field.Error."""
    expected = _expected_field_errors(case)
    got = validate_wire(case["expect"]["object"])
    assert Counter(
        (e.field, GO_TYPE_NAMES[e.type], json.dumps(e.bad_value), e.detail, e.origin) for e in got
    ) == Counter(
        (e["field"], e["type"], json.dumps(e["badValue"]), e["detail"], e.get("origin", ""))
        for e in expected
    )


def _order_class(text: str) -> str:
    # Go visits a device's attributes in random order: one class for all of them.
    field = text.split(": ", 1)[0]
    head, sep, _ = field.partition(".attributes[")
    return f"{head}.attributes[*]" if sep else text


def _collapsed(texts: list[str]) -> list[str]:
    classes = [_order_class(text) for text in texts]
    return [c for i, c in enumerate(classes) if i == 0 or c != classes[i - 1]]


@corpus
def test_corpus_error_order_matches_go(case: dict[str, Any]) -> None:
    """Errors come in Go's order; only a device's attribute errors may be permuted."""
    _expected_field_errors(case)
    got = [str(e) for e in validate_wire(case["expect"]["object"])]
    assert _collapsed(got) == _collapsed(case["expect"]["validation"])


# --------------------------------------------------------------------------- PROTOCOL §7.3


_base = valid_wire_object


Mutation = Callable[[dict[str, Any]], object]


def _device(obj: dict[str, Any]) -> dict[str, Any]:
    device: dict[str, Any] = obj["requests"][0]["devices"][0]
    return device


def _mutated(mutate: Mutation) -> dict[str, Any]:
    obj = _base()
    mutate(obj)
    return obj


DEV = "requests[0].devices[0]"

UPSTREAM_CASES: list[tuple[str, Mutation, str, ErrorType]] = [
    ("invalid pod claim name", lambda o: o.update(podClaimName="INVALID"), "podClaimName",
     ErrorType.INVALID),
    ("request name required", lambda o: o["requests"][0].update(name=""), "requests[0].name",
     ErrorType.REQUIRED),
    ("driver required", lambda o: _device(o).update(driver=""), f"{DEV}.driver",
     ErrorType.REQUIRED),
    ("driver too long", lambda o: _device(o).update(driver="a" * 64), f"{DEV}.driver",
     ErrorType.TOO_LONG),
    ("invalid pool", lambda o: _device(o).update(pool="worker-0/"), f"{DEV}.pool",
     ErrorType.INVALID),
    ("invalid device name", lambda o: _device(o).update(name="GPU-0"), f"{DEV}.name",
     ErrorType.INVALID),
    ("too many attributes",
     lambda o: _device(o).update(attributes={f"attribute{i}": {"int": i} for i in range(33)}),
     f"{DEV}.attributes", ErrorType.TOO_MANY),
]  # fmt: skip


def test_upstream_valid_object_has_no_errors() -> None:
    """The upstream validation test's base object is valid."""
    assert validate_wire(_base()) == []


@pytest.mark.parametrize(
    ("mutate", "field", "error_type"),
    [case[1:] for case in UPSTREAM_CASES],
    ids=[case[0] for case in UPSTREAM_CASES],
)
def test_upstream_validation_cases(mutate: Mutation, field: str, error_type: ErrorType) -> None:
    """Each upstream DeviceMetadata validation case yields exactly one error, at its path."""
    errors = validate_wire(_mutated(mutate))
    assert [(e.field, e.type) for e in errors] == [(field, error_type)]


# --------------------------------------------------------------------------- PROTOCOL §7.4

ModelType = type[DeviceAttribute] | type[NetworkDeviceData]
MODEL_CASES: list[tuple[str, ModelType, dict[str, Any], list[str]]] = [
    ("attribute valid", DeviceAttribute, {"string": "LATEST-GPU-MODEL"}, []),
    ("no value", DeviceAttribute, {}, [""]),
    ("multiple values", DeviceAttribute, {"bool": True, "string": "LATEST-GPU-MODEL"}, [""]),
    ("network valid", NetworkDeviceData,
     {"interfaceName": "eth0", "ips": ["192.0.2.5/24"], "hardwareAddress": "02:42:ac:11:00:02"},
     []),
    ("interface name too long", NetworkDeviceData, {"interfaceName": "a" * 257},
     ["interfaceName"]),
    ("too many IPs", NetworkDeviceData, {"ips": [f"192.0.2.{i}/24" for i in range(17)]},
     ["ips"]),
    ("duplicate IPs", NetworkDeviceData, {"ips": ["192.0.2.5/24", "192.0.2.5/24"]}, ["ips[1]"]),
    ("hardware address too long", NetworkDeviceData, {"hardwareAddress": "a" * 129},
     ["hardwareAddress"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "wire", "fields"),
    [case[1:] for case in MODEL_CASES],
    ids=[case[0] for case in MODEL_CASES],
)
def test_upstream_attribute_and_network_cases(
    model: ModelType, wire: dict[str, Any], fields: list[str]
) -> None:
    """Each k8s.io/api attribute/network case gives its one error, relative to the model."""
    assert [e.field for e in model.model_validate(wire).field_errors] == fields


# --------------------------------------------------------------------------- derived rules

LABEL_DETAIL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
ONE_OF = (
    "must specify one of: `int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, "
    "`versions`"
)
EXACTLY_ONE_OF = (
    "must specify exactly one of: `int`, `bool`, `string`, `version`, `ints`, `bools`, "
    "`strings`, `versions`"
)
ATTR = f"{DEV}.attributes"
NET = f"{DEV}.networkData"


def _attributes(**attributes: Any) -> Mutation:
    return lambda o: _device(o).update(attributes=attributes)


def _network(**network: Any) -> Mutation:
    return lambda o: _device(o).update(networkData=network)


DERIVED_CASES: list[tuple[str, Mutation, list[str]]] = [
    ("256-byte interface name is fine", _network(interfaceName="a" * 256), []),
    ("257-byte interface name of 129 characters", _network(interfaceName="é" * 129),
     [f"{NET}.interfaceName: Too long: may not be more than 256 bytes"]),
    ("16 IPs are fine", _network(ips=[f"10.0.0.{i}/24" for i in range(16)]), []),
    ("every repeated IP is reported at its index", _network(ips=["a", "a", "b", "a"]),
     [f'{NET}.ips[1]: Duplicate value: "a"', f'{NET}.ips[3]: Duplicate value: "a"']),
    ("too many IPs skip the duplicate check", _network(ips=["a"] * 17),
     [f"{NET}.ips: Too many: 17: must have at most 16 items"]),
    ("empty network fields are skipped", _network(interfaceName="", ips=[], hardwareAddress=""),
     []),
    ("129-byte hardware address", _network(hardwareAddress="a" * 129),
     [f"{NET}.hardwareAddress: Too long: may not be more than 128 bytes"]),
    ("IP and MAC syntax are not checked", _network(ips=["not an ip"], hardwareAddress="zz"), []),
    ("254-byte driver breaks the format and the length",
     lambda o: _device(o).update(driver="a" * 254),
     [f'{DEV}.driver: Invalid value: "{"a" * 254}": must be no more than 253 bytes',
      f"{DEV}.driver: Too long: may not be more than 63 characters"]),
    ("driver is caseless", lambda o: _device(o).update(driver="Gpu.Example.COM"), []),
    ("driver may hold the Kelvin sign, Go folds it with k",
     lambda o: _device(o).update(driver="\u212a8s.io"), []),
    ("64-character device name", lambda o: _device(o).update(name="x" * 64),
     [f'{DEV}.name: Invalid value: "{"x" * 64}": must be no more than 63 bytes']),
    ("64-character upper-case device name breaks two rules",
     lambda o: _device(o).update(name="X" * 64),
     [f'{DEV}.name: Invalid value: "{"X" * 64}": must be no more than 63 bytes',
      f'{DEV}.name: Invalid value: "{"X" * 64}": {LABEL_DETAIL}']),
    ("device name with dots", lambda o: _device(o).update(name="gpu.0"),
     [f'{DEV}.name: Invalid value: "gpu.0": must not contain dots']),
    ("pool segment errors show the segment",
     lambda o: _device(o).update(pool="a/Not_Valid"),
     [f'{DEV}.pool: Invalid value: "Not_Valid": segment 1: a lowercase RFC 1123 subdomain must '
      "consist of lower case alphanumeric characters, '-' or '.', and must start and end with "
      "an alphanumeric character (e.g. 'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ("empty pool segments show the whole pool", lambda o: _device(o).update(pool="/a//"),
     [f'{DEV}.pool: Invalid value: "/a//": segment {i}: must not be empty' for i in (0, 2, 3)]),
    ("all three identity fields missing", lambda o: o["requests"][0].update(devices=[{}]),
     [f"{DEV}.driver: Required value", f"{DEV}.pool: Required value",
      f"{DEV}.name: Required value"]),
    ("empty podClaimName is validated", lambda o: o.update(podClaimName=""),
     [f'podClaimName: Invalid value: "": {LABEL_DETAIL}']),
    ("null podClaimName is absent", lambda o: o.update(podClaimName=None), []),
    ("an empty list member is not set", _attributes(k={"ints": []}),
     [f'{ATTR}[k]: Invalid value: "": {ONE_OF}']),
    ("an empty list beside a scalar is fine", _attributes(k={"int": 1, "ints": []}), []),
    ("zero, false and the empty string are set", _attributes(k={"int": 0, "bool": False,
                                                                "string": ""}),
     [f'{ATTR}[k]: Invalid value: "{{int, bool, string}}": {EXACTLY_ONE_OF}']),
    ("a null attribute has no member", _attributes(k=None),
     [f'{ATTR}[k]: Invalid value: "": {ONE_OF}']),
    ("a 65-byte strings element", _attributes(k={"strings": ["ok", "x" * 65]}),
     [f"{ATTR}[k].strings[1]: Too long: may not be more than 64 bytes"]),
    ("strings elements are checked besides the union rule",
     _attributes(k={"string": "s", "strings": ["é" * 33]}),
     [f'{ATTR}[k]: Invalid value: "{{string, strings}}": {EXACTLY_ONE_OF}',
      f"{ATTR}[k].strings[0]: Too long: may not be more than 64 bytes"]),
    ("scalar string and version limits are not enforced",
     _attributes(s={"string": "x" * 100}, v={"version": "not-semver"}, vs={"versions": ["?"]}),
     []),
    ("attribute keys are not validated", _attributes(**{"!!": {"int": 1}}), []),
    ("over 32 attributes skip the attribute checks",
     _attributes(**{f"a{i}": {} for i in range(33)}),
     [f"{ATTR}: Too many: 33: must have at most 32 items"]),
    ("32 attributes are fine", _attributes(**{f"a{i}": {"bool": True} for i in range(32)}), []),
    ("negative generation", lambda o: o["metadata"].update(generation=-1),
     ["metadata.generation: Invalid value: -1: must be greater than or equal to 0"]),
    ("zero generation is not checked", lambda o: o["metadata"].update(generation=0), []),
    ("managed fields need an operation",
     lambda o: o["metadata"].update(managedFields=[{"manager": "m"}, {"operation": "Patch"},
                                                   {"operation": "Apply"}]),
     ["metadata.managedFields[0].operation: Required value",
      'metadata.managedFields[1].operation: Unsupported value: "Patch": '
      'supported values: "Apply", "Update"']),
    ("names, uids and labels are not validated",
     lambda o: o["metadata"].update(name="!!", uid="", labels={"@": "#"}), []),
    ("kind and apiVersion are not validated",
     lambda o: o.update(kind="Nope", apiVersion="x/y/z"), []),
    ("request names have no format", lambda o: o["requests"][0].update(name="Any Thing/!"), []),
    ("unknown keys are ignored",
     lambda o: (o.update(extra={"a": [1]}), _device(o).update(vendorKey=None)), []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "texts"), [case[1:] for case in DERIVED_CASES], ids=[c[0] for c in DERIVED_CASES]
)
def test_derived_rules(mutate: Mutation, texts: list[str]) -> None:
    """Edge cases of the rules (PROTOCOL §2, §7.4 derived) give exactly Go's errors."""
    assert [str(e) for e in validate_wire(_mutated(mutate))] == texts


def test_error_records_carry_go_bad_values_and_origins() -> None:
    """Too long omits the value, Too many holds the count, Required holds ""."""
    obj = _base()
    obj["requests"][0]["name"] = ""
    _device(obj).update(driver="a" * 64, attributes={f"a{i}": {"int": i} for i in range(40)})
    assert validate_wire(obj) == [
        FieldError("requests[0].name", ErrorType.REQUIRED, ""),
        FieldError(
            f"{DEV}.driver", ErrorType.TOO_LONG, VALUE_OMITTED,
            "may not be more than 63 characters", "maxLength",
        ),
        FieldError(
            f"{DEV}.attributes", ErrorType.TOO_MANY, 40, "must have at most 32 items",
            "maxProperties",
        ),
    ]  # fmt: skip


def test_errors_follow_go_order_across_objects() -> None:
    """Metadata, podClaimName, then requests and devices in index order, fields in struct order."""
    obj = _base()
    obj["podClaimName"] = "X"
    obj["metadata"]["generation"] = -2
    second = copy.deepcopy(_device(obj))
    second.update(name="", networkData={"ips": ["a", "a"]}, pool="")
    obj["requests"][0]["devices"].append(second)
    obj["requests"].insert(0, {"name": ""})
    assert [e.field for e in validate_wire(obj)] == [
        "metadata.generation",
        "podClaimName",
        "requests[0].name",
        "requests[1].devices[1].pool",
        "requests[1].devices[1].name",
        "requests[1].devices[1].networkData.ips[1]",
    ]


def test_models_keep_errors_relative_to_themselves() -> None:
    """A model's own errors have paths relative to it; the root's are the full paths."""
    model = DeviceMetadata.model_validate(_mutated(_attributes(k={"strings": ["x" * 65]})))
    assert model.requests is not None
    assert model.requests[0].devices is not None
    device = model.requests[0].devices[0]
    assert device.attributes is not None
    attribute = device.attributes["k"]
    assert attribute is not None
    assert [e.field for e in attribute.field_errors] == ["strings[0]"]
    assert [e.field for e in device.field_errors] == ["attributes[k].strings[0]"]
    assert [e.field for e in model.field_errors] == [f"{ATTR}[k].strings[0]"]


def test_a_bad_value_that_reads_value_omitted_is_still_shown() -> None:
    """A name that happens to be "<value omitted>" is quoted in the text, as Go quotes it."""
    (error,) = validate_wire({"podClaimName": "<value omitted>"})
    assert str(error).startswith('podClaimName: Invalid value: "<value omitted>": ')


def test_dedupe_drops_repeated_texts() -> None:
    """Errors whose rendered text repeats an earlier one are dropped, like Go's aggregate."""
    first = FieldError("a", ErrorType.INVALID, "x", "bad")
    same_text = FieldError("a", ErrorType.INVALID, "x", "bad", origin="other")
    other = FieldError("a", ErrorType.INVALID, "y", "bad")
    assert dedupe([first, same_text, other, first]) == [first, other]


def test_wrong_json_types_raise_type_error() -> None:
    """A value no decoder produces (a list for requests' name) is a TypeError, not a rule."""
    with pytest.raises(TypeError, match="not the wire form"):
        validate_wire({"requests": [{"name": ["x"]}]})


def test_mapping_input_is_accepted() -> None:
    """Any Mapping works as the top-level object, not only a dict."""
    from types import MappingProxyType

    assert [e.field for e in validate_wire(MappingProxyType({"podClaimName": "A"}))] == [
        "podClaimName"
    ]


def test_full_object_meta_is_accepted() -> None:
    """Owner references, managed fields with raw fieldsV1 and timestamps are carried along."""
    obj = _base()
    obj["metadata"].update(
        generateName="g",
        selfLink="/x",
        uid="u",
        resourceVersion="1",
        creationTimestamp="2008-01-01T01:01:01Z",
        deletionTimestamp="2009-01-01T01:01:01Z",
        deletionGracePeriodSeconds=10,
        labels={"k": "v"},
        annotations={"k": "v"},
        ownerReferences=[
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "controller": True,
             "blockOwnerDeletion": False},
        ],
        finalizers=["f"],
        managedFields=[
            {"manager": "m", "operation": "Update", "apiVersion": "v1",
             "time": "2004-01-01T01:01:01Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "n": [1, 2.5, None]},
             "subresource": "status"},
        ],
    )  # fmt: skip
    assert validate_wire(obj) == []


# --------------------------------------------------------------------------- formats


def test_label_message_has_go_double_space() -> None:
    """The DNS-label message keeps Go's two spaces before "or"."""
    (issue,) = _formats.check_short_name("GPU")
    assert "'my-name',  or '123-abc'" in issue.detail


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("gpu.example.com", True),
        ("GPU.Example.COM", True),
        ("\u017fomething", True),  # long s folds with s in Go
        ("\u0131ntel", False),  # dotless i does not fold with i in Go
        ("-gpu", False),
        ("gpu..x", False),
        ("a" * 253, True),  # the format allows 253 bytes; the driver's 63 is separate
        ("a" * 254, False),
    ],
)
def test_caseless_subdomain_follows_go_case_folding(value: str, valid: bool) -> None:
    """k8s-long-name-caseless accepts what Go's (?i) regex accepts, no more."""
    assert (_formats.check_long_name_caseless(value) == []) is valid


def test_pool_name_reports_length_and_segments() -> None:
    """A long pool is Too long once, and each bad segment is prefixed with its index."""
    (regex_message,) = _formats.dns1123_subdomain_messages("Y")
    assert _formats.check_resource_pool_name("x" * 254 + "/Y") == [
        (ErrorType.TOO_LONG, VALUE_OMITTED, "may not be more than 253 bytes"),
        (ErrorType.INVALID, "x" * 254, "segment 0: must be no more than 253 bytes"),
        (ErrorType.INVALID, "Y", f"segment 1: {regex_message}"),
    ]


def test_format_errors_carry_the_format_origin() -> None:
    """A format error names the format in its origin, as Go does."""
    wire = {"requests": [{"name": "r", "devices": [{"driver": "d", "pool": "p", "name": "gpu.0"}]}]}
    (error,) = validate_wire(wire)
    assert (error.origin, str(error)) == (
        "format=k8s-short-name",
        'requests[0].devices[0].name: Invalid value: "gpu.0": must not contain dots',
    )


def test_utf8_len_counts_bytes() -> None:
    """Byte lengths are UTF-8 bytes; a lone surrogate counts like Go's U+FFFD."""
    values = {"abc": 3, "é": 2, "日": 3, "\U0001f600": 4, "\ud800": 3}
    assert {value: _formats.utf8_len(value) for value in values} == values


NAME_ALPHABET = "ab9-.Z/_\u212a\u017f\u0131é"


@settings(max_examples=examples(400))
@given(st.text(alphabet=NAME_ALPHABET, max_size=70) | st.text(max_size=8))
def test_quick_predicates_agree_with_messages(value: str) -> None:
    """The fast is_* predicates accept exactly the values with no messages."""
    assert _formats.is_short_name(value) is (_formats.dns1123_label_messages(value) == [])
    assert _formats.is_long_name_caseless(value) is (
        _formats.dns1123_subdomain_messages(value, caseless=True) == []
    )
    segments = value.split("/")
    assert _formats.is_resource_pool_name(value) is (
        _formats.utf8_len(value) <= 253
        and all(s and _formats.dns1123_subdomain_messages(s) == [] for s in segments)
    )


@given(st.text(max_size=80), st.integers(min_value=0, max_value=300))
def test_exceeds_bytes_matches_utf8_len(value: str, limit: int) -> None:
    """exceeds_bytes is the quick form of utf8_len(value) > limit."""
    assert _formats.exceeds_bytes(value, limit) is (_formats.utf8_len(value) > limit)


def test_formats_module_does_not_import_pydantic() -> None:
    """_formats stays dependency-free, so a linter can use it without pydantic."""
    code = "import sys, dra_metadata._formats; print('pydantic' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert result.stdout.strip() == "False"


# --------------------------------------------------------------------------- property

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
TEXT = st.text(max_size=20) | st.sampled_from(["", "gpu-0", "GPU", "a" * 64, "é" * 40, "-"])
LONG_TEXT = st.text(alphabet="aé日-./", min_size=50, max_size=300)
ANY_TEXT = TEXT | LONG_TEXT
JSON = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


def _optional(**members: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=members)


ATTRIBUTE = _optional(
    int=st.none() | INT64,
    bool=st.none() | st.booleans(),
    string=st.none() | ANY_TEXT,
    version=st.none() | TEXT,
    ints=st.none() | st.lists(INT64, max_size=3),
    bools=st.none() | st.lists(st.booleans(), max_size=3),
    strings=st.none() | st.lists(ANY_TEXT, max_size=3),
    versions=st.none() | st.lists(TEXT, max_size=3),
)
NETWORK = _optional(
    interfaceName=ANY_TEXT,
    ips=st.none() | st.lists(st.sampled_from(["a", "b", "10.0.0.1/24"]) | TEXT, max_size=18),
    hardwareAddress=ANY_TEXT,
)
DEVICE = _optional(
    driver=ANY_TEXT | st.sampled_from(["gpu.example.com", "Gpu.Example.COM"]),
    pool=ANY_TEXT | st.sampled_from(["worker-0", "a/b", "a//b"]),
    name=ANY_TEXT,
    attributes=st.none()
    | st.dictionaries(TEXT, st.none() | ATTRIBUTE, max_size=5)
    | st.dictionaries(st.text(min_size=3), ATTRIBUTE, min_size=33, max_size=34),
    networkData=st.none() | NETWORK,
    somethingNew=JSON,
)
META = _optional(
    name=TEXT,
    namespace=TEXT,
    uid=TEXT,
    generation=INT64,
    creationTimestamp=TEXT,
    labels=st.dictionaries(TEXT, TEXT, max_size=2),
    ownerReferences=st.lists(_optional(name=TEXT, controller=st.booleans()), max_size=2),
    managedFields=st.lists(
        _optional(operation=TEXT | st.sampled_from(["Apply", "Update"]), fieldsV1=JSON),
        max_size=2,
    ),
)
WIRE = _optional(
    kind=TEXT,
    apiVersion=TEXT,
    metadata=META,
    podClaimName=st.none() | ANY_TEXT,
    requests=st.none()
    | st.lists(_optional(name=TEXT, devices=st.none() | st.lists(DEVICE, max_size=3)), max_size=3),
)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(WIRE)
def test_validate_wire_never_raises(obj: dict[str, Any]) -> None:
    """Any right-typed wire object validates without raising; texts are unique."""
    errors = validate_wire(obj)
    texts = [str(e) for e in errors]
    assert len(set(texts)) == len(texts)
    assert all(isinstance(e.type, ErrorType) for e in errors)
