"""The exception tree and Go's rendering of validation errors."""

from __future__ import annotations

import pytest

import dra_metadata as dm
from dra_metadata._field_error import VALUE_OMITTED, go_quote


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain", '"plain"'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("\n\t\x01\x7f", '"\\n\\t\\x01\\x7f"'),
        ("é日😀", '"é日😀"'),
        ("\u00a0\u200b", '"\\u00a0\\u200b"'),
    ],
)
def test_go_quote_matches_strconv_quote(text: str, quoted: str) -> None:
    """Strings are quoted as Go's %q does: printable runes raw, others escaped."""
    assert go_quote(text) == quoted


def test_field_error_renders_like_go() -> None:
    """str() is Go's field.Error text for every kind of bad value."""
    invalid = dm.FieldError("metadata.generation", dm.ErrorType.INVALID, -1, "must be >= 0")
    assert str(invalid) == "metadata.generation: Invalid value: -1: must be >= 0"
    too_long = dm.FieldError(
        "x", dm.ErrorType.TOO_LONG, VALUE_OMITTED, "may not be more than 1 bytes"
    )
    assert str(too_long) == "x: Too long: may not be more than 1 bytes"
    required = dm.FieldError("requests[0].name", dm.ErrorType.REQUIRED, "")
    assert str(required) == "requests[0].name: Required value"
    assert str(dm.FieldError("f", dm.ErrorType.INVALID, None)) == 'f: Invalid value: "null"'
    assert str(dm.FieldError("f", dm.ErrorType.INVALID, True)) == "f: Invalid value: true"
    assert dm.FieldError("f", dm.ErrorType.DUPLICATE, "a") == dm.FieldError(
        "f", dm.ErrorType.DUPLICATE, "a"
    )
    assert str(dm.ErrorType.TOO_MANY) == "Too many"


def test_exception_tree() -> None:
    """One root; decode and name errors are ValueErrors, not-found is a FileNotFoundError."""
    assert issubclass(dm.DecodeError, dm.DRAMetadataError)
    assert issubclass(dm.DecodeError, ValueError)
    assert issubclass(dm.InvalidNameError, ValueError)
    assert issubclass(dm.FileTooLargeError, dm.DRAMetadataError)
    assert issubclass(dm.MetadataNotFoundError, FileNotFoundError)
    err = dm.MetadataNotFoundError("no metadata files found in /x", path="/x")
    assert (str(err), err.path, err.filename) == ("no metadata files found in /x", "/x", "/x")
