"""The public surface: one sorted __all__, every name documented and importable."""

from __future__ import annotations

import inspect

import dra_metadata as dm


def test_all_is_sorted_and_complete() -> None:
    """__all__ is sorted, lists only real names, and includes every public attribute."""

    def isort_key(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert list(dm.__all__) == sorted(dm.__all__, key=isort_key)
    for name in dm.__all__:
        assert hasattr(dm, name), name
    public = {
        name
        for name, value in vars(dm).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert public - {"TYPE_CHECKING"} <= set(dm.__all__)


def test_public_functions_and_classes_have_docstrings() -> None:
    """Every public function and class explains itself."""
    for name in dm.__all__:
        value = getattr(dm, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), name


def test_issue_contract_names_exist() -> None:
    """The names the API contract promises are exported."""
    for name in (
        "CONTAINER_DIR",
        "RESOURCE_CLAIMS_SUBDIR",
        "RESOURCE_CLAIM_TEMPLATES_SUBDIR",
        "METADATA_FILE_SUFFIX",
        "V1ALPHA1",
        "V1BETA1",
        "resource_claim_file_path",
        "resource_claim_template_file_path",
        "decode",
        "validate",
        "encode",
        "read_file",
        "read_resource_claim",
        "read_resource_claim_template",
        "DecodeError",
        "FieldError",
        "ErrorType",
    ):
        assert name in dm.__all__, name
