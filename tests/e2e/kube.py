"""What the cluster suites share: the cluster fixture (the cluster of devtools/cluster),
manifests applied as scenarios, the API server's view of claims and slices
(tests/e2e/test_cluster.py and tests/e2e/test_python_driver.py). conftest.py registers
the fixtures.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devtools.cluster import IMAGE, Cluster, ClusterError
from tests.conftest import REPO

MANIFESTS = REPO / "examples" / "cluster"
GOREF_IMAGE = "localhost/dra-metadata-goref:cluster"
STD = "resource.kubernetes.io/"


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """The cluster: the one that is up, else one brought up now (and down at the end)."""
    from tests.e2e.conftest import CLUSTER_TIMES, cluster_cannot_run

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
    from tests.goref.harness import build as build_goref

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


def apply(cluster: Cluster, name: str | Path, *, timeout: float = 60) -> None:
    """kubectl apply one manifest (a name in examples/cluster/, or a path), again until it
    takes (a new namespace has no default service account for a moment, and pods wait for
    it)."""
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


def ours_as_go_reads_it(cluster: Cluster, pod: str, namespace: str) -> dict[str, Any]:
    """What the pod's container ``ours`` (``show --format go``) printed, checked equal to
    what its container ``go`` (Go's reader, the goref harness, which adds Go's apiVersion
    and kind when it prints an object) printed."""
    ours: dict[str, Any] = json.loads(logs(cluster, pod, "ours", namespace))
    go = json.loads(logs(cluster, pod, "go", namespace))
    assert go["ok"], go
    assert go["object"].pop("apiVersion") == "metadata.resource.k8s.io/v1beta1"
    assert go["object"].pop("kind") == "DeviceMetadata"
    assert ours == go["object"]
    return ours


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


Start = Callable[[str | Path, str], Scenario]


@pytest.fixture
def scenario(cluster: Cluster) -> Iterator[Start]:
    """Apply a manifest of examples/cluster/ (``scenario(file, namespace)``), watching
    the namespace's claims first; the namespace is deleted after the test."""
    made: list[Scenario] = []

    def start(manifest: str | Path, namespace: str) -> Scenario:
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
