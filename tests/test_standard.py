"""The standard attributes mean what Kubernetes defines, the same through every door.

KEP-6072 and ``deviceattribute.GetNUMANodeAttribute`` (k8s.io/dynamic-resource-allocation
v0.37.2): a list-valued ``numaNode`` starts with the device's physical node; a negative
node ("no NUMA affinity") is never published. Every door (the properties, ``get``,
``wait --attribute``, ``has=``/``where=``, env and its profiles, the topology and
``nearest()``, ``doctor``, ``lint`` and the publisher) is asked the same question of
trees written the way today's drivers write them, each door run as a user runs it
(the commands as real processes).
"""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._inventory import matches
from dra_metadata._standard import lookup, numa_of
from dra_metadata.testing import MetadataTree
from tests.conftest import NO_ROOT, run_cli
from tests.test_live import make_sys

A = dm.DeviceAttribute
STD = "resource.kubernetes.io/"


#: ``python -m dra_metadata ARGS`` from the checkout, as a user runs it (no root set).
cli = partial(run_cli, env=NO_ROOT)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A pod's metadata as today's drivers write it (one claim per driver).

    - ``nic/eth``: an SR-IOV VF on node 1 whose list names the same-socket nodes
      (``numaNode: [1, 0, 2]``, as ``GetNUMANodeAttribute(..., ListAttribute)`` writes);
    - ``cpus/cpus``: two dra-driver-cpu groups, ``numaNode: [1, 0]`` with
      ``numaNodeID: 1``, and node 0;
    - ``gpus/gpu``: two NVIDIA GPUs (``pcieBusID`` in NVML's form, ``numa`` scalar), the
      first on node 0, the second on node 1;
    - ``odd/dev``: a device whose sysfs said -1, published anyway.
    """
    root = tmp_path / "tree"
    with MetadataTree(root) as built:
        built.claim("nic").request("eth").device(
            "sriovnetwork.k8snetworkplumbingwg.io",
            "node-a",
            "vf-3",
            attributes={
                STD + "numaNode": [1, 0, 2],
                STD + "pciBusID": "0000:5e:00.3",
                STD + "pcieRoot": "pci0000:5d",
            },
        )
        cpus = built.claim("cpus").request("cpus")
        cpus.device(
            "dra.cpu",
            "node-a",
            "cpudevnuma001",
            numaNodeID=1,
            attributes={STD + "numaNode": [1, 0], "dra.net/numaNode": 1},
        )
        cpus.device(
            "dra.cpu", "node-a", "cpudevnuma000", numaNodeID=0, attributes={STD + "numaNode": 0}
        )
        gpus = built.claim("gpus").request("gpu")
        for index, (bus, node) in enumerate((("18", 0), ("86", 1))):
            gpus.device(
                "gpu.nvidia.com",
                "node-a",
                f"gpu-{index}",
                uuid=f"GPU-{index}",
                pcieBusID=f"00000000:{bus.upper()}:00.0",
                numa=node,
            )
        built.claim("odd").request("dev").device(
            "x.example.com", "node-a", "d0", attributes={STD + "numaNode": -1}
        )
        built.write()
    return root


def test_numa_node_is_the_physical_node_in_python(tree: Path) -> None:
    """numa_node is the list's first element; numa_nodes the list as published; -1 is none."""
    inv = dm.inventory(tree)
    nic = inv.devices(claim="nic")[0]
    assert (nic.numa_node, nic.numa_nodes) == (1, (1, 0, 2))
    assert nic.device.numa_node == 1
    odd = inv.devices(claim="odd")[0]
    assert (odd.numa_node, odd.numa_nodes) == (None, ())
    assert numa_of(odd.device).unknown == (STD + "numaNode",)


def test_get_prints_the_physical_node_and_the_whole_list(tree: Path) -> None:
    """get numaNode prints 1 for [1, 0, 2], get numaNodes all three in order."""
    args = ("get", "--root", str(tree), "--claim", "nic", "--request", "eth")
    node, nodes = cli(*args, "numaNode"), cli(*args, "numaNodes")
    assert (node.returncode, node.stdout) == (0, "1\n")
    assert "the physical node of 1,0,2" in node.stderr
    assert (nodes.returncode, nodes.stdout) == (0, "1,0,2\n")


def test_get_says_a_negative_node_is_no_node(tree: Path) -> None:
    """get numaNode of a device that published -1 prints nothing and says why (exit 1)."""
    done = cli("get", "--root", str(tree), "--claim", "odd", "--request", "dev", "numaNode")
    assert (done.returncode, done.stdout) == (1, "")
    assert "is negative: no NUMA affinity, so no NUMA node is known" in done.stderr


def test_env_writes_the_physical_node_and_first_seen_order(tree: Path) -> None:
    """_NUMA_NODE is the physical node; the request's _NUMA_NODES keeps first-seen order."""
    env = dm.env_vars(root=tree)
    assert env["DRA_NIC_ETH_0_NUMA_NODE"] == env["DRA_NIC_ETH_NUMA_NODE"] == "1"
    assert env["DRA_NIC_ETH_NUMA_NODES"] == "1,0,2"
    assert env["DRA_CPUS_CPUS_NUMA_NODES"] == "1,0"  # cpudevnuma001 first, then node 0
    assert "DRA_CPUS_CPUS_NUMA_NODE" not in env  # two physical nodes
    assert env["DRA_GPUS_GPU_NUMA_NODES"] == "0,1"
    assert not [name for name in env if name.startswith("DRA_ODD_DEV") and "NUMA" in name]
    assert "-1" not in env.values()


def test_no_disagreement_when_the_scalar_is_the_lists_first(tree: Path) -> None:
    """numaNodeID 1 beside numaNode [1, 0] agree (dra-driver-cpu); -1 is said as a problem."""
    topo = dm.inventory(tree).topology()
    messages = [problem.message for problem in topo.problems]
    assert not [m for m in messages if "disagree" in m], messages
    assert [m for m in messages if "'d0'" in m and "no NUMA affinity" in m]


def test_disagreement_is_a_different_physical_node(tmp_path: Path) -> None:
    """A scalar naming another node than the list's first is a disagreement."""
    device = dm.Device(
        "dra.cpu", "p", "c", {"numaNodeID": A(int=0), STD + "numaNode": A(ints=(1, 0))}
    )
    assert numa_of(device).disagree
    lists = dm.Device(
        "x", "p", "c", {STD + "numaNode": A(ints=(1, 0)), "dra.net/numaNode": A(ints=(1, 2))}
    )
    assert numa_of(lists).disagree
    same = dm.Device(
        "x", "p", "c", {STD + "numaNode": A(ints=(1, 0)), "dra.net/numaNode": A(int=1)}
    )
    assert not numa_of(same).disagree


def test_alignment_is_set_intersection_and_ties_go_to_the_physical_node(tree: Path) -> None:
    """The NIC (1,0,2) aligns with both GPUs; nearest() picks the GPU on its physical node."""
    topo = dm.inventory(tree).topology()
    nic = topo.nics[0]
    gpu0, gpu1 = topo.gpus
    assert topo.affinity(nic, gpu0) == topo.affinity(nic, gpu1) == "numa"
    assert topo.nearest(nic, kind="gpu") is gpu1  # node 1 = the NIC's physical node
    assert topo.nearest(gpu0, kind="cpu") is topo.find("cpu1")  # cpudevnuma000, node 0
    assert topo.nearest(gpu1, kind="cpu") is topo.find("cpu0")  # cpudevnuma001, node 1
    odd = topo.find(topo.devices[-1])
    assert odd.name == "d0"
    assert all(topo.affinity(odd, d) == "unknown" for d in topo.gpus)


def test_profile_numa_binds_to_the_physical_nodes(tree: Path) -> None:
    """--profile numa: NUMA_NODES every node, numactl bound to the physical ones."""
    nic = dm.env_vars(root=tree, claim="nic", profile="numa")
    assert nic["NUMACTL_OPTIONS"] == "--cpunodebind=1 --membind=1"
    odd = cli("env", "--root", str(tree), "--claim", "odd", "--profile", "numa")
    assert odd.returncode == 65
    assert "no device has a NUMA node" in odd.stderr


def test_doctor_compares_sysfs_with_the_physical_node(tree: Path, tmp_path: Path) -> None:
    """sysfs numa_node 0 for a device published as [1, 0, 2] is a finding, 1 is not."""
    for sysfs_node, ok in ((1, True), (0, False)):
        sys_root = make_sys(
            tmp_path / f"sys{sysfs_node}", {"0000:5e:00.3": ("pci0000:5d", sysfs_node)}
        )
        report = dm.check_live(tree, sys_root=str(sys_root))
        (finding,) = [f for f in report.findings if f.check == "numa-node" and "vf-3" in f.subject]
        assert finding.ok is ok, finding
        assert finding.expected.startswith("physical node 1 of 1,0,2")


def test_lint_reports_a_negative_node_and_validate_accepts_it_as_go_does(tree: Path) -> None:
    """-1 is DRA118 for lint, while validate (Go's rules) accepts the file."""
    path = next((tree / "resourceclaims" / "odd").rglob("*-metadata.json"))
    assert [p.code for p in dm.lint(path.read_bytes(), path=str(path))] == ["DRA118"]
    assert dm.validate(dm.read_file(path)) == []
    assert cli("validate", str(path)).returncode == 0
    assert cli("lint", str(path)).returncode == 1


@pytest.mark.parametrize("value", [-1, [-1], [-1, 0], 1024])
def test_the_publisher_refuses_what_upstream_never_publishes(tmp_path: Path, value: object) -> None:
    """A negative NUMA node, or one past Linux's 1023, is a PublishError (GetNUMANodeAttribute)."""
    publisher = dm.MetadataPublisher(
        "gpu.example.com", plugin_data_dir=tmp_path / "plugin", cdi_dir=tmp_path / "cdi"
    )
    with pytest.raises(dm.PublishError, match="DRA118"):
        publisher.device("p", "gpu-0", attributes={STD + "numaNode": value})  # type: ignore[dict-item] # the bad input
    assert not list((tmp_path / "plugin").rglob("*.json"))


# One name, one lookup: get, wait --attribute, has=, where= and attribute() agree.


def test_every_door_finds_an_alias_by_its_standard_name(tree: Path) -> None:
    """pciBusID on NVIDIA GPUs (pcieBusID): get, wait --attribute, has= and attribute()."""
    args = ("--root", str(tree), "--claim", "gpus", "--request", "gpu")
    got = cli("get", *args, "pciBusID")
    assert (got.returncode, got.stdout) == (0, "0000:18:00.0\n0000:86:00.0\n")
    start = time.monotonic()
    waited = cli("wait", *args, "--attribute", "pciBusID", "--timeout", "20s")
    assert waited.returncode == 0, waited.stderr
    assert time.monotonic() - start < 10  # at once: it is there (a process start, not 20 s)
    inv = dm.inventory(tree)
    assert [d.name for d in inv.devices(has="pciBusID")] == ["gpu-0", "gpu-1", "vf-3"]
    assert [d.name for d in inv.devices(has=STD + "pciBusID")] == ["gpu-0", "gpu-1", "vf-3"]
    gpu = inv.devices(claim="gpus")[0]
    assert gpu.attribute("pciBusID") == "0000:18:00.0"  # the answer, in the standard form
    entry = gpu.find_attribute("pciBusID")
    assert entry is not None
    assert entry.value == "00000000:18:00.0"
    assert dm.has_attribute("numaNode")(dm.read_resource_claim("gpus", "gpu", root=tree))


def test_every_door_counts_a_negative_node_as_none_and_numa_nodes_as_the_list(
    tree: Path,
) -> None:
    """-1 is no node and numaNodes asks for the list: get, wait --attribute, has= and
    has_attribute() answer alike (KEP-6072), and wait says why it does not hold."""
    inv = dm.inventory(tree)
    with_node = ["cpudevnuma001", "cpudevnuma000", "gpu-0", "gpu-1", "vf-3"]
    for name in ("numaNode", "numaNodes", STD + "numaNode", STD + "numaNodes"):
        assert sorted(d.name for d in inv.devices(has=name)) == sorted(with_node), name
        odd = dm.read_resource_claim("odd", "dev", root=tree)
        assert not dm.has_attribute(name)(odd)
        assert dm.has_attribute(name)(dm.read_resource_claim("nic", "eth", root=tree))
    odd_device = inv.devices(claim="odd")[0]
    assert odd_device.attribute("numaNode") is None  # the answer: no node
    entry = odd_device.find_attribute("numaNode")
    assert entry is not None
    assert entry.value == -1
    args = ("--root", str(tree), "--claim", "odd", "--request", "dev")
    got = cli("get", *args, "numaNodes")
    assert (got.returncode, got.stdout) == (1, "")
    waited = cli("wait", *args, "--attribute", "numaNodes", "--timeout", "300ms")
    assert waited.returncode == 1
    assert (
        "without attribute numaNodes (device node-a/d0: resource.kubernetes.io/numaNode is "
        "negative: no NUMA affinity, so no NUMA node is known (KEP-6072))"
    ) in waited.stderr
    nodes = ("--root", str(tree), "--claim", "nic", "--request", "eth")
    assert cli("wait", *nodes, "--attribute", "numaNodes", "--timeout", "20s").returncode == 0


def test_where_and_on_numa_node_select_the_same_devices(tree: Path) -> None:
    """where numaNode, its qualified name and topology.on_numa_node() agree on every node."""
    inv = dm.inventory(tree)
    topo = inv.topology()
    for node in (0, 1, 2, -1):
        expected = [d.id for d in topo.on_numa_node(node)]
        assert [d.id for d in inv.devices(where={"numaNode": node})] == sorted(
            expected, key=[d.id for d in inv.devices()].index
        ), node
        qualified = inv.devices(where={STD + "numaNode": node})
        assert [d.id for d in qualified] == [d.id for d in inv.devices(where={"numaNode": node})]
    assert [d.name for d in inv.devices(where={"pciBusID": "0000:86:00.0"})] == ["gpu-1"]
    assert [d.name for d in inv.devices(where={"numaNode": [2, 5]})] == ["vf-3"]


def test_lookup_order_is_as_documented() -> None:
    """As given, the driver's domain, the standard name, then the known aliases."""
    own, std = A(string="own"), A(string="std")
    nvidia = A(string="00000000:18:00.0")
    dev = dm.Device("gpu.nvidia.com", "p", "g", {"pcieBusID": nvidia})
    assert lookup(dev, "pciBusID") == ("gpu.nvidia.com/pcieBusID", nvidia)
    dev = dm.Device("gpu.amd.com", "p", "g", {"pciBusID": own, STD + "pciBusID": std})
    assert lookup(dev, "pciBusID") == ("gpu.amd.com/pciBusID", own)
    assert lookup(dev, STD + "pciBusID") == (STD + "pciBusID", std)
    assert lookup(dev, "gpu.amd.com/pciBusID") == ("gpu.amd.com/pciBusID", own)
    dev = dm.Device("x.example.com", "p", "g", {STD + "model": std})
    assert lookup(dev, "model") == (STD + "model", std)
    assert lookup(dev, "y.example.com/model") is None
    assert (
        lookup(dm.Device("x", "p", "g", {"gpu.nvidia.com/pcieBusID": nvidia}), "pcieBusID") is None
    )


@given(
    st.lists(st.integers(-2, 5), min_size=1, max_size=4),
    st.one_of(st.integers(-2, 5), st.lists(st.integers(-2, 5), min_size=1, max_size=3)),
)
def test_where_on_numa_is_set_intersection_over_known_nodes(
    published: list[int], wanted: int | list[int]
) -> None:
    """where numaNode matches when the wanted nodes share one with the device's known nodes."""
    device = dm.Device("x", "p", "d", {STD + "numaNode": A(ints=tuple(published))})
    known = set() if published[0] < 0 else {n for n in published if n >= 0}
    asked = set(wanted) if isinstance(wanted, list) else {wanted}
    assert matches(device, "numaNode", wanted) == bool(known & asked)
    assert device.numa_node == (None if not known else published[0])


# Malformed standard values: refused the same by every door that prints the standard form.


def test_a_malformed_pci_address_is_refused_by_get_and_env_alike(tmp_path: Path) -> None:
    """get and env exit 65 with one message naming device and attribute; show prints it."""
    with MetadataTree(tmp_path) as built:
        built.claim("bad").request("r").device(
            "x.example.com", "p", "d0", attributes={STD + "pciBusID": "not-a-pci"}
        )
        built.write()
    args = ("--root", str(tmp_path), "--claim", "bad", "--request", "r")
    got = cli("get", *args, "pciBusID")
    env = cli("env", *args)
    message = (
        "device x.example.com/p/d0: resource.kubernetes.io/pciBusID holds 'not-a-pci', "
        "which is not a PCI address in any form (standard form: 0000:3b:00.0)"
    )
    assert (got.returncode, got.stdout, got.stderr) == (65, "", f"dra-metadata: {message}\n")
    assert (env.returncode, env.stdout, env.stderr) == (65, "", f"dra-metadata: {message}\n")
    shown = cli("show", *args)
    assert shown.returncode == 0
    assert "not-a-pci" in shown.stdout
    assert json.loads(cli("show", *args, "--format", "go").stdout)


def test_a_malformed_pcie_root_is_refused_too(tmp_path: Path) -> None:
    """pcieRoot that is no pci<domain>:<bus> is refused by get pcieRoot and env."""
    with MetadataTree(tmp_path) as built:
        built.claim("bad").request("r").device(
            "x.example.com", "p", "d0", attributes={STD + "pcieRoot": "../../etc"}
        )
        built.write()
    args = ("--root", str(tmp_path), "--claim", "bad", "--request", "r")
    for done in (cli("get", *args, "pcieRoot"), cli("env", *args)):
        assert done.returncode == 65, done
        assert (
            "resource.kubernetes.io/pcieRoot holds '../../etc', which is not a PCIe root"
            in done.stderr
        )


# "Did you mean", from one helper.


def test_unknown_names_get_a_suggestion(tree: Path, tmp_path: Path) -> None:
    """An attribute typo, a kind in another case or plural: each names the closest."""
    args = ("--root", str(tree), "--claim", "gpus", "--request", "gpu")
    for typo in ("uuuid", "UUID"):
        done = cli("get", *args, typo)
        assert done.returncode == 1, done.stderr
        assert "did you mean 'uuid'?" in done.stderr, done.stderr
    nic = cli("get", "--root", str(tree), "--claim", "nic", "--request", "eth", "interface")
    assert "did you mean 'interfaceName'?" in nic.stderr
    gpu = dm.inventory(tree).devices(claim="gpus")[0]
    with pytest.raises(dm.AttributeNotFoundError, match="did you mean 'uuid'"):
        gpu.require("uuuid")
    assert gpu.attribute("uuuid") is None
    topo = dm.inventory(tree).topology()
    with pytest.raises(ValueError, match="did you mean 'nic'"):
        topo.nearest(topo.gpus[0], kind="nics")  # type: ignore[arg-type] # the bad input
    with pytest.raises(ValueError, match="did you mean 'gpu'"):
        topo.of_kind("GPU")  # type: ignore[arg-type] # the bad input
