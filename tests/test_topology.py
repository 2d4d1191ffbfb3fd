"""Topology: device kinds, NUMA placement and its aliases, affinity, the tree, the matrix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata._cli import main
from examples import make_topology_tree
from tests.conftest import REPO, peak_kib

A = dm.DeviceAttribute
STD = dm.STANDARD_DOMAIN + "/"
TOPOLOGY_ROOT = REPO / "examples" / "topology-tree"


def write_claims(root: Path, claims: dict[str, list[dm.Device]]) -> Path:
    """One claim per key (``claim/request``), all devices of a driver in one file."""
    for where, devices in claims.items():
        claim, request = where.split("/")
        drivers = dict.fromkeys(device.driver for device in devices)
        for driver in drivers:
            md = dm.DeviceMetadata(
                metadata=dm.ObjectMeta(name=claim, namespace="ns", uid=f"uid-{claim}"),
                requests=(
                    dm.DeviceMetadataRequest(
                        request, devices=tuple(d for d in devices if d.driver == driver)
                    ),
                ),
            )
            path = root / "resourceclaims" / claim / request / f"{driver}-metadata.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(dm.encode(md))
    return root


def topology_of(tmp_path: Path, *devices: dm.Device, **kwargs: object) -> dm.Topology:
    """The topology of one claim ``c/r`` holding ``devices``."""
    write_claims(tmp_path, {"c/r": list(devices)})
    return dm.inventory(tmp_path).topology(**kwargs)  # type: ignore[arg-type] # test helper


def run(*args: str) -> tuple[int, str, str]:
    """Run the CLI in this process; return (exit code, stdout, stderr)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_topology_tree_is_what_the_generator_writes(tmp_path: Path) -> None:
    """The committed topology tree equals a fresh run of make_topology_tree.py, byte for byte."""
    make_topology_tree.write_tree(str(tmp_path))
    fresh = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(TOPOLOGY_ROOT): p.read_bytes()
        for p in TOPOLOGY_ROOT.rglob("*")
        if p.is_file()
    }
    assert fresh == committed


def test_sample_pod_shares_pcie_roots_and_numa_nodes() -> None:
    """Each GPU of the sample pod shares a PCIe root with a NIC and with a CPU group's root list."""
    topo = dm.inventory(TOPOLOGY_ROOT).topology()
    assert [d.kind for d in topo.devices] == ["gpu", "gpu", "nic", "nic"] + ["cpu"] * 4
    for gpu in topo.gpus:
        nic = topo.nearest(gpu, kind="nic")
        cpu = topo.nearest(gpu, kind="cpu")
        assert nic is not None
        assert cpu is not None
        assert topo.affinity(gpu, nic) == "pcie-root"
        assert topo.affinity(gpu, cpu) == "pcie-root"
        assert gpu.numa_nodes == ()  # NVIDIA publishes no NUMA node for a full GPU
    assert topo.problems == ()


@pytest.mark.parametrize(
    ("driver", "attributes", "network", "kind"),
    [
        ("gpu.nvidia.com", {}, False, "gpu"),
        ("gpu.amd.com", {}, False, "gpu"),
        ("gpu.intel.com", {}, False, "gpu"),
        ("gpu.example.com", {}, False, "gpu"),
        ("dra.cpu", {}, False, "cpu"),
        ("dra.net", {}, False, "nic"),
        ("dra.memory", {}, False, "memory"),
        ("sriov.example.com", {}, True, "nic"),
        ("sriovnetwork.k8snetworkplumbingwg.io", {}, False, "nic"),
        (
            "x.example.com",
            {"uuid": A(string="GPU-1"), "productName": A(string="A100")},
            False,
            "gpu",
        ),
        ("x.example.com", {"uuid": A(string="GPU-1")}, False, "other"),
        ("x.example.com", {"dra.net/ifName": A(string="eth1")}, False, "nic"),
        ("x.example.com", {"dra.cpu/cpuID": A(int=3)}, False, "cpu"),
        ("fpga.example.com", {"model": A(string="U250")}, False, "other"),
        ("vfio.gpu.example.com", {}, False, "gpu"),
        ("gpus.example.com", {}, False, "other"),
    ],
)
def test_kind_rules(
    tmp_path: Path, driver: str, attributes: dict[str, dm.DeviceAttribute], network: bool, kind: str
) -> None:
    """A device's kind follows the documented rules; an unknown device is other, never a guess."""
    data = dm.NetworkDeviceData(interface_name="net1") if network else None
    topo = topology_of(tmp_path, dm.Device(driver, "p", "d0", attributes, data))
    assert topo.devices[0].kind == kind


def test_kinds_can_be_overridden_by_driver_or_function(tmp_path: Path) -> None:
    """kinds= maps a driver to a kind, or is a function; a bad kind is a ValueError."""
    write_claims(tmp_path, {"c/r": [dm.Device("vfio.gpu.example.com", "p", "g")]})
    inv = dm.inventory(tmp_path)
    assert inv.topology(kinds={"vfio.gpu.example.com": "gpu"}).devices[0].kind == "gpu"
    assert inv.topology(kinds=lambda d: "nic" if d.name == "g" else None).devices[0].kind == "nic"
    with pytest.raises(ValueError, match=r"driver 'vfio\.gpu\.example\.com': kind 'accelerator'"):
        inv.topology(kinds={"vfio.gpu.example.com": "accelerator"})  # type: ignore[dict-item] # the bad input


@pytest.mark.parametrize(
    ("driver", "key", "attribute", "nodes", "source"),
    [
        ("x.example.com", STD + "numaNode", A(int=1), (1,), STD + "numaNode"),
        ("x.example.com", STD + "numaNode", A(ints=(1, 0)), (1, 0), STD + "numaNode"),
        ("dra.cpu", "numaNodeID", A(int=2), (2,), "dra.cpu/numaNodeID"),
        ("x.example.com", "dra.net/numaNode", A(int=3), (3,), "dra.net/numaNode"),
        ("x.example.com", "dra.memory/numaNode", A(int=4), (4,), "dra.memory/numaNode"),
        ("dra.memory", "dra.cpu/numaNode", A(int=4), (4,), "dra.cpu/numaNode"),
        ("gpu.amd.com", "numaNode", A(int=5), (5,), "gpu.amd.com/numaNode"),
        ("gpu.nvidia.com", "numa", A(int=6), (6,), "gpu.nvidia.com/numa"),
        ("x.example.com", "numa", A(int=6), (), None),
        ("x.example.com", STD + "numaNode", A(string="1"), (), None),
        ("x.example.com", STD + "numaNode", A(int=-1), (), None),
        ("x.example.com", STD + "numaNode", A(ints=(-1,)), (), None),
        ("x.example.com", STD + "numaNode", A(ints=(2, -1, 0)), (2, 0), STD + "numaNode"),
    ],
)
def test_numa_placement_from_the_standard_attribute_and_its_aliases(
    tmp_path: Path,
    driver: str,
    key: str,
    attribute: dm.DeviceAttribute,
    nodes: tuple[int, ...],
    source: str | None,
) -> None:
    """NUMA nodes come from the standard attribute or a documented alias, and say which."""
    topo = topology_of(tmp_path, dm.Device(driver, "p", "d0", {key: attribute}))
    device = topo.devices[0]
    assert (device.numa_nodes, device.numa_source) == (nodes, source)
    assert device.numa_node == (nodes[0] if nodes else None)  # the physical node (KEP-6072)
    assert device.numa_nodes == device.mounted.numa_nodes  # one answer, every door
    assert device.numa_node == device.mounted.numa_node


def test_disagreeing_numa_attributes_are_reported(tmp_path: Path) -> None:
    """When two NUMA attributes of one device disagree, the standard one is used and both named."""
    attributes = {STD + "numaNode": A(int=1), "numaNodeID": A(int=0)}
    topo = topology_of(tmp_path, dm.Device("dra.cpu", "p", "cpu-0", attributes))
    assert topo.devices[0].numa_node == 1
    (problem,) = topo.problems
    assert "resource.kubernetes.io/numaNode says 1, dra.cpu/numaNodeID says 0" in str(problem)
    assert "'cpu-0'" in str(problem)


def test_agreeing_aliases_are_no_problem(tmp_path: Path) -> None:
    """The CPU driver's numaNodeID and dra.net/numaNode with one value are not a disagreement."""
    attributes = {"numaNodeID": A(int=0), "dra.net/numaNode": A(int=0)}
    assert topology_of(tmp_path, dm.Device("dra.cpu", "p", "c", attributes)).problems == ()


def _dev(name: str, **attributes: dm.DeviceAttribute) -> dm.Device:
    keys = {"root": STD + "pcieRoot", "numa": STD + "numaNode", "socket": "dra.cpu/socketID"}
    return dm.Device("x.example.com", "p", name, {keys[k]: v for k, v in attributes.items()})


@pytest.mark.parametrize(
    ("a", "b", "level"),
    [
        (
            _dev("a", root=A(string="pci0000:17")),
            _dev("b", root=A(string="pci0000:17")),
            "pcie-root",
        ),
        (_dev("a", numa=A(int=0)), _dev("b", numa=A(ints=(0, 1))), "numa"),
        (_dev("a", numa=A(ints=(0, 1))), _dev("b", numa=A(int=1)), "numa"),
        (_dev("a", numa=A(ints=(0, 1))), _dev("b", numa=A(ints=(2, 3))), "different"),
        (
            _dev("a", root=A(strings=("pci0000:00", "pci0000:17"))),
            _dev("b", root=A(string="pci0000:17")),
            "pcie-root",
        ),
        (
            _dev("a", numa=A(int=0), socket=A(int=0)),
            _dev("b", numa=A(int=1), socket=A(int=0)),
            "socket",
        ),
        (_dev("a", numa=A(int=0)), _dev("b", numa=A(int=1)), "different"),
        (_dev("a", numa=A(int=0)), _dev("b"), "unknown"),
        (_dev("a", root=A(string="pci0000:17")), _dev("b", root=A(string="pci0000:85")), "unknown"),
    ],
)
def test_affinity_levels(tmp_path: Path, a: dm.Device, b: dm.Device, level: str) -> None:
    """Two devices are at the nearest level the metadata shows, unknown without placement."""
    topo = topology_of(tmp_path, a, b)
    first, second = topo.devices
    assert topo.affinity(first, second) == level
    assert topo.affinity(second, first) == level
    assert topo.affinity(first, first) == "same"


def test_nearest_prefers_the_pcie_root_then_the_numa_node(tmp_path: Path) -> None:
    """nearest() picks the same PCIe root over the same NUMA node; within= limits the search."""
    gpu = dm.Device(
        "gpu.nvidia.com",
        "p",
        "gpu-0",
        {STD + "pcieRoot": A(string="pci0000:17"), STD + "numaNode": A(int=0)},
    )
    far = dm.Device("dra.net", "p", "far", {"numaNode": A(int=1)})
    numa = dm.Device("dra.net", "p", "numa", {"numaNode": A(int=0)})
    root = dm.Device("dra.net", "p", "root", {STD + "pcieRoot": A(string="pci0000:17")})
    topo = topology_of(tmp_path, gpu, far, numa, root)
    assert topo.nearest(topo.gpus[0], kind="nic").name == "root"  # type: ignore[union-attr]
    assert topo.nearest("gpu0", kind="nic", within="numa").name == "root"  # type: ignore[union-attr]
    only_far = topology_of(tmp_path / "2", gpu, far)
    assert only_far.nearest("gpu0", kind="nic").name == "far"  # type: ignore[union-attr]
    assert only_far.nearest("gpu0", kind="nic", within="socket") is None
    assert only_far.nearest("gpu0", kind="cpu") is None


def test_find_names_the_labels_there_are(tmp_path: Path) -> None:
    """Asking for a device the topology lacks is a KeyError that lists what there is."""
    topo = dm.inventory(TOPOLOGY_ROOT).topology()
    with pytest.raises(KeyError, match="there: gpu0, gpu1, nic0"):
        topo.find("gpu7")


TREE = """\
NUMA node 0
  PCIe roots pci0000:00, pci0000:17
    cpu0-1  cpu-0..cpu-1    dra.cpu         cpus/cpus  cpus 0-1
  PCIe root pci0000:17
    nic0    ens1f0          dra.net         rdma/nic   net1 10.10.1.5/24
NUMA node 1
  PCIe roots pci0000:80, pci0000:85
    cpu2-3  cpu-16..cpu-17  dra.cpu         cpus/cpus  cpus 16-17
  PCIe root pci0000:85
    nic1    ens2f0          dra.net         rdma/nic   net2 10.10.2.5/24
no NUMA node
  PCIe root pci0000:17
    gpu0    gpu-0           gpu.nvidia.com  gpus/gpu   GPU-4a1c2e3f-5b6d-4e7f-8…
  PCIe root pci0000:85
    gpu1    gpu-1           gpu.nvidia.com  gpus/gpu   GPU-9e8d7c6b-5a4f-4e3d-8…
"""

MATRIX_TOP = """\
          gpu0   gpu1   nic0   nic1 cpu0-1 cpu2-3
gpu0         X      ?   ROOT      ?   ROOT      ?
gpu1         ?      X      ?   ROOT      ?   ROOT
nic0      ROOT      ?      X    SYS   ROOT    SYS
nic1         ?   ROOT    SYS      X    SYS   ROOT
cpu0-1    ROOT      ?   ROOT    SYS      X   SOCK
cpu2-3       ?   ROOT    SYS   ROOT   SOCK      X
"""


def test_tree_of_the_sample_pod_fits_80_columns() -> None:
    """The tree groups by NUMA node then PCIe root, joins a request's CPUs, fits 80 columns."""
    text = dm.inventory(TOPOLOGY_ROOT).topology().tree(80)
    assert text == TREE
    assert max(len(line) for line in text.splitlines()) <= 80


def test_matrix_of_the_sample_pod_fits_80_columns() -> None:
    """The matrix shows every pair's level, a legend per device and the cell codes."""
    text = dm.inventory(TOPOLOGY_ROOT).topology().matrix(80)
    assert text.startswith(MATRIX_TOP)
    assert "SOCK = same socket, SYS = different NUMA nodes, ? = not in the metadata" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_hostile_name_cannot_break_the_tree(tmp_path: Path) -> None:
    """A device name with a newline or an escape is shown escaped, on one line."""
    topo = topology_of(tmp_path, dm.Device("gpu.example.com", "p", "g\n\x1b[2J"))
    text = topo.tree()
    assert "\x1b" not in text
    assert "g\\n\\x1b[2J" in text
    assert len(text.splitlines()) == 3


def test_topology_command_prints_the_tree_at_terminal_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Written anywhere but a terminal, the tree is never cut, whatever COLUMNS says."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run("topology", "--root", str(TOPOLOGY_ROOT))
    whole = dm.inventory(TOPOLOGY_ROOT).topology().tree(10**6)
    assert (code, out, err) == (0, whole, "")
    assert "…" not in out
    assert out != TREE


def test_topology_command_matrix_and_json() -> None:
    """--matrix prints the matrix; --json every device, grouping, pair and problem."""
    code, out, _ = run("topology", "--root", str(TOPOLOGY_ROOT), "--matrix")
    assert code == 0
    assert out.startswith(MATRIX_TOP)
    code, out, _ = run("topology", "--root", str(TOPOLOGY_ROOT), "--json")
    data = json.loads(out)
    assert code == 0
    assert data["numaNodes"] == {"0": ["nic0", "cpu0", "cpu1"], "1": ["nic1", "cpu2", "cpu3"]}
    assert data["pcieRoots"] == {
        "pci0000:00": ["cpu0", "cpu1"],
        "pci0000:17": ["gpu0", "nic0", "cpu0", "cpu1"],
        "pci0000:80": ["cpu2", "cpu3"],
        "pci0000:85": ["gpu1", "nic1", "cpu2", "cpu3"],
    }
    assert data["affinity"]["gpu0"]["nic0"] == "pcie-root"
    assert data["affinity"]["gpu0"]["cpu1"] == "pcie-root"
    assert data["devices"][0]["pciBusID"] == "0000:18:00.0"
    assert data["devices"][0]["pciBusIDSource"] == "gpu.nvidia.com/pcieBusID"
    assert data["problems"] == []


def test_topology_command_kind_override_and_bad_kind(sample_root: Path) -> None:
    """--kind DRIVER=KIND reclassifies a driver; a bad one is a usage error (64)."""
    code, out, _ = run(
        "topology", "--root", str(sample_root), "--json", "--kind", "vfio.gpu.example.com=gpu"
    )
    kinds = {d["driver"]: d["kind"] for d in json.loads(out)["devices"]}
    assert code == 0
    assert kinds["vfio.gpu.example.com"] == "gpu"
    code, _, err = run("topology", "--root", str(sample_root), "--kind", "x=accelerator")
    assert code == 64
    assert "expected DRIVER=KIND" in err


def test_topology_command_reports_disagreements_and_bad_files(tmp_path: Path) -> None:
    """Disagreeing NUMA attributes go to stderr; an undecodable file exits 65, no traceback."""
    attributes = {STD + "numaNode": A(int=1), "numaNodeID": A(int=0)}
    write_claims(tmp_path, {"c/r": [dm.Device("dra.cpu", "p", "cpu-0", attributes)]})
    bad = tmp_path / "resourceclaims" / "c" / "r" / "zz.example.com-metadata.json"
    bad.write_text("{not json")
    code, out, err = run("topology", "--root", str(tmp_path))
    assert code == 65
    assert "cpu-0" in out
    assert "the NUMA attributes disagree" in err
    assert "zz.example.com-metadata.json" in err
    assert "Traceback" not in err


def test_topology_command_without_a_root_says_what_to_do(tmp_path: Path) -> None:
    """A missing root exits 66 with a line that says how metadata gets there."""
    code, out, err = run("topology", "--root", str(tmp_path / "none"))
    assert code == 66
    assert out == ""
    assert "--root or DRA_METADATA_ROOT" in err


def test_topology_example_runs() -> None:
    """examples/topology.py prints each GPU with its nearest NIC and CPUs, as a user runs it."""
    done = subprocess.run(
        [sys.executable, "examples/topology.py"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, dm.ROOT_ENV: str(TOPOLOGY_ROOT), "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "gpu-0 on pci0000:17: nic net1 (pcie-root), cpus 0-1 (pcie-root)",
        "gpu-1 on pci0000:85: nic net2 (pcie-root), cpus 16-17 (pcie-root)",
        "CUDA_VISIBLE_DEVICES=GPU-4a1c2e3f-5b6d-4e7f-8091-a2b3c4d5e6f7,"
        "GPU-9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b",
        "CUDA_DEVICE_ORDER=PCI_BUS_ID",
        "NCCL_SOCKET_IFNAME==net1,net2",
        "NCCL_IB_HCA==mlx5_0,mlx5_1",
    ]


def test_names_the_node_wrote_cannot_break_json_or_lines(tmp_path: Path) -> None:
    """A claim directory with a newline and a byte that is not UTF-8: valid JSON, one-line text."""
    claim = os.path.join(os.fsencode(tmp_path), b"resourceclaims", b"c\xff\nx", b"r")
    os.makedirs(claim)
    md = dm.DeviceMetadata(
        requests=(dm.DeviceMetadataRequest("r", (dm.Device("dra.cpu", "p", "c"),)),)
    )
    with open(os.path.join(claim, b"dra.cpu-metadata.json"), "wb") as file:
        file.write(dm.encode(md))
    code, out, _ = run("topology", "--root", str(tmp_path), "--json")
    assert code == 0
    assert json.loads(out)["devices"][0]["claim"] == "c\\xff\nx"
    code, out, _ = run("topology", "--root", str(tmp_path))
    assert code == 0
    assert "c\\xff\\nx/r" in out  # escaped as every other command escapes it
    code, out, _ = run("doctor", "--root", str(tmp_path), "--verbose", "--proc-root", str(tmp_path))
    assert len(out.splitlines()) == 2  # the file, the summary
    code, out, _ = run("doctor", "--root", str(tmp_path), "--json")
    assert json.loads(out)["findings"][0]["path"].endswith("c\\xff\nx/r/dra.cpu-metadata.json")


def _distinct_tree(root: Path, count: int) -> Path:
    """``count`` GPUs, each on a PCIe root and NUMA node of its own (no shared rows)."""
    gpus = [
        dm.Device(
            "gpu.example.com",
            "node",
            f"gpu-{index}",
            {
                "uuid": A(string=f"GPU-{index:08x}"),
                STD + "pcieRoot": A(string=f"pci{index:04x}:00"),
                STD + "numaNode": A(int=index % 1024),
            },
        )
        for index in range(count)
    ]
    return write_claims(root, {"pod/gpu": gpus})


def test_json_and_matrix_memory_stays_linear_when_no_two_devices_share_a_row(
    tmp_path: Path,
) -> None:
    """1,500 devices on distinct roots: --json and --matrix peak within 2x the tree's."""
    root = str(_distinct_tree(tmp_path, 1500))
    tree = peak_kib("topology", "--root", root, timeout=300)
    for option in ("--json", "--matrix"):
        peak = peak_kib("topology", "--root", root, option, timeout=300)
        assert peak <= 2 * tree, (option, peak, tree)


def test_out_of_memory_is_one_line_and_exit_71(tmp_path: Path) -> None:
    """A MemoryError in a command is one stderr line and exit 71, never a traceback."""
    root = str(_distinct_tree(tmp_path, 3000))
    code = (
        "import re, resource, sys\n"
        "import dra_metadata._cli as cli, dra_metadata._cli._topology, dra_metadata._topology\n"
        "import dra_metadata._inventory, dra_metadata._mounted, msgspec.json\n"
        "status = open('/proc/self/status').read()\n"
        "size = int(re.search(r'VmSize:\\s+(\\d+) kB', status).group(1)) * 1024\n"
        "resource.setrlimit(resource.RLIMIT_AS, (size + (2 << 20), resource.RLIM_INFINITY))\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "topology", "--root", root, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
        check=False,
    )
    assert done.returncode == 71, done.stderr
    assert done.stderr.startswith("dra-metadata: out of memory: raise the memory limit")
    assert len(done.stderr.splitlines()) == 1
