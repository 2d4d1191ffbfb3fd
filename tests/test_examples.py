"""Everything in examples/ runs, against the committed sample tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dra_metadata as dm
from examples import make_sample_tree
from tests.conftest import REPO, SAMPLE_ROOT


def test_sample_tree_is_what_the_generator_writes(tmp_path: Path) -> None:
    """The committed sample tree equals a fresh run of make_sample_tree.py, file for file."""
    make_sample_tree.write_tree(str(tmp_path))
    fresh = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(SAMPLE_ROOT): p.read_bytes() for p in SAMPLE_ROOT.rglob("*") if p.is_file()
    }
    assert fresh == committed


def test_sample_tree_covers_the_documented_cases() -> None:
    """Versions, drivers and request shapes of the sample tree are the ones its docs promise."""
    vfio = dm.read_resource_claim("vfio-gpu", "gpu", root=SAMPLE_ROOT)
    assert vfio.api_version == dm.V1ALPHA1
    cpus = dm.read_resource_claim("cpus", "cpus", root=SAMPLE_ROOT, driver="dra.cpu")
    assert cpus.api_version == dm.V1BETA1
    assert (
        dm.encode(cpus, [dm.V1BETA1])
        == (SAMPLE_ROOT / "resourceclaims/cpus/cpus/dra.cpu-metadata.json").read_bytes()
    )
    accel = dm.read_resource_claim("train", "accel", root=SAMPLE_ROOT)
    assert len(accel.sources) == 2  # a MergedDeviceMetadata, by its type
    sub = dm.read_resource_claim_template("inference", "gpu", root=SAMPLE_ROOT)
    assert sub.requests[0].name == "gpu/high-memory"
    assert all(dm.validate(dm.read_file(p)) == [] for p in SAMPLE_ROOT.rglob("*-metadata.json"))


def run_workload(root: Path) -> subprocess.CompletedProcess[str]:
    """Run examples/ml_workload.py as a user would, with DRA_METADATA_ROOT=root."""
    return subprocess.run(
        [sys.executable, "examples/ml_workload.py"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, dm.ROOT_ENV: str(root)},
        timeout=60,
    )


def test_ml_workload_example_runs() -> None:
    """examples/ml_workload.py prints the GPUs, CUDA_VISIBLE_DEVICES, NIC and CPUs."""
    done = run_workload(SAMPLE_ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        "CUDA_VISIBLE_DEVICES=GPU-8f6c2a4e-0b1d-4c55-9a1e-3d2b7c9e0f11,GPU-1c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22"
        in lines
    )
    assert (
        "vfio gpu-3: pci=0000:af:00.0 root=pci0000:ae numa=1 product=NVIDIA A100-PCIE-40GB" in lines
    )
    assert "inference gpu/high-memory: gpu-2 memory=141Gi" in lines
    assert any(line.startswith("nic enp94s0f0v3: net1 ips=10.20.30.41/24") for line in lines)
    assert any(line.endswith("numa=1 (local to nodes 1,0)") for line in lines)  # KEP-6072
    assert lines[-1] == "cpus [0, 1, 2, 3] on NUMA node 0"


def test_ml_workload_without_metadata_fails_cleanly(tmp_path: Path) -> None:
    """Without metadata the example exits 1 with one clear line, no traceback."""
    done = run_workload(tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("no device metadata: no metadata files found in ")
    assert "Traceback" not in done.stderr


def test_publisher_faults_example_shows_each_fault_handled(tmp_path: Path) -> None:
    """examples/publisher_faults.py: a held lock, a damaged state, a rival, a planted
    directory and a Ctrl-C, each handled."""
    done = subprocess.run(
        [sys.executable, "examples/publisher_faults.py", str(tmp_path)],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1. lock held elsewhere: names the lock and its holder",
        "2. damaged state: prepare went on above the file's generation: 2",
        "3. second publisher: refused",
        "4. planted directory: both calls name it with one fix",
        "   after the fix, prepared again at generation 1",
        "5. Ctrl-C in a wait of 30 s: ends it at once",
        "   the next update takes the claim: generation 2",
        "   after unprepare, files on the node: []",
    ]


def test_deferred_update_example_sees_only_whole_objects(tmp_path: Path) -> None:
    """examples/deferred_update.py: a fenced driver stalled 500 ms; the watch and a read, whole."""
    done = subprocess.run(
        [sys.executable, "examples/deferred_update.py", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "generation 1: network data no"
    assert "a read in the driver's pause: generation 2, whole," in lines
    assert "generation 2: network data yes" in lines
    assert lines[-1] == "every object whole"
