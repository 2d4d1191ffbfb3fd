"""Framework profiles: env --profile and env_vars(profile=), built only from the metadata."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dra_metadata as dm
from tests.conftest import REPO, SAMPLE_ROOT, run_cli
from tests.test_topology import STD, TOPOLOGY_ROOT, run, write_claims

A = dm.DeviceAttribute
UUID0 = "GPU-4a1c2e3f-5b6d-4e7f-8091-a2b3c4d5e6f7"
UUID1 = "GPU-9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
REAL_ROOT = REPO / "examples" / "real-drivers-tree"


def gpu(
    name: str,
    driver: str = "gpu.nvidia.com",
    more: dict[str, dm.DeviceAttribute] | None = None,
    **attributes: dm.DeviceAttribute,
) -> dm.Device:
    """A GPU of ``driver`` with ``attributes`` (and ``more``, keys that are not names)."""
    return dm.Device(driver, "p", name, {**attributes, **(more or {})})


def test_cuda_profile_of_the_sample_pod() -> None:
    """cuda: the GPUs' UUIDs in PCI bus order, and CUDA_DEVICE_ORDER=PCI_BUS_ID."""
    assert dm.env_vars(root=TOPOLOGY_ROOT, profile="cuda") == {
        "CUDA_VISIBLE_DEVICES": f"{UUID0},{UUID1}",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }


def test_cuda_orders_by_pci_bus_id_only_when_every_gpu_has_one(tmp_path: Path) -> None:
    """GPUs sort by bus ID (NVML's form too); one without keeps metadata order, no DEVICE_ORDER."""
    late = gpu("a", uuid=A(string="GPU-b"), pcieBusID=A(string="00000000:AF:00.0"))
    early = gpu("b", more={STD + "pciBusID": A(string="0000:3b:00.0")}, uuid=A(string="GPU-a"))
    write_claims(tmp_path / "all", {"c/r": [late, early]})
    assert dm.env_vars(root=tmp_path / "all", profile="cuda") == {
        "CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }
    write_claims(tmp_path / "some", {"c/r": [late, gpu("b", uuid=A(string="GPU-a"))]})
    assert dm.env_vars(root=tmp_path / "some", profile="cuda") == {
        "CUDA_VISIBLE_DEVICES": "GPU-b,GPU-a"
    }


@pytest.mark.parametrize(
    ("devices", "words"),
    [
        ([], "no GPU is mounted"),
        ([gpu("g", uuid=A(string="GPU-1")), gpu("h", "gpu.amd.com")], "is not from gpu.nvidia.com"),
        ([gpu("g")], "has no 'uuid' attribute"),
    ],
)
def test_cuda_profile_that_cannot_be_built_prints_nothing(
    tmp_path: Path, devices: list[dm.Device], words: str
) -> None:
    """No GPU, mixed vendors, a GPU without UUID: an error saying what is missing, exit 65."""
    write_claims(tmp_path, {"c/r": devices or [dm.Device("dra.cpu", "p", "cpu-0")]})
    with pytest.raises(dm.EnvError, match=words):
        dm.env_vars(root=tmp_path, profile="cuda")
    code, out, err = run("env", "--root", str(tmp_path), "--profile", "cuda")
    assert (code, out) == (65, "")
    assert words in err


def test_rocm_profile_needs_a_uuid_amd_does_not_publish_yet(tmp_path: Path) -> None:
    """rocm names AMD GPUs by uuid; without one it says so and that no variable is needed."""
    amd = {"numaNode": A(int=0), "productName": A(string="MI300X")}
    write_claims(tmp_path / "amd", {"c/r": [gpu("gpu-0-128", "gpu.amd.com", amd)]})
    with pytest.raises(dm.EnvError) as raised:
        dm.env_vars(root=tmp_path / "amd", profile="rocm")
    assert str(raised.value) == (
        "profile rocm: gpu0 (gpu.amd.com 'gpu-0-128' of c/r) has no 'uuid' attribute "
        "(gpu.amd.com publishes none for it), and ROCR_VISIBLE_DEVICES takes only UUIDs or "
        "indices, which the metadata does not give; no variable is needed: the driver's CDI "
        "spec gives this container only its allocated GPUs, so leave ROCR_VISIBLE_DEVICES unset"
    )
    uuid = gpu("gpu-0-128", "gpu.amd.com", uuid=A(string="GPU-5f6e"))
    write_claims(tmp_path / "uuid", {"c/r": [uuid]})
    assert dm.env_vars(root=tmp_path / "uuid", profile="rocm") == {
        "ROCR_VISIBLE_DEVICES": "GPU-5f6e"
    }


def test_a_missing_uuid_comes_before_other_vendors_gpus() -> None:
    """On the AMD sample with NVIDIA GPUs beside, rocm names the uuid, not a --driver to try."""
    code, out, err = run("env", "--root", str(REAL_ROOT), "--profile", "rocm")
    assert (code, out) == (65, "")
    assert "has no 'uuid' attribute" in err
    assert "--driver" not in err


def test_other_vendors_gpus_suggest_a_driver_only_when_it_builds(tmp_path: Path) -> None:
    """--driver is suggested when that driver's GPUs are mounted and build; never otherwise."""
    code, _, err = run("env", "--root", str(REAL_ROOT), "--profile", "cuda")
    assert code == 65
    assert err.rstrip().endswith("; add --driver gpu.nvidia.com to read only its devices")
    code, out, _ = run(
        "env", "--root", str(REAL_ROOT), "--profile", "cuda", "--driver", "gpu.nvidia.com"
    )
    assert code == 0
    assert out.startswith("export CUDA_VISIBLE_DEVICES=GPU-1d2c3b4a-")
    code, _, err = run("env", "--root", str(SAMPLE_ROOT), "--profile", "cuda")
    assert code == 65
    assert "no GPU here is from gpu.nvidia.com" in err
    assert "--driver" not in err
    assert err.rstrip().endswith("; leave --profile cuda out")


def test_a_suggested_driver_is_tried_with_every_profile_asked() -> None:
    """A --driver on which another profile fails becomes "run --profile P alone with --driver"."""
    with pytest.raises(dm.EnvError) as raised:
        dm.env_vars(root=REAL_ROOT, profile="cuda,nccl")
    assert str(raised.value).endswith("; run --profile cuda alone with --driver gpu.nvidia.com")
    with pytest.raises(dm.EnvError, match="profile nccl: no NIC is mounted"):
        dm.env_vars(root=REAL_ROOT, profile="cuda,nccl", driver="gpu.nvidia.com")
    alone = dm.env_vars(root=REAL_ROOT, profile="cuda", driver="gpu.nvidia.com")
    assert alone["CUDA_VISIBLE_DEVICES"].split(",") == [
        "GPU-1d2c3b4a-5f6e-4d7c-8b9a-0a1b2c3d4e5f",
        "MIG-2b3c4d5e-6f70-5182-93a4-b5c6d7e8f901",
    ]


def test_a_failing_profile_names_the_others_that_fail_too() -> None:
    """One line for the first profile that fails, naming the other asked ones that fail too."""
    code, out, err = run("env", "--root", str(SAMPLE_ROOT), "--profile", "cuda,rocm,nccl,dpdk")
    assert (code, out) == (65, "")
    assert len(err.splitlines()) == 1
    assert err.startswith("dra-metadata: profile cuda: ")
    assert err.rstrip().endswith(
        "; leave --profile cuda out; rocm, dpdk cannot be built here either"
    )


def test_nccl_profile_from_network_data(tmp_path: Path) -> None:
    """nccl: exact interface names; NCCL_IB_HCA only when every NIC names its RDMA device."""
    assert dm.env_vars(root=TOPOLOGY_ROOT, profile="nccl") == {
        "NCCL_SOCKET_IFNAME": "=net1,net2",
        "NCCL_IB_HCA": "=mlx5_0,mlx5_1",
    }
    nic = dm.Device("dra.net", "p", "eth1", network_data=dm.NetworkDeviceData("net1"))
    write_claims(tmp_path / "a", {"c/r": [nic]})
    assert dm.env_vars(root=tmp_path / "a", profile="nccl") == {"NCCL_SOCKET_IFNAME": "=net1"}
    write_claims(tmp_path / "b", {"c/r": [dm.Device("dra.net", "p", "eth1")]})
    with pytest.raises(dm.EnvError, match="no NIC has an interface name"):
        dm.env_vars(root=tmp_path / "b", profile="nccl")


def test_nccl_names_the_wait_that_waits_for_network_data(tmp_path: Path) -> None:
    """No interface name yet: the line names a wait command that returns once it is written."""
    write_claims(tmp_path, {"rdma/nic": [dm.Device("dra.net", "p", "eth1")]})
    code, out, err = run("env", "--root", str(tmp_path), "--profile", "nccl")
    assert (code, out) == (65, "")
    found = re.search(r": (dra-metadata wait .+ --for network) waits for it$", err.rstrip())
    assert found, err
    assert found.group(1) == "dra-metadata wait --claim rdma --request nic --for network"
    nic = dm.Device("dra.net", "p", "eth1", network_data=dm.NetworkDeviceData("net1"))
    write_claims(tmp_path, {"rdma/nic": [nic]})
    waited = run_cli(*found.group(1).split()[1:], "--root", str(tmp_path), "--timeout", "30s")
    assert (waited.returncode, waited.stderr) == (0, "")


def test_dpdk_profile_from_pci_addresses(tmp_path: Path) -> None:
    """dpdk: the NICs' PCI addresses as an allow-list; a NIC without one is an error."""
    assert dm.env_vars(root=TOPOLOGY_ROOT, profile="dpdk") == {
        "DPDK_PCI_ALLOWLIST": "0000:19:00.0,0000:87:00.0",
        "DPDK_EAL_ALLOW": "-a 0000:19:00.0 -a 0000:87:00.0",
    }
    write_claims(tmp_path, {"c/r": [dm.Device("dra.net", "p", "eth1")]})
    with pytest.raises(dm.EnvError, match=r"nic0 .*has no PCI address"):
        dm.env_vars(root=tmp_path, profile="dpdk")


def test_numa_profile_is_the_union_of_numa_nodes(tmp_path: Path) -> None:
    """numa: every device's own NUMA node, once, sorted; none at all is an error."""
    assert dm.env_vars(root=TOPOLOGY_ROOT, profile="numa") == {
        "NUMA_NODES": "0,1",
        "NUMACTL_OPTIONS": "--cpunodebind=0,1 --membind=0,1",
    }
    write_claims(tmp_path, {"c/r": [gpu("g")]})
    with pytest.raises(dm.EnvError, match="no device has a NUMA node"):
        dm.env_vars(root=tmp_path, profile="numa")


def test_profiles_repeat_and_follow_the_selection() -> None:
    """--profile repeats; the selection options narrow what a profile sees; same as env_vars."""
    code, out, _ = run(
        "env",
        "--root",
        str(TOPOLOGY_ROOT),
        "--profile",
        "cuda",
        "--profile",
        "numa",
        "--format",
        "json",
    )
    assert code == 0
    assert json.loads(out) == dm.env_vars(root=TOPOLOGY_ROOT, profile=["cuda", "numa"])
    code, out, _ = run("env", "--root", str(TOPOLOGY_ROOT), "--claim", "cpus", "--profile", "numa")
    assert (code, out) == (
        0,
        "export NUMA_NODES=0,1\nexport NUMACTL_OPTIONS='--cpunodebind=0,1 --membind=0,1'\n",
    )


def test_unknown_profile_is_a_usage_error_and_a_value_error(tmp_path: Path) -> None:
    """An unknown profile name is exit 64 from the CLI and an EnvError from env_vars, first."""
    with pytest.raises(dm.EnvError, match="unknown profile 'tpu'"):
        dm.env_vars(root=tmp_path / "not-there", profile="tpu")
    code, _, err = run("env", "--root", str(TOPOLOGY_ROOT), "--profile", "tpu")
    assert code == 64
    assert (
        "argument --profile: unknown profile 'tpu'; the profiles are cuda, rocm, nccl, dpdk, numa\n"
    ) in err
    with pytest.raises(dm.EnvError, match=r"the profiles are cuda, rocm, nccl, dpdk, numa$"):
        dm.env_vars(root=TOPOLOGY_ROOT, profile="tpu")


@pytest.mark.parametrize(
    ("asked", "hint"),
    [("cdua", "did you mean 'cuda'?"), ("nccl,CUDA", "did you mean 'cuda'?"), ("cuda,", "")],
)
def test_a_misspelt_profile_gets_the_closest_name(asked: str, hint: str) -> None:
    """The CLI and env_vars name the closest profile, with the one did-you-mean helper."""
    code, _, err = run("env", "--root", str(TOPOLOGY_ROOT), "--profile", asked)
    assert code == 64
    assert err.rstrip().endswith(hint or "the profiles are cuda, rocm, nccl, dpdk, numa")
    with pytest.raises(dm.EnvError) as raised:
        dm.env_vars(root=TOPOLOGY_ROOT, profile=asked)
    assert str(raised.value) in err
    assert str(raised.value).endswith(hint)


def test_profile_lists_take_commas_or_repeats() -> None:
    """cuda,nccl is the two profiles, in the CLI and in env_vars, the same as two options."""
    both = dm.env_vars(root=TOPOLOGY_ROOT, profile=["cuda", "nccl"])
    assert dm.env_vars(root=TOPOLOGY_ROOT, profile="cuda,nccl") == both
    assert dm.env_vars(root=TOPOLOGY_ROOT, profile=[" cuda , nccl", "cuda"]) == both
    code, out, err = run(
        "env", "--root", str(TOPOLOGY_ROOT), "--profile", "cuda,nccl", "--format", "json"
    )
    assert (code, err) == (0, "")
    assert json.loads(out) == both
    assert list(both) == [
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "NCCL_SOCKET_IFNAME",
        "NCCL_IB_HCA",
    ]


def test_a_broken_file_keeps_a_profile_from_being_half_made(tmp_path: Path) -> None:
    """A request with an undecodable file makes the profile an error, not a shorter list."""
    write_claims(tmp_path, {"c/r": [gpu("g", uuid=A(string="GPU-1"))]})
    (tmp_path / "resourceclaims" / "c" / "r" / "zz.example.com-metadata.json").write_text("{")
    code, out, err = run("env", "--root", str(tmp_path), "--profile", "cuda")
    assert (code, out) == (65, "")
    assert "its devices would be missing" in err


HOSTILE = "net1'; touch pwned; echo '$(touch pwned2)`touch pwned3`\\"


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_profiles_source_exactly_in_real_shells(tmp_path: Path, shell: str) -> None:
    """A hostile interface name is refused, nothing run; the sample's output sources exactly."""
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} on PATH")
    nic = dm.Device("dra.net", "p", "eth1", network_data=dm.NetworkDeviceData(HOSTILE))
    write_claims(tmp_path / "root", {"c/r": [nic]})
    script = (
        f'eval "$({sys.executable} -m dra_metadata env --root {tmp_path / "root"} '
        f'--profile nccl)"\n'
        'printf "%s" "$NCCL_SOCKET_IFNAME"\n'
    )
    done = subprocess.run(
        [shell, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "cannot hold as one element" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert not any(tmp_path.glob("pwned*"))
    printed = run_cli(
        "env", "--root", str(TOPOLOGY_ROOT), "--profile", "cuda", "--profile", "numa", check=True
    )
    sample = subprocess.run(
        [shell, "-c", '. /dev/stdin; printf "%s|%s" "$CUDA_VISIBLE_DEVICES" "$NUMACTL_OPTIONS"'],
        input=printed.stdout,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert sample.stdout == f"{UUID0},{UUID1}|--cpunodebind=0,1 --membind=0,1"


SAMPLE_TREES = (SAMPLE_ROOT, TOPOLOGY_ROOT, REAL_ROOT)
EVERY_PROFILE = "cuda,rocm,nccl,dpdk,numa"
#: sample tree -> profile -> ``None`` (it builds) or what its one line must name as missing.
MISSING: dict[str, dict[str, str | None]] = {
    "dra-device-attributes": {
        "cuda": "from gpu.nvidia.com",
        "rocm": "from gpu.amd.com",
        "nccl": None,
        "dpdk": "has no PCI address",
        "numa": None,
    },
    "topology-tree": {
        "cuda": None,
        "rocm": "from gpu.amd.com",
        "nccl": None,
        "dpdk": None,
        "numa": None,
    },
    "real-drivers-tree": {
        "cuda": "not from gpu.nvidia.com",
        "rocm": "has no 'uuid' attribute",
        "nccl": None,
        "dpdk": None,
        "numa": None,
    },
}
#: The fixes a failing profile's line ends with; a command in one is run by the test below.
FIXES = (
    re.compile(r"; add --driver (?P<driver>\S+) to read only its devices$"),
    re.compile(
        r"; run --profile (?P<alone>\w+) alone with --driver (?P<driver>\S+)"
        r"(?:; (?P<either>[\w, ]+) cannot be built here either)?$"
    ),
    re.compile(
        r"leave --profile (?P<out>\w+) out(?:; (?P<either>[\w, ]+) cannot be built here either)?$"
    ),
    re.compile(
        r"; no variable is needed: the driver's CDI spec gives this container only its "
        r"allocated GPUs, so leave [A-Z_]+ unset(?:; (?P<either>[\w, ]+) cannot be built here "
        r"either)?$"
    ),
)


@pytest.mark.parametrize("profile", [*MISSING["topology-tree"], EVERY_PROFILE])
@pytest.mark.parametrize("tree", SAMPLE_TREES, ids=lambda p: p.name)
def test_every_profile_runs_on_every_sample_tree(tree: Path, profile: str) -> None:
    """Exit 0, or 65 with one line naming what is missing and a fix whose command succeeds."""
    names = profile.split(",")
    failing = [name for name in names if MISSING[tree.name][name] is not None]
    done = run_cli("env", "--root", str(tree), "--profile", profile)
    if not failing:
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout
        assert all(line.startswith("export ") for line in done.stdout.splitlines())
        return
    assert (done.returncode, done.stdout) == (65, "")
    [line] = done.stderr.splitlines()
    first = failing[0]
    assert line.startswith(f"dra-metadata: profile {first}: ")
    assert str(MISSING[tree.name][first]) in line
    fixes = [found for found in (fix.search(line) for fix in FIXES) if found]
    assert len(fixes) == 1, line
    fix = fixes[0].groupdict()
    either = [name.strip() for name in (fix.get("either") or "").split(",") if name.strip()]
    commands = []
    if fix.get("driver") and not fix.get("alone"):  # every profile asked, on that driver
        commands.append(["--profile", profile, "--driver", str(fix["driver"])])
    else:  # this one alone on a driver, or left out; the others that fail are named
        assert either == failing[1:]
        if fix.get("alone"):
            commands.append(["--profile", first, "--driver", str(fix["driver"])])
        rest = [name for name in names if name not in failing]
        if rest:
            commands.append(["--profile", ",".join(rest)])
    for command in commands:
        again = run_cli("env", "--root", str(tree), *command)
        assert (again.returncode, again.stderr) == (0, ""), (command, again.stderr)
        assert again.stdout.startswith("export ")
