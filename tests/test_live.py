"""The live check: metadata against sysfs, a real network namespace and real cgroup files."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata._live import parse_cpu_list
from tests.conftest import REPO
from tests.test_topology import STD, TOPOLOGY_ROOT, run, write_claims

A = dm.DeviceAttribute
#: PCI address -> (PCIe root, numa_node) of the sample pod's devices.
SAMPLE_PCI = {
    "0000:18:00.0": ("pci0000:17", 0),
    "0000:86:00.0": ("pci0000:85", 1),
    "0000:19:00.0": ("pci0000:17", 0),
    "0000:87:00.0": ("pci0000:85", 1),
}


def make_sys(root: Path, devices: dict[str, tuple[str, int]]) -> Path:
    """A sysfs-shaped tree: devices/<root>/<port>/<addr>/numa_node, bus/pci/devices links."""
    bus = root / "bus" / "pci" / "devices"
    bus.mkdir(parents=True, exist_ok=True)
    for address, (pcie_root, numa) in devices.items():
        port = pcie_root.removeprefix("pci") + ":00.0"
        device = root / "devices" / pcie_root / port / address
        device.mkdir(parents=True)
        (device / "numa_node").write_text(f"{numa}\n")
        (bus / address).symlink_to(os.path.relpath(device, bus))
    return root


def make_cgroup(root: Path, cpus: str, *, v1: bool = False) -> tuple[Path, Path]:
    """A procfs with self/cgroup and a cgroup tree (v2, or v1's cpuset hierarchy) with ``cpus``."""
    proc = root / "proc" / "self"
    proc.mkdir(parents=True)
    if v1:
        (proc / "cgroup").write_text("5:memory:/pod\n3:cpuset,cpu:/pod\n0::/\n")
        where = root / "cgroup" / "cpuset" / "pod"
        where.mkdir(parents=True)
        (where / "cpuset.effective_cpus").write_text(cpus + "\n")
    else:
        (proc / "cgroup").write_text("0::/kubepods/pod1\n")
        where = root / "cgroup" / "kubepods" / "pod1"
        where.mkdir(parents=True)
        (where / "cpuset.cpus.effective").write_text(cpus + "\n")
    return root / "proc", root / "cgroup"


def by_check(report: dm.LiveReport) -> dict[str, list[bool]]:
    """Finding results grouped by check."""
    found: dict[str, list[bool]] = {}
    for finding in report.findings:
        found.setdefault(finding.check, []).append(finding.ok)
    return found


def test_sample_pod_matches_a_sysfs_tree_and_cgroup(tmp_path: Path) -> None:
    """PCI devices, their NUMA nodes and PCIe roots, and the CPUs all match: only NICs differ."""
    sys_root = make_sys(tmp_path / "sys", SAMPLE_PCI)
    proc, cgroup = make_cgroup(tmp_path, "0-1,16-17")
    report = dm.check_live(
        TOPOLOGY_ROOT,
        sys_root=str(sys_root),
        proc_root=str(proc),
        cgroup_root=str(cgroup),
        ip=str(tmp_path / "no-ip"),
    )
    checks = by_check(report)
    assert checks["pci-device"] == [True] * 4
    assert checks["numa-node"] == [True] * 2  # the NICs; NVIDIA's GPUs publish no NUMA node
    assert checks["pcie-root"] == [True] * 4
    assert checks["cpuset"] == [True] * 4
    assert checks["file"] == [True] * 3
    assert [f.check for f in report.problems] == ["interface", "interface"]
    assert "install iproute2" in str(report.problems[0])


def test_numa_node_and_pcie_root_that_differ_say_expected_found_and_file(tmp_path: Path) -> None:
    """A sysfs NUMA node or PCIe root other than the metadata's is a finding naming all three."""
    devices = dict(SAMPLE_PCI)
    devices["0000:18:00.0"] = ("pci0000:3a", -1)
    devices["0000:87:00.0"] = ("pci0000:85", 0)
    sys_root = make_sys(tmp_path / "sys", devices)
    report = dm.check_live(TOPOLOGY_ROOT, sys_root=str(sys_root), proc_root=str(tmp_path))
    gpu0 = [f for f in report.problems if f.subject == "gpu0 gpu-0"]
    assert [(f.check, f.expected, f.found) for f in gpu0] == [
        ("pcie-root", "pci0000:17", "pci0000:3a"),  # NVIDIA publishes no NUMA node for a GPU
    ]
    nic0 = [f.check for f in report.problems if f.subject == "nic0 ens1f0"]
    assert nic0 == ["interface"]  # not in this network namespace
    assert all(f.path.endswith("gpus/gpu/gpu.nvidia.com-metadata.json") for f in gpu0)
    (nic1,) = [f for f in report.problems if f.subject == "nic1 ens2f0" and f.check != "interface"]
    assert (nic1.check, nic1.expected, nic1.found) == (
        "numa-node",
        "physical node 1 (dra.net/numaNode)",
        "node 0",
    )


def test_a_missing_pci_device_says_what_to_check(tmp_path: Path) -> None:
    """A PCI address with no sysfs entry is a pci-device finding with what to check."""
    report = dm.check_live(TOPOLOGY_ROOT, sys_root=str(make_sys(tmp_path / "sys", {})))
    problem = next(f for f in report.problems if f.check == "pci-device")
    assert problem.expected == "0000:18:00.0"
    assert "is sysfs mounted" in str(problem)


def test_the_machines_own_sysfs(tmp_path: Path) -> None:
    """A device of this machine's /sys/bus/pci, described by its own sysfs, passes every check."""
    bus = Path("/sys/bus/pci/devices")
    addresses = sorted(os.listdir(bus)) if bus.is_dir() else []
    if not addresses:
        pytest.skip("this machine's /sys has no PCI devices")
    address = addresses[0]
    real = os.path.realpath(bus / address)
    pcie_root = os.path.relpath(real, os.path.realpath("/sys/devices")).split(os.sep)[0]
    numa = int((bus / address / "numa_node").read_text())
    attributes = {STD + "pciBusID": A(string=address), STD + "pcieRoot": A(string=pcie_root)}
    if numa >= 0:
        attributes[STD + "numaNode"] = A(int=numa)
    write_claims(tmp_path / "ok", {"c/r": [dm.Device("x.example.com", "p", "d", attributes)]})
    report = dm.check_live(tmp_path / "ok")
    assert [f.check for f in report.findings if f.ok] == ["file", "pci-device"] + (
        ["numa-node"] if numa >= 0 else []
    ) + ["pcie-root"]
    assert report.ok
    attributes[STD + "numaNode"] = A(int=numa + 7)
    attributes[STD + "pcieRoot"] = A(string="pci9999:99")
    write_claims(tmp_path / "bad", {"c/r": [dm.Device("x.example.com", "p", "d", attributes)]})
    assert [f.check for f in dm.check_live(tmp_path / "bad").problems] == ["numa-node", "pcie-root"]


def test_cpus_against_this_machines_real_cgroup(tmp_path: Path) -> None:
    """A CPU this process may run on passes against the real cgroup files; CPU 4095 does not."""
    mine = min(os.sched_getaffinity(0))
    cpus = [
        dm.Device("dra.cpu", "p", "mine", {"cpuID": A(int=mine)}),
        dm.Device("dra.cpu", "p", "far", {"cpuID": A(int=4095)}),
    ]
    write_claims(tmp_path, {"c/r": cpus})
    report = dm.check_live(tmp_path)
    findings = [f for f in report.findings if f.check == "cpuset"]
    if findings and "no cpuset file" in findings[0].found:
        pytest.skip(f"this machine's cgroup has no cpuset file: {findings[0].found}")
    assert [f.ok for f in findings] == [True, False]
    source = findings[0].found.partition(":")[0]
    assert mine in parse_cpu_list(Path(source).read_text())
    assert "cpu 4095 in the cpuset" in str(findings[1])


@pytest.mark.parametrize("v1", [False, True])
def test_cpuset_of_cgroup_v2_and_v1(tmp_path: Path, v1: bool) -> None:
    """The effective cpuset is read from cgroup v2's cpuset.cpus.effective or v1's file."""
    proc, cgroup = make_cgroup(tmp_path, "0-3,8", v1=v1)
    write_claims(
        tmp_path / "m",
        {"c/r": [dm.Device("dra.cpu", "p", f"cpu-{n}", {"cpuID": A(int=n)}) for n in (3, 8, 9)]},
    )
    report = dm.check_live(tmp_path / "m", proc_root=str(proc), cgroup_root=str(cgroup))
    assert [f.ok for f in report.findings if f.check == "cpuset"] == [True, True, False]
    name = "cpuset.effective_cpus" if v1 else "cpuset.cpus.effective"
    assert report.problems[0].found.endswith(f"{name}: 0-3,8")


def test_no_cgroup_says_which_option_points_elsewhere(tmp_path: Path) -> None:
    """Without a readable cgroup file the cpuset finding says which roots to point elsewhere."""
    write_claims(tmp_path, {"c/r": [dm.Device("dra.cpu", "p", "c", {"cpuID": A(int=0)})]})
    (problem,) = dm.check_live(tmp_path, proc_root=str(tmp_path / "none")).problems
    assert problem.check == "cpuset"
    assert "--cgroup-root, --proc-root" in str(problem)


@contextlib.contextmanager
def netns(*links: tuple[str, str, tuple[str, ...]]) -> Iterator[str]:
    """A real network namespace holding veth interfaces (name, MAC, IPs); removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("making a network namespace needs root")
    name = f"dramd-{uuid.uuid4().hex[:8]}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make a network namespace: {made.stderr.strip()}")
    try:
        for index, (ifname, mac, ips) in enumerate(links):
            host = f"{name[-8:]}h{index}"
            commands = [
                ["ip", "link", "add", host, "type", "veth", "peer", "name", ifname, "netns", name],
                ["ip", "-n", name, "link", "set", ifname, "address", mac],
                *(["ip", "-n", name, "addr", "add", ip, "dev", ifname] for ip in ips),
                ["ip", "-n", name, "link", "set", ifname, "up"],
            ]
            for command in commands:
                done = subprocess.run(command, capture_output=True, text=True)
                if done.returncode != 0:
                    pytest.skip(f"{' '.join(command)}: {done.stderr.strip()}")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def nic(name: str, ifname: str, mac: str, *ips: str) -> dm.Device:
    """A dra.net NIC with network data."""
    return dm.Device("dra.net", "p", name, network_data=dm.NetworkDeviceData(ifname, ips, mac))


def doctor_in(namespace: str, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``dra-metadata doctor`` inside the namespace, as a pod's process would."""
    return subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            namespace,
            sys.executable,
            "-m",
            "dra_metadata",
            "doctor",
            "--root",
            str(root),
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )


def test_doctor_in_a_real_network_namespace(tmp_path: Path) -> None:
    """In a namespace with the metadata's veth, MAC and IPs doctor exits 0; a differing one, 1."""
    ok = ("net1", "b8:3f:d2:aa:01:05", ("10.10.1.5/24", "fd00:10::5/64"))
    other = ("net2", "b8:3f:d2:aa:02:05", ("10.10.2.9/24",))
    write_claims(tmp_path / "ok", {"rdma/nic": [nic("ens1f0", *ok[:2], *ok[2])]})
    write_claims(
        tmp_path / "bad",
        {
            "rdma/nic": [
                nic("ens1f0", *ok[:2], *ok[2]),
                nic("ens2f0", "net2", "B8:3F:D2:AA:02:06", "10.10.2.5/24"),
                nic("ens3f0", "net3", "b8:3f:d2:aa:03:05"),
            ]
        },
    )
    with netns(ok, other) as namespace:
        done = doctor_in(namespace, tmp_path / "ok", "--verbose")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "ok: " in done.stdout
        assert "ip: expected fd00:10::5/64 on net1, found fd00:10::5/64" in done.stdout
        assert done.stdout.endswith("5 checks, 0 differences\n")

        done = doctor_in(namespace, tmp_path / "bad")
        assert done.returncode == 1
        lines = done.stdout.splitlines()
        assert [line.split(": ", 2)[1:] for line in lines[:-1]] == [
            [
                "nic1 ens2f0",
                "hardware-address: expected B8:3F:D2:AA:02:06, found "
                "b8:3f:d2:aa:02:05 (net2 has another hardware address)",
            ],
            [
                "nic1 ens2f0",
                "ip: expected 10.10.2.5/24 on net2, found 10.10.2.9/24 (net2 lacks "
                "this address: the driver's network setup did not finish)",
            ],
            [
                "nic2 ens3f0",
                "interface: expected net3, found no such interface (there: lo, net1, "
                "net2) (run this in the pod's network namespace; the driver may not have moved it "
                "yet)",
            ],
        ]
        assert lines[0].startswith(
            str(tmp_path / "bad" / "resourceclaims/rdma/nic/dra.net-metadata.json")
        )
        assert "3 differences" in done.stderr

        done = doctor_in(namespace, tmp_path / "bad", "--json")
        data = json.loads(done.stdout)
        assert (data["ok"], data["problems"]) == (False, 3)


def test_stale_file_is_reported(tmp_path: Path) -> None:
    """A bind-mounted file whose node copy was replaced (st_nlink 0) is a stale finding."""
    if os.geteuid() != 0:
        pytest.skip("bind mounts need root")
    write_claims(tmp_path / "node", {"c/r": [dm.Device("x.example.com", "p", "d")]})
    write_claims(tmp_path / "ctr", {"c/r": [dm.Device("x.example.com", "p", "d")]})
    relative = "resourceclaims/c/r/x.example.com-metadata.json"
    host, mounted = tmp_path / "node" / relative, tmp_path / "ctr" / relative
    done = subprocess.run(
        ["mount", "--bind", "-o", "ro", str(host), str(mounted)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {done.stderr.strip()}")
    try:
        assert dm.check_live(tmp_path / "ctr").ok
        replacement = host.with_suffix(".tmp")
        replacement.write_bytes(host.read_bytes())
        replacement.rename(host)
        (problem,) = dm.check_live(tmp_path / "ctr").problems
        assert (problem.check, problem.path) == ("file", str(mounted))
        assert "stale" in problem.found
        assert "restart the container" in str(problem)
    finally:
        subprocess.run(["umount", str(mounted)], capture_output=True)


def test_undecodable_file_is_a_finding_not_a_traceback(tmp_path: Path) -> None:
    """A file that does not decode is a file finding with the decode error."""
    write_claims(tmp_path, {"c/r": [dm.Device("x.example.com", "p", "d")]})
    (tmp_path / "resourceclaims/c/r/zz.example.com-metadata.json").write_text("{")
    code, out, err = run("doctor", "--root", str(tmp_path))
    assert code == 1
    assert "file: expected a readable metadata file, found undecodable" in out
    assert "Traceback" not in err


def test_doctor_without_metadata_says_what_to_do(tmp_path: Path) -> None:
    """doctor with nothing mounted exits 66 and says how metadata gets into a container."""
    code, out, err = run("doctor", "--root", str(tmp_path / "none"))
    assert (code, out) == (66, "")
    assert "--root or DRA_METADATA_ROOT" in err


def test_variables_named_after_a_claim_join_the_claim() -> None:
    """DRA_CPUSET_<claimUID> and a value holding a UID map back to their claim and requests."""
    inv = dm.inventory(TOPOLOGY_ROOT)
    environ = {
        "PATH": "/usr/bin",
        "DRA_CPUSET_2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901": "0-1,16-17",
        "GPU_RESOURCE_CLAIM": "5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6",
        "OTHER_CLAIM": "00000000-0000-4000-8000-000000000000",
    }
    found = [(v.name, v.kind, v.claim, v.requests) for v in inv.claim_variables(environ)]
    assert found == [
        ("DRA_CPUSET_2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901", "claim", "cpus", ("cpus",)),
        ("GPU_RESOURCE_CLAIM", "template", "gpus", ("gpu",)),
    ]
    assert inv.claim_variables({}) == []


def test_the_cpu_drivers_cpuset_variable_is_checked(tmp_path: Path) -> None:
    """DRA_CPUSET_<claimUID> of a mounted claim must lie in the effective cpuset."""
    proc, cgroup = make_cgroup(tmp_path, "0-3")
    uid = "2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901"
    # One finding a range: a range of any size costs one comparison.
    for value, oks in (("0-1", [True]), ("2,17", [True, False]), ("1-3", [True])):
        report = dm.check_live(
            TOPOLOGY_ROOT,
            sys_root=str(tmp_path),
            proc_root=str(proc),
            cgroup_root=str(cgroup),
            environ={f"DRA_CPUSET_{uid.replace('-', '_')}": value, "DRA_CPUSET_OTHER": "99"},
        )
        found = [f for f in report.findings if f.subject.startswith("$DRA_CPUSET_")]
        assert [f.ok for f in found] == oks
        assert all(f.path == "claim 'cpus'" for f in found)
    report = dm.check_live(TOPOLOGY_ROOT, environ={f"DRA_CPUSET_{uid}": "zero"})
    (bad,) = [f for f in report.findings if f.subject.startswith("$DRA_CPUSET_")]
    assert "no CPU list" in str(bad)


def test_check_live_without_a_root_says_what_to_do(tmp_path: Path) -> None:
    """check_live() on a root that does not exist raises MetadataNotFoundError with the hint."""
    with pytest.raises(dm.MetadataNotFoundError, match="--root or DRA_METADATA_ROOT"):
        dm.check_live(tmp_path / "none")


def test_cgroup_v2_without_cpuset_in_the_leaf_reads_the_nearest_ancestor(tmp_path: Path) -> None:
    """Where the own cgroup v2 has no cpuset file, the nearest ancestor's is the effective one."""
    proc, cgroup = make_cgroup(tmp_path, "0-3")
    (proc / "self" / "cgroup").write_text("0::/kubepods/pod1/ctr\n")
    (cgroup / "kubepods" / "pod1" / "ctr").mkdir()
    write_claims(tmp_path / "m", {"c/r": [dm.Device("dra.cpu", "p", "c", {"cpuID": A(int=2)})]})
    (finding,) = dm.check_live(
        tmp_path / "m", proc_root=str(proc), cgroup_root=str(cgroup)
    ).findings[1:]
    assert finding.ok
    assert finding.found == f"{cgroup}/kubepods/pod1/cpuset.cpus.effective: 0-3"
