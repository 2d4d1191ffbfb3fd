"""Hostile device metadata meets the commands as a user runs them: real files, real processes.

Each case writes the metadata a hostile (or broken) node could mount, runs
``python -m dra_metadata`` in a child process and checks that the answer is a
clear error or finding and nothing else: no traceback, no hang, nothing read
that a valid PCI address does not name, nothing that a list can split.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dra_metadata as dm
from tests.conftest import REPO, cli_environ, run_cli
from tests.test_topology import STD, write_claims

A = dm.DeviceAttribute


def one_error(done: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    """Exit ``code``, nothing on stdout, one line on stderr holding ``words``, no traceback."""
    assert done.returncode == code, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr


def nic(name: str, **attributes: A) -> dm.Device:
    return dm.Device("dra.net", "p", name, dict(attributes))


def test_dpdk_refuses_a_pci_address_that_would_load_a_shared_object(tmp_path: Path) -> None:
    """A pciBusID of '0000:3b:00.0 -d /x/evil.so' is exit 65 naming device and attribute."""
    hostile = {f"{STD}pciBusID": A(string="0000:3b:00.0 -d /x/evil.so")}
    write_claims(tmp_path, {"c/r": [dm.Device("dra.net", "p", "eth1", hostile)]})
    done = run_cli("env", "--root", str(tmp_path), "--profile", "dpdk")
    one_error(done, 65, "dra.net/p/eth1", f"{STD}pciBusID", "not a PCI address")
    assert "evil.so" in done.stderr  # named, escaped, never an argument
    for command in ("env", "get"):  # one message, whatever the door
        args = ("--root", str(tmp_path), "--claim", "c", "--request", "r")
        again = run_cli(command, *args, *(["pciBusID"] if command == "get" else []))
        one_error(again, 65, "dra.net/p/eth1", f"{STD}pciBusID", "not a PCI address")
        assert again.stderr == done.stderr.replace("profile dpdk: ", "")


def test_alias_pci_address_is_normalised_into_dpdk(tmp_path: Path) -> None:
    """dranet's pciAddress in upper case becomes the standard form in DPDK_EAL_ALLOW."""
    write_claims(tmp_path, {"c/r": [nic("eth1", pciAddress=A(string="0000:3B:00.0"))]})
    done = run_cli("env", "--root", str(tmp_path), "--profile", "dpdk", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["DPDK_EAL_ALLOW"] == "-a 0000:3b:00.0"


def test_a_comma_in_a_uuid_cannot_add_a_gpu(tmp_path: Path) -> None:
    """A uuid 'GPU-1,GPU-2' is exit 65 for cuda, not two entries of CUDA_VISIBLE_DEVICES."""
    gpu = dm.Device("gpu.nvidia.com", "p", "gpu-0", {"uuid": A(string="GPU-1,GPU-2")})
    write_claims(tmp_path, {"c/r": [gpu]})
    one_error(run_cli("env", "--root", str(tmp_path), "--profile", "cuda"), 65, "'uuid'", "gpu-0")


def test_a_comma_in_an_interface_name_cannot_add_an_interface(tmp_path: Path) -> None:
    """An interfaceName 'net1,eth0' is exit 65 for nccl, not two NCCL_SOCKET_IFNAME entries."""
    data = dm.NetworkDeviceData(interface_name="net1,eth0")
    write_claims(tmp_path, {"c/r": [dm.Device("dra.net", "p", "eth1", network_data=data)]})
    one_error(
        run_cli("env", "--root", str(tmp_path), "--profile", "nccl"),
        65,
        "NCCL_SOCKET_IFNAME",
        "'eth1'",
    )


def fake_sys(root: Path, address: str, pcie_root: str = "pci0000:17") -> Path:
    """A sysfs-shaped tree with one PCI device; returns its directory."""
    device = root / "devices" / pcie_root / "0000:17:00.0" / address
    device.mkdir(parents=True)
    bus = root / "bus" / "pci" / "devices"
    bus.mkdir(parents=True)
    (bus / address).symlink_to(os.path.relpath(device, bus))
    return device


def test_doctor_reads_nothing_a_path_like_pci_address_names(tmp_path: Path) -> None:
    """pciBusID '../../..' names no sysfs path: a finding; the numa_node it points at is unread."""
    sys_root = tmp_path / "sys"
    fake_sys(sys_root, "0000:18:00.0")
    (sys_root / "numa_node").write_text("SECRET\n")  # what <sys>/bus/pci/devices/../../.. names
    os.mkfifo(sys_root / "bus" / "numa_node")  # and a FIFO for a shorter climb
    for text in ("../../..", "../.."):
        attributes = {f"{STD}pciBusID": A(string=text), f"{STD}numaNode": A(int=0)}
        root = write_claims(
            tmp_path / str(len(text)), {"c/r": [dm.Device("x.example.com", "p", "d", attributes)]}
        )
        done = run_cli(
            "doctor", "--root", str(root), "--sys-root", str(sys_root), "--json", timeout=30
        )
        assert done.returncode == 1, done.stderr
        assert "SECRET" not in done.stdout
        assert "Traceback" not in done.stderr
        (finding,) = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "pci-device"]
        assert finding["found"] == repr(text)
        assert "nothing under sysfs was read" in finding["hint"]


def test_doctor_does_not_hang_on_a_fifo_at_a_numa_node_path(tmp_path: Path) -> None:
    """A FIFO where sysfs has numa_node is a finding within seconds, never a blocked open."""
    sys_root = tmp_path / "sys"
    device = fake_sys(sys_root, "0000:18:00.0")
    os.mkfifo(device / "numa_node")
    attributes = {
        f"{STD}pciBusID": A(string="0000:18:00.0"),
        f"{STD}numaNode": A(int=0),
        f"{STD}pcieRoot": A(string="pci0000:17"),
    }
    write_claims(tmp_path / "m", {"c/r": [dm.Device("x.example.com", "p", "d", attributes)]})
    start = time.monotonic()
    done = run_cli("doctor", "--root", str(tmp_path / "m"), "--sys-root", str(sys_root), timeout=30)
    assert time.monotonic() - start < 20
    assert done.returncode == 1, done.stderr
    assert "numa-node: expected physical node 0" in done.stdout
    assert "found no readable numa_node file" in done.stdout
    assert stat.S_ISFIFO(os.stat(device / "numa_node").st_mode)  # left as it was


def test_an_ip_that_never_answers_is_killed_and_reported(tmp_path: Path) -> None:
    """An `ip` on PATH that hangs (and starts a child that keeps stdout) ends as a finding."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pid_file = tmp_path / "child.pid"
    script = bin_dir / "ip"
    script.write_text(f"#!/bin/sh\nsleep 1000 &\necho $! > {pid_file}\nwait\n")
    script.chmod(0o755)
    data = dm.NetworkDeviceData(interface_name="net1")
    write_claims(tmp_path / "m", {"c/r": [dm.Device("dra.net", "p", "eth1", network_data=data)]})
    start = time.monotonic()
    done = run_cli(
        "doctor",
        "--root",
        str(tmp_path / "m"),
        env={"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}"},
        timeout=60,
    )
    took = time.monotonic() - start
    assert done.returncode == 1, done.stderr
    assert "did not answer within 5 s" in done.stdout
    assert took < 30
    child = int(pid_file.read_text())
    for _ in range(50):  # the whole process group was killed: its sleep too
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the child of the hanging ip outlived doctor")


def test_a_huge_cpuset_costs_what_a_small_one_does(tmp_path: Path) -> None:
    """'0-4000000000' in the cgroup file and in DRA_CPUSET_<uid>, under a 1 GiB address space."""
    proc = tmp_path / "proc" / "self"
    proc.mkdir(parents=True)
    (proc / "cgroup").write_text("0::/pod\n")
    cgroup = tmp_path / "cgroup" / "pod"
    cgroup.mkdir(parents=True)
    (cgroup / "cpuset.cpus.effective").write_text("0-4000000000\n")
    cpu = dm.Device("dra.cpu", "p", "cpu-5", {"cpuID": A(int=5)})
    write_claims(tmp_path / "m", {"c/r": [cpu]})

    def limit() -> None:  # in the child, before it runs: a 1 GiB address space
        resource.setrlimit(resource.RLIMIT_AS, (1024 << 20, 1024 << 20))

    done = subprocess.run(
        [
            *(sys.executable, "-m", "dra_metadata", "doctor", "--root", str(tmp_path / "m")),
            *("--proc-root", str(tmp_path / "proc"), "--cgroup-root", str(tmp_path / "cgroup")),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=cli_environ({"DRA_CPUSET_UID_C": "0-4000000000,7"}),
        timeout=60,
        preexec_fn=limit,
    )
    assert "Traceback" not in done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    cpusets = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "cpuset"]
    assert [(f["expected"], f["ok"]) for f in cpusets] == [
        ("cpu 5 in the cpuset", True),
        ("cpus 0-4000000000 in the cpuset", True),
    ]


def test_escape_sequences_in_a_pcie_root_are_escaped_in_the_heading(tmp_path: Path) -> None:
    """A pcieRoot with OSC/CSI sequences and a newline is no root, and is named escaped."""
    evil = "pci0000:17\x1b]0;pwned\x07\x1b[2J\nNUMA node 9"
    device = dm.Device("gpu.example.com", "p", "g", {f"{STD}pcieRoot": A(string=evil)})
    write_claims(tmp_path, {"c/r": [device]})
    for extra in ((), ("--matrix",)):
        done = run_cli("topology", "--root", str(tmp_path), *extra, env={"COLUMNS": "200"})
        assert done.returncode == 0, done.stderr
        assert "\x1b" not in done.stdout
        assert "\x07" not in done.stdout
        assert "NUMA node 9" not in done.stdout.splitlines()
    done = run_cli("topology", "--root", str(tmp_path), env={"COLUMNS": "200"})
    assert "  no PCIe root\n" in done.stdout  # no root in the standard form: no root
    assert "holds 'pci0000:17\\x1b]0;pwned\\x07\\x1b[2J\\nNUMA node 9'" in done.stderr
    assert "\x1b" not in done.stderr


def test_a_device_listed_twice_is_a_problem_counted_once(tmp_path: Path) -> None:
    """Twice in one file: reported, not its own neighbour, once in CUDA_VISIBLE_DEVICES."""
    gpu = dm.Device(
        "gpu.nvidia.com",
        "p",
        "gpu-0",
        {"uuid": A(string="GPU-1"), f"{STD}numaNode": A(int=0)},
    )
    other = dm.Device(
        "gpu.nvidia.com",
        "p",
        "gpu-1",
        {"uuid": A(string="GPU-2"), f"{STD}numaNode": A(int=0)},
    )
    write_claims(tmp_path, {"c/r": [gpu, gpu, other]})
    done = run_cli("env", "--root", str(tmp_path), "--profile", "cuda", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["CUDA_VISIBLE_DEVICES"] == "GPU-1,GPU-2"
    done = run_cli("topology", "--root", str(tmp_path), "--json")
    data = json.loads(done.stdout)
    assert [d["name"] for d in data["devices"]] == ["gpu-0", "gpu-1"]
    assert data["affinity"]["gpu0"] == {"gpu0": "same", "gpu1": "numa"}
    assert any("more than once" in problem for problem in data["problems"])
    assert "more than once" in done.stderr
    topo = dm.inventory(tmp_path).topology()
    nearest = topo.nearest("gpu0")
    assert nearest is not None
    assert nearest.name == "gpu-1"  # not the copy of itself
    done = run_cli("doctor", "--root", str(tmp_path), "--sys-root", str(tmp_path / "none"))
    assert "device: expected each device once, found listed twice" in done.stdout


def test_an_attribute_named_like_the_numa_answer_is_written_as_it_is(tmp_path: Path) -> None:
    """A literal ``resource.kubernetes.io/numaNodes`` holding text is printed, not sorted as ints.

    It used to end env with a ``ValueError`` traceback (the request's list of nodes
    is sorted by number).
    """
    devices = [nic(f"eth{i}", **{STD + "numaNodes": A(string=f"0000:3b:00.{i}")}) for i in range(2)]
    write_claims(tmp_path, {"c/r": devices})
    done = run_cli("env", "--root", str(tmp_path))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "export DRA_C_R_NUMA_NODES=0000:3b:00.0,0000:3b:00.1\n" in done.stdout
    assert "export DRA_C_R_1_NUMA_NODES=0000:3b:00.1\n" in done.stdout


def _on_a_terminal(*args: str) -> bytes:
    """What ``python -m dra_metadata ARGS`` writes to a real terminal (a pty)."""
    import pty

    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "dra_metadata", *args],
            stdout=terminal,
            stderr=subprocess.PIPE,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=60,
            check=False,
        )
        os.close(terminal)
        terminal = -1
        assert done.returncode == 0, done.stderr
        output = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            output += chunk
        return output
    finally:
        os.close(controller)
        if terminal != -1:
            os.close(terminal)


def test_get_escapes_escape_sequences_on_a_terminal_and_not_on_a_pipe(tmp_path: Path) -> None:
    """An OSC/CSI value prints escaped to a terminal (as every command does), raw to a pipe."""
    evil = "GPU-1\x1b]0;pwned\x07\x1b[2J\nFAKE"
    write_claims(
        tmp_path, {"c/r": [dm.Device("gpu.example.com", "p", "g", {"uuid": A(string=evil)})]}
    )
    args = ("get", "--root", str(tmp_path), "--claim", "c", "--request", "r", "uuid")
    shown = _on_a_terminal(*args)
    assert b"\x1b" not in shown
    assert b"\x07" not in shown
    assert shown.replace(b"\r\n", b"\n") == b"GPU-1\\x1b]0;pwned\\x07\\x1b[2J\\nFAKE\n"
    piped = run_cli(*args)
    assert (piped.returncode, piped.stdout) == (0, evil + "\n")  # data for a script, as written
