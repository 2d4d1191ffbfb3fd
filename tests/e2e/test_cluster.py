"""Real Kubernetes: a v1.37 control plane and kubelet, the reference driver, our image in pods.

The cluster is scripts/cluster's (devtools/cluster): kube-apiserver allocates the
claims, the kubelet calls the reference driver's ``NodePrepareResources``, the Go
kubelet plugin library writes the metadata files and CDI specs, containerd mounts them
into the pods, and our image reads them. Each test applies one manifest of
``examples/cluster/`` and deletes its namespace after. The last test takes the cluster
down and checks that the machine is as ``up`` found it. Runs only with
``python -m pytest -m cluster tests/e2e``; uses a cluster that is up, else brings one up.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from devtools.cluster import Cluster, machine_snapshot
from tests.conftest import REPO
from tests.e2e.kube import (
    STD,
    Start,
    allocated,
    claim_of,
    get,
    logs,
    numa,
    ours_as_go_reads_it,
    published,
    value,
    wait_pod,
)
from tests.e2e.scenarios import dra_variables

pytestmark = pytest.mark.cluster


def test_gpu_env_from_a_template(cluster: Cluster, scenario: Start) -> None:
    """gpu-env.yaml: the init container's `env` gives the main container the UUIDs, PCI
    addresses and NUMA nodes of the two GPUs the API server allocated, in order."""
    run = scenario("gpu-env.yaml", "gpu-env")
    pod = wait_pod(cluster, "trainer-0", "gpu-env")
    devices = allocated(claim_of(run, pod, "gpu"))
    assert len(devices) == 2
    attrs = published(cluster, "gpu.example.com")
    printed = logs(cluster, "trainer-0", "trainer", "gpu-env")
    variables = dra_variables(printed)
    expected = {"DRA_GPU_GPU_UUID": ",".join(value(attrs[d]["uuid"]) for d in devices)}
    for index, device in enumerate(devices):
        prefix = f"DRA_GPU_GPU_{index}_"
        expected[prefix + "NAME"] = device
        expected[prefix + "UUID"] = value(attrs[device]["uuid"])
        expected[prefix + "PCI_BUS_ID"] = value(attrs[device][STD + "pciBusID"])
        expected[prefix + "PCIE_ROOT"] = value(attrs[device][STD + "pcieRoot"])
        expected[prefix + "NUMA_NODE"] = str(numa(attrs[device])[0])
        expected[prefix + "NUMA_NODES"] = ",".join(map(str, numa(attrs[device])))
    assert {k: variables.get(k) for k in expected} == expected, printed
    # The driver's own CDI device reached the container too.
    own = {f"EXAMPLE_GPU_{d.rpartition('-')[2]}={value(attrs[d]['uuid'])}" for d in devices}
    assert own <= set(printed.splitlines()), printed


def test_one_claim_shared_by_two_pods(cluster: Cluster, scenario: Start) -> None:
    """shared-claim.yaml: both pods show the claim the API server has (name, namespace,
    uid) and its one device."""
    run = scenario("shared-claim.yaml", "shared-claim")
    shown = {}
    for name in ("reader-a", "reader-b"):
        wait_pod(cluster, name, "shared-claim")
        shown[name] = json.loads(logs(cluster, name, "show", "shared-claim"))
    claim = run.claims.allocated("shared-gpu")
    identity = {k: claim["metadata"][k] for k in ("name", "namespace", "uid")}
    for answer in shown.values():
        assert {k: answer["metadata"][k] for k in identity} == identity
        assert [d["name"] for d in answer["requests"][0]["devices"]] == allocated(claim)
    assert shown["reader-a"] == shown["reader-b"]


def test_network_data_from_the_nri_hook_then_unprepare(cluster: Cluster, scenario: Start) -> None:
    """nic-wait.yaml: `wait --for network` returns 0 with generation 2 (the driver's NRI
    RunPodSandbox hook); the worker reads the interface name. Deleting the pod removes
    the node's files and CDI spec (NodeUnprepareResources) and deallocates the claim."""
    run = scenario("nic-wait.yaml", "nic-wait")
    wait_pod(cluster, "net-worker", "nic-wait", ("Running",))
    shown = json.loads(logs(cluster, "net-worker", "wait-for-network", "nic-wait"))
    assert shown["metadata"]["generation"] == 2
    (device,) = shown["requests"][0]["devices"]
    network = device["networkData"]
    index = int(device["name"].removeprefix("nic-"))
    assert network == {
        "interfaceName": f"net{index + 1}",
        "ips": [f"198.51.100.{10 + index}/24"],
        "hardwareAddress": f"02:00:c6:33:64:{10 + index:02x}",
    }
    deadline = time.monotonic() + 60
    while "serving on" not in (out := logs(cluster, "net-worker", "worker", "nic-wait")):
        assert time.monotonic() < deadline, out
        time.sleep(0.5)
    assert out == f"serving on net{index + 1}\n"

    uid = run.claims.allocated("nic")["metadata"]["uid"]
    files = sorted(cluster.plugin_dir("nic.example.com").rglob("*.json"))
    specs = sorted(cluster.cdi_dir.glob(f"nic.example.com_metadata_{uid}_*.json"))
    assert [p.name for p in specs] == [f"nic.example.com_metadata_{uid}_eth.json"]
    assert [p.relative_to(cluster.plugin_dir("nic.example.com")).parts for p in files] == [
        ("dra-device-metadata", "nic-wait_nic", "eth", "metadata.json")
    ]
    cluster.kubectl("delete", "pod", "net-worker", "--namespace", "nic-wait", "--wait=true")
    deadline = time.monotonic() + 120
    while True:
        claim = get(cluster, "resourceclaim", "nic", "nic-wait")
        left = [p for p in files + specs if p.exists()]
        if not left and "allocation" not in claim.get("status", {}):
            break
        assert time.monotonic() < deadline, (left, claim.get("status"))
        time.sleep(0.5)
    assert not claim["status"].get("reservedFor")


def test_non_root_read_only_root(cluster: Cluster, scenario: Start) -> None:
    """non-root.yaml: as uid 65534 with a read-only root file system, validate and lint
    pass and show lists the allocated device."""
    run = scenario("non-root.yaml", "non-root")
    pod = wait_pod(cluster, "checker", "non-root")
    printed = logs(cluster, "checker", "check", "non-root")
    first, _, rest = printed.partition("\n")
    assert first == "65534"
    checks, brace, shown = rest.partition("{")
    assert "DRA" not in checks, checks  # no lint finding
    devices = json.loads(brace + shown)["requests"][0]["devices"]
    assert [d["name"] for d in devices] == allocated(claim_of(run, pod, "gpu"))


def test_the_go_reader_in_the_same_pod(cluster: Cluster, scenario: Start, goref_image: str) -> None:
    """go-reader.yaml: Go's ReadResourceClaimTemplateMetadata in one container and our
    `show --format go` in the other print the same merged object (the harness adds
    Go's apiVersion and kind when it prints one)."""
    run = scenario("go-reader.yaml", "go-reader")
    pod = wait_pod(cluster, "readers", "go-reader")
    ours = ours_as_go_reads_it(cluster, "readers", "go-reader")
    names = [d["name"] for d in ours["requests"][0]["devices"]]
    assert names == allocated(claim_of(run, pod, "gpu"))


def test_the_python_api_in_a_pod(cluster: Cluster, scenario: Start) -> None:
    """python-api.yaml: dm.inventory() in the image's Python reports both GPUs with the
    attributes the driver published (list-valued NUMA nodes, the physical one first)."""
    run = scenario("python-api.yaml", "python-api")
    pod = wait_pod(cluster, "inventory", "python-api")
    reported = json.loads(logs(cluster, "inventory", "python", "python-api"))
    attrs = published(cluster, "gpu.example.com")
    expected = [
        {
            "name": device,
            "uuid": value(attrs[device]["uuid"]),
            "pciBusID": value(attrs[device][STD + "pciBusID"]),
            "pcieRoot": value(attrs[device][STD + "pcieRoot"]),
            "numaNode": numa(attrs[device])[0],
            "numaNodes": numa(attrs[device]),
        }
        for device in allocated(claim_of(run, pod, "gpu"))
    ]
    assert reported == expected
    assert [d["numaNodes"] for d in reported] == [[1, 3], [1, 3]]


def test_up_again_is_a_no_op_then_down_restores_the_machine(cluster: Cluster) -> None:
    """`up` while up changes nothing; `down` stops every process it started, unmounts
    everything and removes every path, as `up` found the machine (mounts, processes,
    paths)."""
    before = json.loads((cluster.state / "machine.json").read_text())["snapshot"]
    pids = [r.pid for r in cluster.recorded()]
    again = subprocess.run(
        [str(REPO / "scripts" / "cluster"), "up"], capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == f"export KUBECONFIG={cluster.kubeconfig}\n"
    assert [r.pid for r in cluster.recorded()] == pids
    cluster.down()
    assert machine_snapshot(cluster.state) == before
    assert not cluster.state.exists()
