"""Each fact of the wire format is written once: these tests fail when a copy creeps back."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

import dra_metadata as dm
from dra_metadata import _gojson, _lint, _validate_models, _values, _versions

PACKAGE = Path(dm.__file__).parent


def code_strings(path: Path) -> Iterator[str]:
    """The string literals of a module's code (docstrings and their doctests left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.value


#: Each model Struct and the pydantic validation model of the same wire object.
PAIRS = [
    (dm.DeviceMetadata, _validate_models.DeviceMetadata),
    (dm.ObjectMeta, _validate_models.ObjectMeta),
    (dm.OwnerReference, _validate_models.OwnerReference),
    (dm.ManagedFieldsEntry, _validate_models.ManagedFieldsEntry),
    (dm.DeviceMetadataRequest, _validate_models.DeviceMetadataRequest),
    (dm.Device, _validate_models.Device),
    (dm.DeviceAttribute, _validate_models.DeviceAttribute),
    (dm.NetworkDeviceData, _validate_models.NetworkDeviceData),
]


def test_the_api_versions_are_spelled_out_only_in_versions_module() -> None:
    """No module but _versions writes an apiVersion string of the group."""
    offenders = [
        f"{path.relative_to(PACKAGE)}: {text!r}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "_versions.py"
        for text in code_strings(path)
        if f"{_versions.GROUP}/v" in text
    ]
    assert offenders == []


def test_every_reader_of_versions_follows_the_list() -> None:
    """The exact decoder, the writer's default and the schemas know exactly API_VERSIONS."""
    assert _gojson.KNOWN_VERSIONS == _versions.API_VERSIONS
    assert dm.DEFAULT_VERSIONS == _versions.API_VERSIONS
    decoded = {_versions.version_of(v) for v in _versions.API_VERSIONS}
    assert set(_gojson._DEVICE_METADATA) == decoded
    assert _lint.RULES["DRA106"] == f"no {_versions.NEWEST} entry"


@pytest.mark.parametrize(("struct", "model"), PAIRS, ids=lambda cls: cls.__name__)
def test_validation_models_have_exactly_the_structs_fields_in_order(
    struct: type[msgspec.Struct], model: type[_validate_models.WireModel]
) -> None:
    """The pydantic models declare rules for the Structs' fields, no more, no fewer."""
    aliases = tuple(field.alias or name for name, field in model.model_fields.items())
    assert aliases == _values.wire_names(struct)


@pytest.mark.parametrize(("struct", "_model_cls"), PAIRS, ids=lambda cls: cls.__name__)
def test_the_exact_decoders_go_types_are_the_structs_fields(
    struct: type[msgspec.Struct], _model_cls: type[object]
) -> None:
    """The Go type tables are derived from the Structs: same names, same order."""
    go = _gojson._struct_type(struct, "v1beta1")
    assert tuple(go.fields) == _values.wire_names(struct)
    required = {f.encode_name for f in msgspec.structs.fields(struct) if f.required}
    assert go.always == required


def test_lint_knows_the_keys_the_structs_have() -> None:
    """lint's lists of known keys are the Structs' wire names."""
    assert _values.wire_names(dm.DeviceMetadata) == _lint._TOP
    assert _values.wire_names(dm.Device) == _lint._DEVICE
    assert tuple(_values.NETWORK_FIELDS) == _lint._NETWORK


def test_network_field_names_live_in_the_model() -> None:
    """Code names the network fields through the model, not by writing them again.

    Validation reports errors at Go's paths, which are these names, lint maps the
    misspellings drivers make onto them, and the topology's JSON output uses them as
    its own keys: those spell them on purpose.
    """
    allowed = {"_values.py", "_validate_models.py", "_lint.py", "_topology.py"}
    offenders = [
        f"{path.relative_to(PACKAGE)}: {text!r}"
        for path in PACKAGE.rglob("*.py")
        if path.name not in allowed
        for text in code_strings(path)
        if text in ("interfaceName", "hardwareAddress")
    ]
    assert offenders == []
