"""Paths of metadata files in the container layout."""

from __future__ import annotations

import pytest

import dra_metadata as dm


def test_constants_match_the_go_reference() -> None:
    """The layout constants are the Go reference's values."""
    assert dm.CONTAINER_DIR == "/var/run/kubernetes.io/dra-device-attributes"
    assert (dm.RESOURCE_CLAIMS_SUBDIR, dm.RESOURCE_CLAIM_TEMPLATES_SUBDIR) == (
        "resourceclaims",
        "resourceclaimtemplates",
    )
    assert dm.METADATA_FILE_SUFFIX == "-metadata.json"
    assert (dm.V1ALPHA1, dm.V1BETA1) == (
        "metadata.resource.k8s.io/v1alpha1",
        "metadata.resource.k8s.io/v1beta1",
    )


def test_paths_follow_the_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Claim and template paths; a subrequest maps to its base request's directory."""
    monkeypatch.delenv(dm.ROOT_ENV, raising=False)
    assert dm.resource_claim_file_path("gpu.example.com", "c", "gpu") == (
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/c/gpu/gpu.example.com-metadata.json"
    )
    assert dm.resource_claim_template_file_path("d", "pc", "req/sub", root="/r") == (
        "/r/resourceclaimtemplates/pc/req/d-metadata.json"
    )
    monkeypatch.setenv(dm.ROOT_ENV, "/env")
    assert dm.resource_claim_file_path("d", "c", "r").startswith("/env/resourceclaims/")


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\x00", "../x"])
def test_unsafe_names_are_refused(bad: str) -> None:
    """Names that are not one safe path component raise InvalidNameError with the name."""
    for args in ((bad, "c", "r"), ("d", bad, "r")):
        with pytest.raises(dm.InvalidNameError):
            dm.resource_claim_file_path(*args)
    if bad not in ("a/b",):
        with pytest.raises(dm.InvalidNameError):
            dm.resource_claim_file_path("d", "c", bad)
    with pytest.raises(dm.InvalidNameError):
        dm.resource_claim_file_path("d", "c", f"r/{bad}" if bad else "r/")
    with pytest.raises(dm.InvalidNameError, match="must be a string"):
        dm.resource_claim_file_path("d", 5, "r")  # type: ignore[arg-type]
