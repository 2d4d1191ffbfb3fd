"""Kubernetes' own device-metadata scenarios, with Kubernetes' own test driver.

Transcribed from k8s.io/kubernetes v1.37.2 ``test/e2e/dra/dra.go`` (the "metadata"
contexts, and ``testContainerMetadataFile``): ``scripts/cluster up`` runs the e2e test
driver (``test/e2e/dra/test-driver``, built by ``scripts/build-cluster``) with
``--enable-device-metadata`` as two drivers, ``a.upstream.example.com`` (two devices)
and ``b.upstream.example.com`` (one), each with its DeviceClass, and a class that
selects either (examples/cluster/upstream-classes.yaml). The driver writes its
metadata CDI specs where the kubelet plugin library puts them by default,
``/var/run/cdi``, which the cluster's containerd reads as a node's does.

Where upstream's test runs ``cat`` in the container and decodes with Go, the pods here
read with our SDK (``dm.inventory()``, ``dm.read_resource_claim()``) and our CLI
(``dra-metadata get``); each check is upstream's: the claim's name, namespace and UID
(from the API server), the request, generation 1, ``metadata.resource.k8s.io/v1beta1``,
the attributes ``driverName``, ``pool`` and ``device`` equal to the device's own, the
container that must not see the other request's file, and one file per driver. The
devices are checked against the claim's allocation, as the API server reports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devtools.cluster import IMAGE, Cluster
from tests.e2e.kube import Scenario, Start, logs, wait_pod

pytestmark = pytest.mark.cluster

A, B = "a.upstream.example.com", "b.upstream.example.com"
EITHER = "either.upstream.example.com"
ROOT = "/var/run/kubernetes.io/dra-device-attributes"
V1BETA1 = "metadata.resource.k8s.io/v1beta1"

#: What each container runs: the SDK's and the CLI's reading of the claim, as JSON.
READER = """\
import json, subprocess, sys
import dra_metadata as dm

kind, claim, requests = sys.argv[1], sys.argv[2], sys.argv[3:]
inv = dm.inventory()
files = []
for found in inv.files:
    md = found.metadata
    files.append({
        "path": found.path, "driver": found.driver, "request": found.request,
        "problem": None if found.problem is None else found.problem.message,
        "apiVersion": md.api_version, "name": md.metadata.name,
        "namespace": md.metadata.namespace, "uid": md.metadata.uid,
        "generation": md.metadata.generation, "podClaimName": md.pod_claim_name,
        "requests": [r.name for r in md.requests],
        "drivers": [d.driver for r in md.requests for d in r.devices],
    } if md is not None else {"path": found.path, "problem": found.problem.message})
read = dm.read_resource_claim if kind == "claim" else dm.read_resource_claim_template
flag = "--claim" if kind == "claim" else "--template-claim"
merged = {}
for request in requests:
    md = read(claim, request)
    cli = {
        name: subprocess.run(
            ["dra-metadata", "get", flag, claim, "--request", request, name],
            capture_output=True, text=True, check=True,
        ).stdout.split()
        for name in ("driverName", "pool", "device")
    }
    merged[request] = {
        "generations": md.generations,
        "devices": [
            {"driver": d.driver, "pool": d.pool, "name": d.name,
             "attributes": {k: d.require(k) for k in ("driverName", "pool", "device")}}
            for _, d in md.devices()
        ],
        "cli": cli,
    }
print(json.dumps({"files": files, "merged": merged}))
"""


def container(
    name: str, claim: str, kind: str, requests: list[str], uses: list[dict[str, str]]
) -> dict[str, Any]:
    """A container of our image that reads ``requests`` of the claim and prints JSON."""
    return {
        "name": name,
        "image": IMAGE,
        "imagePullPolicy": "Never",
        "command": ["/opt/dra-metadata/bin/python", "-c", READER, kind, claim, *requests],
        "resources": {"claims": uses},
        "securityContext": {"allowPrivilegeEscalation": False},
    }


def manifest(tmp_path: Path, namespace: str, objects: list[dict[str, Any]]) -> Path:
    """The namespace and ``objects`` as one list for ``kubectl apply``."""
    items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    for item in objects:
        item.setdefault("metadata", {})["namespace"] = namespace
        items.append(item)
    path = tmp_path / f"{namespace}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def claim_spec(requests: list[tuple[str, str, int]]) -> dict[str, Any]:
    """A claim's spec: each request ``(name, device class, count)``."""
    return {
        "devices": {
            "requests": [
                {"name": name, "exactly": {"deviceClassName": cls, "count": count}}
                for name, cls, count in requests
            ]
        }
    }


def pod(
    name: str, claims: list[dict[str, str]], containers: list[dict[str, Any]]
) -> dict[str, Any]:
    """A pod that runs its containers once, on the node's network, as non-root."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "hostNetwork": True,
            "automountServiceAccountToken": False,
            "securityContext": {"runAsNonRoot": True},
            "resourceClaims": claims,
            "containers": containers,
        },
    }


def read(cluster: Cluster, name: str, namespace: str, container_name: str) -> dict[str, Any]:
    """What the container printed."""
    found: dict[str, Any] = json.loads(logs(cluster, name, container_name, namespace))
    return found


def check_file(
    seen: dict[str, Any], claim: dict[str, Any], request: str, driver: str, *,
    directory: str, pod_claim: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """upstream's testContainerMetadataFile: the file of ``driver`` for ``request``."""
    path = f"{ROOT}/{directory}/{request}/{driver}-metadata.json"
    (file,) = [f for f in seen["files"] if f["path"] == path]
    assert file["problem"] is None, file
    assert file["apiVersion"] == V1BETA1
    assert file["generation"] == 1
    assert file["requests"] == [request]
    assert file["drivers"]
    assert set(file["drivers"]) == {driver}  # its own devices only
    assert file["namespace"] == claim["metadata"]["namespace"]
    assert file["podClaimName"] == pod_claim
    if pod_claim is None:  # upstream checks the claim of a template by its namespace only
        assert (file["name"], file["uid"]) == (claim["metadata"]["name"], claim["metadata"]["uid"])
    found: dict[str, Any] = file
    return found


def check_devices(seen: dict[str, Any], claim: dict[str, Any], request: str) -> None:
    """The request's devices are the allocation's, each with upstream's three attributes
    (the SDK's answer and the CLI's agree)."""
    results = [
        (r["driver"], r["pool"], r["device"])
        for r in claim["status"]["allocation"]["devices"]["results"]
        if r["request"] == request
    ]
    merged = seen["merged"][request]
    devices = [(d["driver"], d["pool"], d["name"]) for d in merged["devices"]]
    assert sorted(devices) == sorted(results)
    for device in merged["devices"]:
        assert device["attributes"] == {
            "driverName": device["driver"], "pool": device["pool"], "device": device["name"],
        }  # fmt: skip
    assert merged["cli"]["device"] == [d["name"] for d in merged["devices"]]
    assert merged["cli"]["driverName"] == [d["driver"] for d in merged["devices"]]
    assert merged["cli"]["pool"] == [d["pool"] for d in merged["devices"]]
    assert set(merged["generations"].values()) == {1}


def started(
    cluster: Cluster, scenario: Start, tmp_path: Path, namespace: str,
    objects: list[dict[str, Any]], pod_name: str,
) -> tuple[Scenario, dict[str, Any]]:  # fmt: skip
    """Apply the objects and wait for the pod to finish."""
    run = scenario(manifest(tmp_path, namespace, objects), namespace)
    return run, wait_pod(cluster, pod_name, namespace)


def one_claim_one_reader(claim: str, requests: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    """upstream's ``b.ExternalClaim()`` with ``b.PodExternal``: the claim, and pod ``tester-1``
    whose container ``with-resource`` is given the whole claim and reads ``my-request``."""
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": claim}, "spec": claim_spec(requests)},
        pod("tester-1", [{"name": "resource-claim", "resourceClaimName": claim}], [
            container("with-resource", claim, "claim", ["my-request"],
                      [{"name": "resource-claim"}]),
        ]),
    ]  # fmt: skip


def test_a_claims_file(cluster: Cluster, scenario: Start, tmp_path: Path) -> None:
    """dra.go "metadata", a ResourceClaim: the file at resourceclaims/<claim>/<request>."""
    ns = "upstream-claim"
    objects = one_claim_one_reader("external-claim", [("my-request", A, 1)])
    run, _ = started(cluster, scenario, tmp_path, ns, objects, "tester-1")
    claim = run.claims.allocated("external-claim")
    seen = read(cluster, "tester-1", ns, "with-resource")
    check_file(seen, claim, "my-request", A, directory="resourceclaims/external-claim")
    check_devices(seen, claim, "my-request")


def test_two_requests_two_containers(cluster: Cluster, scenario: Start, tmp_path: Path) -> None:
    """dra.go "metadata", two requests: a container given the claim sees both files; one
    given only ``req1`` sees ``req1``'s and not ``req0``'s."""
    ns = "upstream-requests"
    claim_ref = [{"name": "resource-claim"}]
    objects = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "external-claim"},
         "spec": claim_spec([("req0", A, 1), ("req1", A, 1)])},
        pod("tester-1", [{"name": "resource-claim", "resourceClaimName": "external-claim"}], [
            container("all-requests", "external-claim", "claim", ["req0", "req1"], claim_ref),
            container("req1-only", "external-claim", "claim", ["req1"],
                      [{"name": "resource-claim", "request": "req1"}]),
        ]),
    ]  # fmt: skip
    run, _ = started(cluster, scenario, tmp_path, ns, objects, "tester-1")
    claim = run.claims.allocated("external-claim")
    directory = "resourceclaims/external-claim"
    everything = read(cluster, "tester-1", ns, "all-requests")
    for request in ("req0", "req1"):
        check_file(everything, claim, request, A, directory=directory)
        check_devices(everything, claim, request)
    only = read(cluster, "tester-1", ns, "req1-only")
    check_file(only, claim, "req1", A, directory=directory)
    check_devices(only, claim, "req1")
    assert [f["path"] for f in only["files"]] == [f"{ROOT}/{directory}/req1/{A}-metadata.json"]


def test_a_claim_made_from_a_template(cluster: Cluster, scenario: Start, tmp_path: Path) -> None:
    """dra.go "metadata", a template: resourceclaimtemplates/<podClaimName>, whose file
    names the pod's claim (``podClaimName``)."""
    ns = "upstream-template"
    objects = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "tester-1"},
         "spec": {"spec": claim_spec([("my-request", A, 1)])}},
        pod("tester-1", [{"name": "my-inline-claim", "resourceClaimTemplateName": "tester-1"}], [
            container("with-resource", "my-inline-claim", "template", ["my-request"],
                      [{"name": "my-inline-claim"}]),
        ]),
    ]  # fmt: skip
    run, done = started(cluster, scenario, tmp_path, ns, objects, "tester-1")
    statuses = done["status"]["resourceClaimStatuses"]
    (made,) = [s["resourceClaimName"] for s in statuses if s["name"] == "my-inline-claim"]
    claim = run.claims.allocated(made)
    seen = read(cluster, "tester-1", ns, "with-resource")
    file = check_file(
        seen, claim, "my-request", A,
        directory="resourceclaimtemplates/my-inline-claim", pod_claim="my-inline-claim",
    )  # fmt: skip
    assert (file["name"], file["uid"]) == (made, claim["metadata"]["uid"])  # ours checks more
    check_devices(seen, claim, "my-request")


def test_one_request_two_drivers(cluster: Cluster, scenario: Start, tmp_path: Path) -> None:
    """dra.go "metadata", two drivers: a request the class that selects either fills with
    a device of each; each driver writes its own file, holding its own device."""
    ns = "upstream-drivers"
    objects = one_claim_one_reader("multi-driver-claim", [("my-request", EITHER, 3)])
    run, _ = started(cluster, scenario, tmp_path, ns, objects, "tester-1")
    claim = run.claims.allocated("multi-driver-claim")
    seen = read(cluster, "tester-1", ns, "with-resource")
    directory = "resourceclaims/multi-driver-claim"
    for driver in (A, B):
        check_file(seen, claim, "my-request", driver, directory=directory)
    check_devices(seen, claim, "my-request")
    drivers = {d["driver"] for d in seen["merged"]["my-request"]["devices"]}
    assert drivers == {A, B}
    assert seen["merged"]["my-request"]["generations"] == {A: 1, B: 1}
