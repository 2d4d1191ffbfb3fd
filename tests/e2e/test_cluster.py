"""Real Kubernetes: a v1.37 control plane and kubelet, the reference driver, our image in pods.

The cluster is scripts/cluster's (tests/e2e/cluster.py): kube-apiserver allocates the
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
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import REPO
from tests.e2e.cluster import IMAGE, Cluster, ClusterError, machine_snapshot
from tests.e2e.conftest import CLUSTER_TIMES, cluster_cannot_run
from tests.e2e.scenarios import dra_variables
from tests.goref.harness import build as build_goref

pytestmark = pytest.mark.cluster

MANIFESTS = REPO / "examples" / "cluster"
GOREF_IMAGE = "localhost/dra-metadata-goref:cluster"
STD = "resource.kubernetes.io/"


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """The cluster: the one that is up, else one brought up now (and down at the end)."""
    reason = cluster_cannot_run()
    if reason is not None:  # only under CI=true: elsewhere the suite was skipped
        pytest.fail(f"CI must run the cluster suite: {reason}", pytrace=False)
    running = Cluster()
    was_up = running.is_up()
    if not was_up:
        running.up()
        CLUSTER_TIMES.update(running.times)
    yield running
    if not was_up and running.state.exists():
        running.down()


@pytest.fixture(scope="session")
def goref_image(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Our image plus the static Go reference harness as /usr/local/bin/goref, in the cluster."""
    context = tmp_path_factory.mktemp("goref-image")
    (context / "goref").write_bytes(build_goref(static=True).read_bytes())
    (context / "goref").chmod(0o755)
    (context / "Containerfile").write_text(
        f"FROM {IMAGE}\nCOPY goref /usr/local/bin/goref\n", encoding="utf-8"
    )
    env = cluster.podman_env()
    podman = ["podman", "build", "--network", "none", "--pull=never", "--tag", GOREF_IMAGE]
    subprocess.run([*podman, str(context)], env=env, capture_output=True, check=True)
    try:
        cluster.import_image(GOREF_IMAGE, context, env)
    finally:
        subprocess.run(["podman", "rmi", "--force", GOREF_IMAGE], env=env, capture_output=True)
    return GOREF_IMAGE


def apply(cluster: Cluster, name: str, *, timeout: float = 60) -> None:
    """kubectl apply one manifest of examples/cluster/, again until it takes (a new
    namespace has no default service account for a moment, and pods wait for it)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            cluster.kubectl("apply", "-f", str(MANIFESTS / name))
            return
        except ClusterError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def get(cluster: Cluster, kind: str, name: str, namespace: str) -> dict[str, Any]:
    """One object, as the API server reports it."""
    found: dict[str, Any] = json.loads(
        cluster.kubectl("get", kind, name, "--namespace", namespace, "--output", "json")
    )
    return found


def wait_pod(
    cluster: Cluster, name: str, namespace: str, phases: tuple[str, ...] = ("Succeeded",),
    timeout: float = 240,
) -> dict[str, Any]:  # fmt: skip
    """Poll the pod until it is in one of ``phases``; it failing is an AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        pod = get(cluster, "pod", name, namespace)
        phase = pod.get("status", {}).get("phase")
        if phase in phases:
            return pod
        if phase == "Failed" or time.monotonic() > deadline:
            described = cluster.kubectl("describe", "pod", name, "--namespace", namespace)
            raise AssertionError(f"pod {namespace}/{name} is {phase}:\n{described}")
        time.sleep(0.5)


def logs(cluster: Cluster, pod: str, container: str, namespace: str) -> str:
    """What a container printed (kubectl logs, through the kubelet)."""
    return cluster.kubectl("logs", pod, "--container", container, "--namespace", namespace)


class Claims:
    """Every version of the ResourceClaims of one namespace, as a watch receives them.

    A claim made from a template is deleted once its pod is done, and a claim whose
    pods are done is deallocated: the allocation a pod ran with is read from here.
    """

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        command = [
            str(cluster.bin_dir / "kubectl"), "--kubeconfig", str(cluster.kubeconfig),
            "get", "resourceclaims", "--namespace", namespace, "--watch", "--output", "json",
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.seen: list[dict[str, Any]] = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self) -> None:
        assert self.process.stdout is not None
        decoder, buffer = json.JSONDecoder(), ""
        for line in self.process.stdout:
            buffer += line
            while buffer.strip():
                try:
                    found, end = decoder.raw_decode(buffer.lstrip())
                except ValueError:
                    break
                self.seen.append(found)
                buffer = buffer.lstrip()[end:]

    def allocated(self, name: str, *, timeout: float = 30) -> dict[str, Any]:
        """The claim ``name`` as last seen allocated (waits for it that long)."""
        deadline = time.monotonic() + timeout
        while True:
            versions = [
                c for c in self.seen if c["metadata"]["name"] == name and
                c.get("status", {}).get("allocation")
            ]  # fmt: skip
            if versions:
                return versions[-1]
            assert time.monotonic() < deadline, f"claim {name} never seen allocated"
            time.sleep(0.2)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait()
        self.reader.join()
        assert self.process.stdout is not None
        self.process.stdout.close()


@dataclass
class Scenario:
    """One manifest applied: its namespace, the claims seen in it."""

    namespace: str
    claims: Claims


Start = Callable[[str, str], Scenario]


@pytest.fixture
def scenario(cluster: Cluster) -> Iterator[Start]:
    """Apply a manifest of examples/cluster/ (``scenario(file, namespace)``), watching
    the namespace's claims first; the namespace is deleted after the test."""
    made: list[Scenario] = []

    def start(manifest: str, namespace: str) -> Scenario:
        one = Scenario(namespace, Claims(cluster, namespace))
        made.append(one)
        apply(cluster, manifest)
        return one

    yield start
    for one in made:
        one.claims.close()
        cluster.kubectl(
            "delete", "namespace", one.namespace, "--wait=true", "--timeout=180s", timeout=240
        )


def claim_of(run: Scenario, pod: dict[str, Any], pod_claim: str) -> dict[str, Any]:
    """The ResourceClaim a pod's claim names (made from a template or by name), as the
    API server reported it allocated."""
    made = pod["status"].get("resourceClaimStatuses", [])
    named = pod["spec"]["resourceClaims"]
    names = [
        c["resourceClaimName"] for c in [*made, *named] if c["name"] == pod_claim and
        c.get("resourceClaimName")
    ]  # fmt: skip
    return run.claims.allocated(names[0])


def allocated(claim: dict[str, Any]) -> list[str]:
    """The device names allocated to a claim, in the allocation's order."""
    return [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]]


def published(cluster: Cluster, driver: str) -> dict[str, dict[str, Any]]:
    """Each device's attributes as its ResourceSlice holds them, by device name."""
    slices = json.loads(cluster.kubectl("get", "resourceslices", "--output", "json"))["items"]
    return {
        d["name"]: d.get("attributes", {})
        for s in slices
        if s["spec"]["driver"] == driver
        for d in s["spec"]["devices"]
    }


def value(attribute: dict[str, Any]) -> Any:
    """The one value of an API DeviceAttribute (``{"int": 0}`` is 0, ``{"ints": [1, 3]}``...)."""
    (found,) = attribute.values()
    return found


def numa(attributes: dict[str, Any]) -> list[int]:
    """The NUMA nodes of a published device: the int, or the list (physical first)."""
    found = value(attributes[STD + "numaNode"])
    return found if isinstance(found, list) else [found]


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
    ours = json.loads(logs(cluster, "readers", "ours", "go-reader"))
    go = json.loads(logs(cluster, "readers", "go", "go-reader"))
    assert go["ok"], go
    assert go["object"].pop("apiVersion") == "metadata.resource.k8s.io/v1beta1"
    assert go["object"].pop("kind") == "DeviceMetadata"
    assert ours == go["object"]
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
