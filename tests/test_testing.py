"""The testing kit: fake trees written as the Go kubelet plugin writes them, real mounts."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest

import dra_metadata as dm
from dra_metadata.testing import (
    MetadataTree,
    MountedMetadataTree,
    MountUnavailableError,
    to_attribute,
    version,
    write_file,
)
from tests.conftest import REPO

A = dm.DeviceAttribute


def test_issue_example_template_claim_reads_back(dra_metadata_tree: MetadataTree) -> None:
    """A template-claim GPU written by the kit reads back through $DRA_METADATA_ROOT."""
    tree = dra_metadata_tree
    tree.template_claim("gpu").request("gpu").device(
        "gpu.example.com", "worker-0", "gpu-0", uuid="gpu-1234", index=0
    )
    tree.write()
    assert os.environ[dm.ROOT_ENV] == str(tree.root)
    md = dm.read_resource_claim_template("gpu", "gpu")
    assert [d.attribute("uuid") for d in md.requests[0].devices] == ["gpu-1234"]
    assert md.pod_claim_name == "gpu"


def test_files_are_byte_exact_go_streams_with_claim_identity(tmp_path: Path) -> None:
    """A file is dm.encode of the claim's object: name, namespace, uid, generation 1."""
    tree = MetadataTree(tmp_path)
    claim = tree.claim("nic", namespace="net", uid="uid-9")
    dev = claim.request("eth").device("sriov.example.com", "node-a", "vf-3")
    (path,) = tree.write()
    assert path == tmp_path / "resourceclaims/nic/eth/sriov.example.com-metadata.json"
    assert path == dev.path == dev.host_path
    expected = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="nic", namespace="net", uid="uid-9", generation=1),
        requests=(
            dm.DeviceMetadataRequest("eth", (dm.Device("sriov.example.com", "node-a", "vf-3"),)),
        ),
    )
    assert path.read_bytes() == dm.encode(expected, [dm.V1BETA1, dm.V1ALPHA1])
    text, objects = path.read_text(), []
    while text:
        obj, end = json.JSONDecoder().raw_decode(text)
        objects.append(obj)
        assert text[end] == "\n"
        text = text[end + 1 :]
    assert [obj["apiVersion"] for obj in objects] == [dm.V1BETA1, dm.V1ALPHA1]


def test_permissions_are_0644_files_and_0755_directories(tmp_path: Path) -> None:
    """Files are 0644 and every directory the kit creates is 0755, whatever the umask."""
    old = os.umask(0o077)
    try:
        tree = MetadataTree(tmp_path / "root")
        tree.claim("c").request("r").device("d.x", "p", "n")
        tree.write()
        tree.update(tree.claim("c"), mode="in-place")
    finally:
        os.umask(old)
    (path,) = (tmp_path / "root").rglob("*-metadata.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    directory = path.parent
    while directory != tmp_path:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o755, directory
        directory = directory.parent


def test_default_identity_is_deterministic_and_kubernetes_shaped(tmp_path: Path) -> None:
    """Namespace defaults to default, UIDs are stable UUIDs, template names <pod>-<claim>-xxxxx."""
    one, two = MetadataTree(tmp_path / "1"), MetadataTree(tmp_path / "2")
    for tree in (one, two):
        tree.claim("nic")
        tree.template_claim("gpu", pod="trainer-0")
    assert one.claim("nic").uid == two.claim("nic").uid
    assert one.claim("nic").namespace == "default"
    assert str(uuid.UUID(one.claim("nic").uid)) == one.claim("nic").uid
    template = one.template_claim("gpu")
    assert template.name == two.template_claim("gpu").name
    prefix, _, suffix = template.name.rpartition("-")
    assert prefix == "trainer-0-gpu"
    assert len(suffix) == 5
    assert set(suffix) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert template.pod_claim_name == "gpu"
    assert MetadataTree(tmp_path).template_claim("gpu", pod="other").name.startswith("other-gpu-")


def test_template_claim_content_and_path(tmp_path: Path) -> None:
    """A template claim lives under resourceclaimtemplates/<podClaimName> with that podClaimName."""
    tree = MetadataTree(tmp_path)
    claim = tree.template_claim("gpu", claim_name="my-pod-gpu-abcde", namespace="ml", uid="u-1")
    dev = claim.request("gpu/high-memory").device("gpu.example.com", "w", "gpu-0")
    tree.write()
    assert dev.path == tmp_path / "resourceclaimtemplates/gpu/gpu/gpu.example.com-metadata.json"
    md = dm.read_file(dev.path)
    assert (md.metadata.name, md.metadata.namespace, md.metadata.uid) == (
        "my-pod-gpu-abcde",
        "ml",
        "u-1",
    )
    assert md.pod_claim_name == "gpu"
    assert md.requests[0].name == "gpu/high-memory"


def test_claims_are_got_or_added_and_conflicts_refused(tmp_path: Path) -> None:
    """Naming a claim again gives the same builder; a different identity is refused."""
    tree = MetadataTree(tmp_path)
    claim = tree.claim("c", uid="u")
    assert tree.claim("c") is claim
    assert tree.claim("c").request("r") is claim.request("r")
    with pytest.raises(ValueError, match="already exists with uid"):
        tree.claim("c", uid="other")
    with pytest.raises(ValueError, match="share the directory"):
        claim.request("r/sub")
    claim.request("r").device("d.x", "p", "n")
    with pytest.raises(ValueError, match="already has device"):
        claim.request("r").device("d.x", "p", "n")
    with pytest.raises(dm.InvalidNameError):
        tree.claim("..")
    with pytest.raises(dm.InvalidNameError):
        claim.request("a/b/c")


def test_every_attribute_kind_and_network_data_round_trip(tmp_path: Path) -> None:
    """Keyword, dict and explicit attributes of all eight kinds, plus network data, read back."""
    tree = MetadataTree(tmp_path)
    dev = (
        tree.claim("c")
        .request("r")
        .device(
            "gpu.example.com",
            "node-a",
            "gpu-0",
            attributes={
                "resource.kubernetes.io/pciBusID": "0000:3b:00.0",
                "resource.kubernetes.io/numaNode": [1, 0],
                "raw": A(string="as is"),
            },
            index=0,
            healthy=True,
            model="A100",
            driverVersion=version("1.2.3"),
            lanes=[8, 16],
            flags=[True, False],
            names=["a", "b"],
            versions=[dm.VersionValue("1.0.0"), version("2.0.0-rc.1")],
            network=dm.NetworkDeviceData(interface_name="eth9"),
        )
    )
    tree.write()
    got = dm.read_file(dev.path).requests[0].devices[0]
    assert got.attributes == {
        "resource.kubernetes.io/pciBusID": A(string="0000:3b:00.0"),
        "resource.kubernetes.io/numaNode": A(ints=(1, 0)),
        "raw": A(string="as is"),
        "index": A(int=0),
        "healthy": A(bool=True),
        "model": A(string="A100"),
        "driverVersion": A(version="1.2.3"),
        "lanes": A(ints=(8, 16)),
        "flags": A(bools=(True, False)),
        "names": A(strings=("a", "b")),
        "versions": A(versions=("1.0.0", "2.0.0-rc.1")),
    }
    assert (got.pci_bus_id, got.numa_nodes, got.numa_node) == ("0000:3b:00.0", (1, 0), 1)
    assert got.network_data == dm.NetworkDeviceData(interface_name="eth9")
    assert dm.validate(dm.read_file(dev.path)) == []


def test_device_changes_reach_the_file_at_the_next_update(tmp_path: Path) -> None:
    """set, unset, network and without_network change what the next update writes."""
    tree = MetadataTree(tmp_path)
    dev = tree.claim("c").request("r").device("d.x", "p", "n", model="a", index=1)
    dev.network(interface_name="net1")
    tree.write()
    dev.set({"d.x/extra": [1, 2]}, model="b").unset("index").without_network()
    tree.update()
    got = dm.read_file(dev.path).requests[0].devices[0]
    assert got.attributes == {"d.x/extra": A(ints=(1, 2)), "model": A(string="b")}
    assert got.network_data is None
    with pytest.raises(KeyError, match="no attribute 'index'"):
        dev.unset("index")
    with pytest.raises(TypeError, match="not one string"):
        dev.network(ips="10.0.0.5/24")


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ([], ValueError),
        ([1, "a"], TypeError),
        ([True, 1], TypeError),
        (1.5, TypeError),
        (2**63, ValueError),
        ([-(2**63) - 1], ValueError),
        (None, TypeError),
    ],
)
def test_attribute_values_without_a_kind_are_refused(value: object, error: type) -> None:
    """Empty or mixed lists, floats, None and ints beyond 64 bits are refused clearly."""
    with pytest.raises(error):
        to_attribute(value)  # type: ignore[arg-type]


def test_versions_order_default_and_per_driver(tmp_path: Path) -> None:
    """Files hold v1beta1 then v1alpha1 by default; order and set can be chosen, per driver too."""
    tree = MetadataTree(tmp_path, versions=[dm.V1ALPHA1, dm.V1BETA1])
    request = tree.claim("c").request("r")
    old = request.device("old.x", "p", "n")
    new = request.device("new.x", "p", "n")
    future = request.device("future.x", "p", "n")
    tree.set_versions([dm.V1ALPHA1], driver="old.x")
    tree.set_versions(["metadata.resource.k8s.io/v2", dm.V1BETA1], driver="future.x")
    tree.write()

    def versions(path: Path) -> list[str]:
        return [
            line.split('"')[3] for line in path.read_text().splitlines() if "apiVersion" in line
        ]

    assert versions(old.path) == [dm.V1ALPHA1]
    assert versions(new.path) == [dm.V1ALPHA1, dm.V1BETA1]
    assert versions(future.path) == ["metadata.resource.k8s.io/v2", dm.V1BETA1]
    assert dm.read_file(future.path).api_version == dm.V1BETA1
    default = MetadataTree(tmp_path / "default")
    dev = default.claim("c").request("r").device("d.x", "p", "n")
    default.write()
    assert versions(dev.path) == [dm.V1BETA1, dm.V1ALPHA1]


def test_several_drivers_in_one_request_get_one_file_each(tmp_path: Path) -> None:
    """Each driver of a request has its own file with only its devices; reads merge them."""
    tree = MetadataTree(tmp_path)
    accel = tree.claim("train").request("accel")
    accel.device("gpu.example.com", "w", "gpu-0")
    accel.device("rdma.example.com", "w", "mlx5-0")
    accel.device("gpu.example.com", "w", "gpu-1")
    assert len(tree.write()) == 2
    gpu_file = dm.read_file(accel.path("gpu.example.com"))
    assert [d.name for d in gpu_file.requests[0].devices] == ["gpu-0", "gpu-1"]
    merged = dm.read_resource_claim("train", "accel", root=tmp_path)
    assert [d.name for d in merged.requests[0].devices] == ["gpu-0", "gpu-1", "mlx5-0"]
    with pytest.raises(ValueError, match="served by 2 drivers"):
        accel.path()


def test_write_is_idempotent_and_update_bumps_the_generation(tmp_path: Path) -> None:
    """write() leaves unchanged files alone; update() rewrites changed ones at generation+1."""
    tree = MetadataTree(tmp_path)
    gpu = tree.template_claim("gpu").request("gpu").device("gpu.example.com", "w", "gpu-0")
    assert len(tree.write()) == 1
    nic = tree.claim("nic").request("eth").device("sriov.example.com", "node-a", "vf-3")
    assert tree.write() == [nic.path]  # the GPU file is unchanged
    assert dm.read_file(nic.path).requests[0].devices[0].network_data is None
    nic.network(interface_name="net1", ips=["10.0.0.5/24"])
    assert tree.update(mode="in-place") == [nic.path]
    md = dm.read_file(nic.path)
    assert md.metadata.generation == 2
    assert md.requests[0].devices[0].network_data == dm.NetworkDeviceData(
        interface_name="net1", ips=("10.0.0.5/24",)
    )
    assert tree.generation(nic) == 2
    assert tree.generation(gpu) == 1
    with pytest.raises(ValueError, match="nothing changed"):
        tree.update()
    tree.update(gpu.request)  # named: bumped though unchanged
    assert dm.read_file(gpu.path).metadata.generation == 2


def test_in_place_keeps_the_inode_and_rename_replaces_it(tmp_path: Path) -> None:
    """An in-place update writes the same inode; a rename update gives a new one, no temp left."""
    tree = MetadataTree(tmp_path)
    dev = tree.claim("c").request("r").device("d.x", "p", "n")
    tree.write()
    first = dev.path.stat().st_ino
    dev.set(step=1)
    tree.update(mode="in-place")
    assert dev.path.stat().st_ino == first
    dev.set(step=2)
    tree.update(mode="rename")
    assert dev.path.stat().st_ino != first
    assert sorted(p.name for p in dev.path.parent.iterdir()) == ["d.x-metadata.json"]
    md = dm.read_file(dev.path)
    assert (md.metadata.generation, md.requests[0].devices[0].attribute("step")) == (3, 2)
    with pytest.raises(ValueError, match="mode must be one of"):
        tree.update(dev, mode="atomic")  # type: ignore[arg-type]


def test_tear_leaves_an_empty_or_partial_file_that_write_completes(tmp_path: Path) -> None:
    """tear() writes part of the next generation in place (a DecodeError); write() completes it."""
    tree = MetadataTree(tmp_path)
    dev = tree.claim("c").request("r").device("d.x", "p", "n", model="m")
    tree.write()
    inode = dev.path.stat().st_ino
    assert tree.tear(dev, size=0) == [dev.path]
    assert dev.path.read_bytes() == b""
    assert dev.path.stat().st_ino == inode
    with pytest.raises(dm.DecodeError, match="no metadata objects found"):
        dm.read_file(dev.path)
    tree.tear(dev.request)
    full = dev.request.encode(generation=2)
    first_entry = full.index(b"\n}\n") + 3
    assert dev.path.read_bytes() == full[: first_entry // 2]
    with pytest.raises(dm.DecodeError):
        dm.read_file(dev.path)
    tree.tear(dev, size=first_entry)  # torn after the first entry: Go reads no further
    assert dm.read_file(dev.path).metadata.generation == 2
    assert tree.generation(dev) == 1
    tree.write()
    assert dev.path.read_bytes() == full
    assert tree.generation(dev) == 2
    with pytest.raises(ValueError, match="would not tear"):
        tree.tear(dev, size=len(full) + 10)


def test_torn_file_is_completed_by_update_at_the_torn_generation(tmp_path: Path) -> None:
    """update() after tear() writes the generation that was being written, not one more."""
    tree = MetadataTree(tmp_path)
    dev = tree.claim("c").request("r").device("d.x", "p", "n")
    tree.write()
    tree.tear(dev, size=7)
    assert dev.path.read_bytes() == dev.request.encode(generation=2)[:7]
    tree.update()
    assert dm.read_file(dev.path).metadata.generation == 2


def test_remove_deletes_the_claims_files_and_empty_directories(tmp_path: Path) -> None:
    """remove(claim) deletes its files and directories, leaves other claims, and forgets it."""
    tree = MetadataTree(tmp_path)
    gone = tree.claim("gone")
    gone.request("a").device("d.x", "p", "n")
    gone.request("b").device("d.x", "p", "n")
    kept = tree.claim("kept").request("a").device("d.x", "p", "n")
    tree.write()
    assert len(tree.remove(gone)) == 2
    assert not (tmp_path / "resourceclaims" / "gone").exists()
    assert kept.path.exists()
    assert tree.claims == (tree.claim("kept"),)
    with pytest.raises(dm.MetadataNotFoundError):
        dm.read_resource_claim("gone", "a", root=tmp_path)
    with pytest.raises(ValueError, match="no longer"):
        tree.update(gone)


def test_remove_one_request_and_remove_device(tmp_path: Path) -> None:
    """remove(request) drops one request's files; remove_device empties the driver's file."""
    tree = MetadataTree(tmp_path)
    claim = tree.claim("c")
    a = claim.request("a").device("d.x", "p", "n")
    b = claim.request("b").device("d.x", "p", "n")
    tree.write()
    tree.remove(b.request)
    assert not b.path.parent.exists()
    assert a.path.exists()
    a.request.remove_device(a)
    tree.update()
    md = dm.read_file(a.path)
    assert md.requests[0].devices == ()
    assert md.metadata.generation == 2


def test_add_driver_writes_a_file_with_no_devices(tmp_path: Path) -> None:
    """add_driver gives a driver's file with an empty device list; devices may follow."""
    tree = MetadataTree(tmp_path)
    claim = tree.claim("c", generation=3)
    request = claim.request("r")
    assert request.add_driver("d.example.com") is request
    assert request.add_driver("d.example.com").drivers == ("d.example.com",)
    (path,) = tree.write()
    assert path == tmp_path / "resourceclaims/c/r/d.example.com-metadata.json"
    md = dm.read_file(path)
    assert md.requests[0].devices == ()
    assert md.metadata.generation == 3
    request.device("d.example.com", "p", "dev-0")
    assert tree.write() == [path]
    assert [d.name for d in dm.read_file(path).requests[0].devices] == ["dev-0"]
    with pytest.raises(dm.InvalidNameError):
        request.add_driver("x/y")


def test_testing_module_surface_is_listed_and_documented() -> None:
    """dra_metadata.testing lists every public name of the kit in __all__, each documented.

    The kit's code lives in two private modules, each listing what it defines in its
    ``__all__``; ``dra_metadata.testing`` passes all of it on.
    """
    import ast
    import inspect

    import dra_metadata._testing_mounted as mounted
    import dra_metadata._testing_tree as tree
    import dra_metadata.testing as kit

    def defined_in(module: ModuleType) -> set[str]:
        """The public names a module's own statements define."""
        assert module.__file__ is not None
        found: set[str] = set()
        for node in ast.parse(Path(module.__file__).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                found.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found.update(t.id for t in targets if isinstance(t, ast.Name))
        return {name for name in found if not name.startswith("_")}

    defined = defined_in(kit)
    for module in (tree, mounted):
        assert defined_in(module) == set(module.__all__), module.__name__
        defined |= set(module.__all__)
    for node in ast.parse(Path(kit.__file__).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module == "_model":
            # The one conversion of plain values lives in the model; the kit passes it on.
            passed_on = ("to_attribute", "AttributeInput")
            defined.update(a.name for a in node.names if a.name in passed_on)
    assert defined == set(kit.__all__)
    for name in kit.__all__:
        value = getattr(kit, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), name


def test_plugin_imports_cheaply() -> None:
    """The pytest plugin module loads neither pydantic nor watchfiles nor semver."""
    probe = (
        "import dra_metadata.pytest_plugin, dra_metadata.testing, sys; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic','watchfiles','semver'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_plugin_is_registered_through_the_pytest11_entry_point() -> None:
    """The installed distribution declares the plugin, so any project's pytest gets the fixtures."""
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="pytest11") if ep.name == "dra_metadata"]
    assert [ep.value for ep in found] == ["dra_metadata.pytest_plugin"]


# --- real read-only single-file bind mounts ----------------------------------------------


def test_mounted_tree_shows_files_read_only_in_the_container_layout(
    dra_metadata_mounted_tree: MountedMetadataTree,
) -> None:
    """Host files live in the plugin layout; the container path is a read-only bind mount."""
    tree = dra_metadata_mounted_tree
    claim = tree.claim("nic", namespace="net")
    dev = claim.request("eth").device("sriov.example.com", "node-a", "vf-3")
    tree.write()
    assert dev.host_path == (
        tree.host_dir / "sriov.example.com/dra-device-metadata/net_nic/eth/metadata.json"
    )
    assert dev.path == tree.root / "resourceclaims/nic/eth/sriov.example.com-metadata.json"
    assert os.environ[dm.ROOT_ENV] == str(tree.root)
    assert tree.mounted == (dev.path,)
    assert os.stat(dev.path).st_ino == os.stat(dev.host_path).st_ino
    with pytest.raises(OSError, match="Read-only"):
        dev.path.write_bytes(b"x")
    assert dm.read_resource_claim("nic", "eth").requests[0].devices[0].name == "vf-3"


def test_mounted_tree_writes_through_the_publisher_and_mounts_what_its_cdi_spec_says(
    dra_metadata_mounted_tree: MountedMetadataTree,
) -> None:
    """The node file and CDI spec are the publisher's; the mount is the spec's, read-only."""
    tree = dra_metadata_mounted_tree
    claim = tree.template_claim("gpu", namespace="ml", uid="c7e7-uid")
    dev = claim.request("gpu").device("gpu.example.com", "worker-0", "gpu-0", index=0)
    tree.write()
    pub = tree.publisher("gpu.example.com")
    ref = dm.ClaimRef(name=claim.name, namespace="ml", uid="c7e7-uid", pod_claim_name="gpu")
    assert pub.plugin_data_dir == str(tree.host_dir / "gpu.example.com")
    assert str(dev.host_path) == pub.metadata_path(ref, "gpu")
    spec_path = Path(pub.cdi_spec_path(ref, "gpu"))
    assert spec_path.parent == tree.cdi_dir == tree.host_dir / "cdi"
    spec = json.loads(spec_path.read_text())
    assert spec == pub.cdi_spec(ref, "gpu")
    (mount,) = spec["devices"][0]["containerEdits"]["mounts"]
    assert mount["hostPath"] == str(dev.host_path)
    assert mount["containerPath"] == str(dev.path).replace(str(tree.root), dm.CONTAINER_DIR, 1)
    assert f"{dev.path} " in Path("/proc/self/mounts").read_text()
    tree.remove(claim)
    assert not spec_path.exists()
    assert not Path(pub.claim_dir(ref)).exists()


def test_a_publisher_update_reaches_a_mounted_tree_in_place_only(
    dra_metadata_mounted_tree: MountedMetadataTree,
) -> None:
    """The tree's publisher updating in place is seen through the mount; a replace is not."""
    tree = dra_metadata_mounted_tree
    claim = tree.claim("nic", uid="u-nic")
    dev = claim.request("eth").device("sriov.example.com", "node-a", "vf-0")
    tree.write()
    pub = tree.publisher("sriov.example.com")
    ref = dm.ClaimRef(name="nic", namespace="default", uid="u-nic")
    net = dm.NetworkDeviceData(interface_name="net1")
    pub.update(ref, "eth", [pub.device("node-a", "vf-0", network_data=net)], mode="in-place")
    seen = dm.read_file(dev.path)
    assert (seen.metadata.generation, seen.requests[0].devices[0].network_data) == (2, net)
    pub.update(ref, "eth", [pub.device("node-a", "vf-0")], mode="replace")
    assert dm.read_file(dev.path).metadata.generation == 2  # the mount keeps the old inode
    assert os.stat(dev.path).st_nlink == 0
    assert dm.read_file(dev.host_path).metadata.generation == 3


def test_write_file_leaves_no_temporary_file_when_the_rename_fails(tmp_path: Path) -> None:
    """The kit's rename write is the publisher's: on failure the temporary file is removed."""
    target = tmp_path / "metadata.json"
    (target / "occupied").mkdir(parents=True)
    with pytest.raises(dm.PublishError, match="not a regular file"):
        write_file(target, b"data", "rename")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metadata.json"]


def test_mounted_in_place_update_and_tear_are_visible(
    dra_metadata_mounted_tree: MountedMetadataTree,
) -> None:
    """Through the mount an in-place update is seen, and so is a torn in-place write."""
    tree = dra_metadata_mounted_tree
    dev = tree.claim("c").request("r").device("d.x", "p", "n")
    tree.write()
    tree.tear(dev, size=0)
    assert dev.path.read_bytes() == b""
    dev.network(interface_name="net1")
    tree.update(mode="in-place")
    md = dm.read_resource_claim("c", "r", driver="d.x")
    assert md.metadata.generation == 2
    assert md.requests[0].devices[0].network_data == dm.NetworkDeviceData(interface_name="net1")


def test_mounted_rename_update_is_invisible_until_remount(
    dra_metadata_mounted_tree: MountedMetadataTree,
) -> None:
    """After a rename update the container keeps the old inode (nlink 0); remount shows the new."""
    tree = dra_metadata_mounted_tree
    dev = tree.claim("c").request("r").device("d.x", "p", "n")
    tree.write()
    dev.network(interface_name="net1")
    tree.update(mode="rename")
    assert os.stat(dev.path).st_nlink == 0
    old = dm.read_resource_claim("c", "r", driver="d.x")
    assert (old.metadata.generation, old.requests[0].devices[0].network_data) == (1, None)
    assert dm.read_file(dev.host_path).metadata.generation == 2
    assert tree.remount() == [dev.path]
    assert os.stat(dev.path).st_nlink == 1
    assert dm.read_resource_claim("c", "r", driver="d.x").metadata.generation == 2


def test_mounted_remove_and_close_unmount(tmp_path: Path) -> None:
    """remove() unmounts and deletes (or keeps the stale view); close() unmounts the rest."""
    try:
        tree = MountedMetadataTree(tmp_path / "host", tmp_path / "ctr")
    except MountUnavailableError as err:
        pytest.skip(err.reason)
    with tree:
        a = tree.claim("a").request("r").device("d.x", "p", "n")
        b = tree.claim("b").request("r").device("d.x", "p", "n")
        tree.write()
        tree.remove(tree.claim("a"))
        assert not a.path.exists()
        assert not (tmp_path / "ctr/resourceclaims/a").exists()
        assert not a.host_path.exists()
        tree.remove(tree.claim("b"), unmount=False)
        assert not b.host_path.exists()
        assert os.stat(b.path).st_nlink == 0
        assert dm.read_file(b.path).metadata.name == "b"
        assert tree.mounted == (b.path,)
    assert not tree.mounted
    assert b.path.read_bytes() == b""  # the empty mount point, no longer mounted
    mounts = Path("/proc/self/mounts").read_text()
    assert str(tmp_path) not in mounts


def test_claim_recreated_after_a_kept_view_is_mounted_on_top(
    dra_metadata_mounted_tree: MountedMetadataTree,
) -> None:
    """A claim re-created after remove(unmount=False) replaces the kept view with its own."""
    tree = dra_metadata_mounted_tree
    tree.claim("c", uid="old").request("r").device("d.x", "p", "n")
    tree.write()
    tree.remove(tree.claim("c"), unmount=False)
    dev = tree.claim("c", uid="new").request("r").device("d.x", "p", "n")
    tree.write()
    assert tree.mounted == (dev.path,)
    assert dm.read_file(dev.path).metadata.uid == "new"
    assert os.stat(dev.path).st_nlink == 1
    tree.close()
    assert not tree.mounted
    assert dev.path.read_bytes() == b""


def test_mounted_fixture_skips_with_the_reason_where_mounting_is_refused(tmp_path: Path) -> None:
    """Without mount(8) the mounted fixture skips the test and says why; the others still run."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "examples/test_my_workload.py",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PATH": str(tmp_path / "empty")},
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bind mounts unavailable: " in done.stdout
    assert "3 passed, 1 skipped" in done.stdout


def test_mount_refusal_is_a_clear_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where mounting is impossible the kit raises MountUnavailableError with a reason."""
    if os.geteuid() == 0:
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # as root: no mount(8) to be found
        with pytest.raises(MountUnavailableError) as err:
            MountedMetadataTree(tmp_path / "h", tmp_path / "c")
        assert err.value.reason == "mount(8) is not installed"
    else:
        with pytest.raises(MountUnavailableError, match="need root"):
            MountedMetadataTree(tmp_path / "h", tmp_path / "c")


# --- the examples and the docs --------------------------------------------------------------


def test_workload_example_passes_under_pytest() -> None:
    """examples/test_my_workload.py passes when pytest runs it, fixtures from the entry point."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "examples/test_my_workload.py",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    if os.geteuid() == 0:
        assert summary.startswith("4 passed"), summary
    else:
        assert summary.startswith("3 passed, 1 skipped"), summary


def test_docs_fixture_example_is_taken_from_the_example_file() -> None:
    """The docs' pytest example (docs/testing.md) is the example file's code, verbatim."""
    page = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    section = page.split("## The pytest plugin", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```python\n(.*?)```", section, re.DOTALL)[-1]
    source = (REPO / "examples" / "test_my_workload.py").read_text(encoding="utf-8")
    imports, code = block.split("\n\n\n", 1)
    assert code in source
    for line in imports.splitlines():
        assert re.search(f"^{re.escape(line)}\\b", source, re.MULTILINE), line


def test_a_claim_named_from_non_utf8_bytes_is_written(tmp_path: Path) -> None:
    """A directory name that is not UTF-8 still gets a claim, a uuid5 UID and a readable file."""
    name = os.fsdecode(b"caf\xe9")
    tree = MetadataTree(tmp_path)
    claim = tree.claim(name)
    claim.request("r").device("d.example.com", "p", "n", x="y")
    [path] = tree.write()
    assert os.fsencode(path).endswith(b"/resourceclaims/caf\xe9/r/d.example.com-metadata.json")
    md = dm.read_file(path)
    assert md.metadata.name == "caf\ufffd"
    assert md.metadata.uid == claim.uid
    assert uuid.UUID(claim.uid).version == 5
    assert MetadataTree(tmp_path / "again").claim(name).uid == claim.uid
