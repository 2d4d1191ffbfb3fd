"""Reading and merging request directories, differential: our readers against Go's.

Generated trees (several drivers, files of other claims, subrequests, unknown
versions, broken files, missing directories) are bind-mounted on the container path
in the harness's private mount namespace and read by ``ReadResourceClaimMetadata``,
``ReadResourceClaimTemplateMetadata`` and their one-driver forms; ours read the same
tree through ``root=``. Objects must be equal; an error must start with Go's text
(ours may go on with what is nearby).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from tests import strategies
from tests.goref.compare import same_error, wire
from tests.goref.harness import Goref
from tests.goref.test_decode import EXAMPLES
from tests.test_decode import damaged_streams

pytestmark = pytest.mark.goref

DRIVERS = ["gpu.example.com", "nic.example.com", "a.example.com"]
REQUESTS = ["gpu", "nic"]


@st.composite
def files(draw: st.DrawFn, claim: str, request: str) -> bytes:
    """One driver's file: its claim, another claim, a subrequest, unknown versions, damage."""
    md = draw(strategies.metadata)
    name = draw(st.sampled_from([claim, claim, "other"]))
    uid = draw(st.sampled_from(["uid-1", "uid-1", "uid-2"]))
    requests = draw(
        st.lists(st.sampled_from([request, f"{request}/high", "other"]), min_size=1, max_size=2)
    )
    md = dm.DeviceMetadata(
        api_version=md.api_version,
        metadata=dm.ObjectMeta(name=name, namespace="ns", uid=uid, generation=1),
        pod_claim_name=draw(st.sampled_from([None, claim, "x"])),
        requests=tuple(
            dm.DeviceMetadataRequest(r, draw(st.lists(strategies.devices, max_size=2).map(tuple)))
            for r in requests
        ),
    )
    kind = draw(st.sampled_from(["good", "good", "good", "unknown", "damaged", "empty"]))
    if kind == "unknown":
        return dm.encode(md, ["metadata.resource.k8s.io/v9", *draw(strategies.version_lists)])
    if kind == "damaged":
        return draw(damaged_streams())
    if kind == "empty":
        return b""
    return dm.encode(md, draw(strategies.version_lists))


@st.composite
def trees(draw: st.DrawFn) -> tuple[dict[str, bytes], dict[str, Any]]:
    """A tree (relative path -> bytes) and the read to make in it."""
    template = draw(st.booleans())
    claim = draw(st.sampled_from(["gpu-claim", "c"]))
    request = draw(st.sampled_from(REQUESTS))
    top = "resourceclaimtemplates" if template else "resourceclaims"
    tree: dict[str, bytes] = {}
    for other in draw(st.lists(st.sampled_from(REQUESTS), max_size=2, unique=True)):
        for driver in draw(st.lists(st.sampled_from(DRIVERS), max_size=3, unique=True)):
            tree[f"{top}/{claim}/{other}/{driver}-metadata.json"] = draw(files(claim, other))
    if draw(st.booleans()):
        tree[f"{top}/{claim}/{request}/notes.txt"] = b"not metadata"
    one = draw(st.sampled_from([None, None, *DRIVERS]))
    return tree, {"template": template, "name": claim, "request": request, "driver": one}


def _ours(root: str, read: dict[str, Any]) -> tuple[str, Any]:
    reader = dm.read_resource_claim_template if read["template"] else dm.read_resource_claim
    try:
        md = reader(read["name"], read["request"], driver=read["driver"], root=root)
    except dm.DRAMetadataError as err:
        return "error", str(err)
    return "ok", md.to_dict()


def check_tree(goref: Goref, root: Path, tree: dict[str, bytes], read: dict[str, Any]) -> None:
    """Write ``tree`` under ``root``; our read and Go's give the same object or error."""
    for rel, data in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    go = goref.ask({"op": "read", "root": str(root), **read, "driver": read["driver"] or ""})
    kind, ours = _ours(str(root), read)
    if go["error"] is not None:
        assert kind == "error", f"Go failed with {go['error']!r}; we read {ours}"
        assert same_error(ours, go["error"], jsonv2=goref.jsonv2, whole=False), (
            f"ours {ours!r}\nGo   {go['error']!r}"
        )
    else:
        assert kind == "ok", f"Go read {go['object']}; we failed: {ours}"
        assert ours == wire(go["object"])


@settings(
    max_examples=max(EXAMPLES // 10, 50),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(trees())
def test_generated_request_directories_read_as_go(
    goref_root: Goref, case: tuple[dict[str, bytes], dict[str, Any]]
) -> None:
    """Each generated tree: the same merged object (or one driver's), or the same error."""
    tree, read = case
    with tempfile.TemporaryDirectory() as tmp:
        check_tree(goref_root, Path(tmp), tree, read)


def test_the_host_container_path_is_untouched(goref_root: Goref, tmp_path: Path) -> None:
    """The harness reads in its own namespace: the host's container path is as it was."""
    before = os.path.exists(dm.CONTAINER_DIR)
    check_tree(goref_root, tmp_path, {"resourceclaims/c/gpu/x.io-metadata.json": b"{}"},
               {"template": False, "name": "c", "request": "gpu", "driver": None})  # fmt: skip
    assert os.path.exists(dm.CONTAINER_DIR) == before
