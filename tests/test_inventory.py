"""dm.inventory(): everything mounted, as one object; problems as data, never raised."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata.testing import MetadataTree
from tests.conftest import SAMPLE_ROOT


def test_inventory_lists_every_request_of_both_claim_kinds() -> None:
    """Each request directory of the sample tree is one MountedRequest, in walk order."""
    inv = dm.inventory(SAMPLE_ROOT)
    assert inv.exists
    assert inv.problems == ()
    assert [(r.kind, r.claim, r.request) for r in inv.requests] == [
        ("claim", "cpus", "cpus"),
        ("claim", "nic", "eth"),
        ("claim", "train", "accel"),
        ("claim", "vfio-gpu", "gpu"),
        ("template", "gpu", "gpu"),
        ("template", "inference", "gpu"),
    ]
    train = inv.request("train", "accel")
    assert train is not None
    assert train.drivers == ("gpu.example.com", "rdma.example.com")
    assert (train.claim_namespace, train.claim_name) == ("ml-team", "train")
    assert train.generations == {"gpu.example.com": 1, "rdma.example.com": 1}


def test_inventory_says_which_subrequest_was_allocated() -> None:
    """A request answered by a subrequest names it; another one is the readers' not-found."""
    inv = dm.inventory(SAMPLE_ROOT)
    inference = inv.request("inference", "gpu", claim_kind="template")
    assert inference.subrequest == "gpu/high-memory"
    assert inference.request_names == ("gpu/high-memory",)
    assert inv.request("inference", "gpu/high-memory") is inference
    with pytest.raises(dm.MetadataNotFoundError) as low:
        inv.request("inference", "gpu/low-memory")
    with pytest.raises(dm.MetadataNotFoundError) as read:
        dm.read_resource_claim_template("inference", "gpu/low-memory", root=SAMPLE_ROOT)
    assert (str(low.value), low.value.nearby) == (str(read.value), read.value.nearby)
    with pytest.raises(dm.MetadataNotFoundError, match="a template claim 'inference' exists"):
        inv.request("inference", "gpu", claim_kind="claim")


def test_claim_kind_is_its_own_parameter_and_a_device_kind_there_is_an_error() -> None:
    """claim_kind= takes 'claim' or 'template'; 'gpu' (a device kind) says where it belongs."""
    inv = dm.inventory(SAMPLE_ROOT)
    assert {d.kind for d in inv.devices(claim_kind="template")} == {"template"}
    with pytest.raises(ValueError, match=r"'claim'.*'template'.*nearest") as err:
        inv.devices(claim_kind="gpu")  # type: ignore[arg-type]  # the mistake under test
    assert "'gpu'" in str(err.value)
    with pytest.raises(TypeError, match="claim_kind must be"):
        inv.request("nic", "eth", claim_kind=1)  # type: ignore[arg-type]  # the mistake under test
    with pytest.raises(TypeError, match="unexpected keyword argument 'kind'"):
        inv.devices(kind="gpu")  # type: ignore[call-arg]  # the old, ambiguous name is gone


def test_devices_span_all_claims_and_know_where_they_come_from() -> None:
    """devices() reaches every device; each knows its claim kind, claim and request."""
    inv = dm.inventory(SAMPLE_ROOT)
    devices = inv.devices()
    assert len(devices) == sum(len(r.devices) for r in inv.requests) == 11
    high = inv.devices(claim="inference")
    assert [(d.kind, d.claim, d.request, d.base_request) for d in high] == [
        ("template", "inference", "gpu/high-memory", "gpu")
    ]
    nic = inv.devices(driver="sriov.example.com")[0]
    assert nic.network_data is not None
    assert nic.network_data.interface_name == "net1"
    assert nic.id == f"sriov.example.com/{nic.pool}/{nic.name}"
    assert nic.claim_label == "claim 'nic'"


def test_device_queries_by_driver_attribute_value_and_presence() -> None:
    """driver=, where= and has= narrow the devices; names resolve as attribute() does."""
    inv = dm.inventory(SAMPLE_ROOT)
    assert [d.name for d in inv.devices(driver="gpu.example.com", where={"index": 1})] == ["gpu-1"]
    on_root = inv.devices(where={"resource.kubernetes.io/pcieRoot": "pci0000:17"})
    assert sorted(d.driver for d in on_root) == ["gpu.example.com", "rdma.example.com"]
    assert all(d.find_attribute("uuid") is not None for d in inv.devices(has="uuid"))
    assert inv.devices(has=("uuid", "no-such-attribute")) == []
    assert inv.devices(claim_kind="template", request="gpu/high-memory")[0].claim == "inference"


def test_problems_are_data_and_the_good_files_are_still_there(
    dra_metadata_tree: MetadataTree,
) -> None:
    """An undecodable file is a Problem of its request; the request keeps its other files."""
    tree = dra_metadata_tree
    request = tree.claim("c").request("r")
    request.device("good.example.com", "p", "d0")
    tree.write()
    # Hand-damaged bytes: the kit writes only whole, valid streams.
    broken = request.path("good.example.com").parent / "bad.example.com-metadata.json"
    broken.write_bytes(b'{"kind":"DeviceMeta')
    inv = dm.inventory(tree.root)
    (problem,) = inv.problems
    assert (problem.status, problem.claim, problem.request, problem.driver) == (
        "undecodable",
        "c",
        "r",
        "bad.example.com",
    )
    assert problem.path == str(broken)
    assert isinstance(problem.error, dm.DecodeError)
    (mounted,) = inv.requests
    assert not mounted.ok
    assert mounted.problems == (problem,)
    assert [d.name for d in mounted.devices] == ["d0"]


def test_a_symlink_below_the_root_is_a_problem_not_a_read(
    dra_metadata_tree: MetadataTree, tmp_path: Path
) -> None:
    """A claim directory that is a link is reported as a symlink problem; nothing is read."""
    outside = MetadataTree(tmp_path / "outside")
    outside.claim("x").request("r").device("evil.example.com", "p", "secret")
    outside.write()
    (dra_metadata_tree.root / "resourceclaims").mkdir(parents=True)
    os.symlink(outside.root / "resourceclaims" / "x", dra_metadata_tree.root / "resourceclaims/x")
    inv = dm.inventory(dra_metadata_tree.root)
    assert [p.status for p in inv.problems] == ["symlink"]
    assert inv.devices() == []


def test_a_missing_root_is_an_empty_inventory() -> None:
    """No root: nothing is mounted, nothing raised."""
    inv = dm.inventory("/nonexistent/dra-device-attributes")
    assert (inv.exists, inv.requests, inv.problems, len(inv)) == (False, (), (), 0)


def test_the_default_root_comes_from_the_environment(dra_metadata_tree: MetadataTree) -> None:
    """Without root=, DRA_METADATA_ROOT is read (the fixture sets it)."""
    dra_metadata_tree.template_claim("gpu").request("gpu").device("g.example.com", "p", "g0")
    dra_metadata_tree.write()
    assert [d.name for d in dm.inventory().devices()] == ["g0"]


def test_an_unsafe_root_is_a_name_error() -> None:
    """A root with a NUL is refused as a bad argument."""
    with pytest.raises(dm.InvalidNameError):
        dm.inventory("/tmp/x\x00y")


@pytest.mark.parametrize("root", [b"examples/dra-device-attributes", 5])
def test_a_root_that_is_not_text_is_a_type_error_saying_so(root: object) -> None:
    """inventory(b"...") and env_vars(root=5) raise our TypeError, not a raw mixing error."""
    with pytest.raises(TypeError, match=r"root must be a str or os\.PathLike\[str\], not "):
        dm.inventory(root)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="root must be a str"):
        dm.env_vars(root=root)  # type: ignore[arg-type]


def test_max_size_none_is_a_type_error_even_for_a_missing_root(tmp_path: Path) -> None:
    """max_size=None is refused at the call, before the walk finds nothing to read."""
    with pytest.raises(TypeError, match="max_size must be an int"):
        dm.inventory(tmp_path / "missing", max_size=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_size must be an int"):
        dm.inventory(tmp_path, max_size=None)  # type: ignore[arg-type]
