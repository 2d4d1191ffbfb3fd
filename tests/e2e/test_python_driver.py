"""A DRA driver in Python, for real: examples/python-driver behind the cluster's kubelet.

``scripts/cluster up`` deploys the example driver (``py.example.com``) as drivers are
deployed: its image, built offline, run by the DaemonSet of examples/python-driver/deploy/
with its service account, its least ClusterRole and its admission policy. Its pod
registers with the kubelet, publishes its ResourceSlice, reads each claim's allocation
from the API server and publishes with ``MetadataPublisher``. Each test applies one
manifest of examples/python-driver/ and deletes its namespace after; a test that
replaces the driver's pod leaves one of the DaemonSet's current template running. Runs
only with ``python -m pytest -m cluster tests/e2e``.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dra_metadata as dm
from devtools.cluster import NODE, PY_DRIVER, PY_DRIVER_SOURCE, Cluster, ClusterError, deploy
from devtools.cluster.machine import processes_naming
from devtools.cluster.settings import PORTS
from tests.e2e.kube import (
    Start,
    allocated,
    claim_of,
    logs,
    ours_as_go_reads_it,
    published,
    wait_pod,
)

pytestmark = pytest.mark.cluster

#: The driver's program in its image (examples/python-driver/Containerfile).
DRIVER_PROGRAM = "/opt/python-driver/driver.py"


def node_files(cluster: Cluster) -> list[Path]:
    """What the Python driver has on the node for claims: metadata files and their
    directories, its lock and state files, its CDI specs and CDI locks (its socket and
    the publisher's empty top directories stay)."""
    plugin = cluster.plugin_dir(PY_DRIVER)
    metadata = plugin / "dra-device-metadata"
    found = [
        path
        for path in sorted(plugin.rglob("*"))
        if (not path.is_dir() and path.name != "dra.sock") or metadata in path.parents
    ]
    return found + [p for p in sorted(cluster.cdi_dir.iterdir()) if PY_DRIVER in p.name]


def wait_clean(cluster: Cluster, timeout: float = 120) -> None:
    """Until nothing of the Python driver's claims is left on the node."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            left = node_files(cluster)
        except FileNotFoundError as err:  # a directory the driver removed while listed
            left = [Path(str(err.filename))]
        if not left:
            return
        assert time.monotonic() < deadline, f"left on the node: {left}"
        time.sleep(0.5)


def driver_pod(cluster: Cluster) -> dict[str, Any]:
    """The DaemonSet's one pod that is not going away."""
    (pod,) = cluster.python_driver_pods()
    return pod


def driver_log(cluster: Cluster) -> str:
    """What the driver's running container printed (kubectl logs)."""
    name = driver_pod(cluster)["metadata"]["name"]
    return cluster.kubectl("logs", name, "--namespace", deploy.NAMESPACE)


def restarts(pod: dict[str, Any]) -> int:
    (status,) = pod["status"].get("containerStatuses", [{"restartCount": 0}])
    count: int = status["restartCount"]
    return count


def wait_driver(
    cluster: Cluster, ready: Callable[[dict[str, Any]], bool] = lambda pod: True,
    what: str = "the driver's pod", timeout: float = 180,
) -> dict[str, Any]:  # fmt: skip
    """Until the DaemonSet is rolled out, its pod ready (``ready(pod)`` too), registered
    with the kubelet, its slice published; that pod."""
    deadline = time.monotonic() + timeout
    while True:
        try:  # (a pod that went or came between two questions: ask again)
            if cluster.python_driver_ready():
                pod = driver_pod(cluster)
                if ready(pod) and "registered with the kubelet" in driver_log(cluster):
                    return pod
        except (ClusterError, ValueError):
            pass
        assert time.monotonic() < deadline, f"{what}: {cluster.python_driver_story()}"
        time.sleep(0.5)


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_pod_reads_what_the_api_server_allocated(
    cluster: Cluster, scenario: Start, goref_image: str
) -> None:
    """two-gpus.yaml: `show --format go` and Go's static reader print the same object, with
    the two devices the API server allocated, each with the attributes of the driver's
    ResourceSlice; once the pod is done (the kubelet unprepares its claim) and deleted,
    nothing of the claim is left on the node."""
    run = scenario(PY_DRIVER_SOURCE / "two-gpus.yaml", "py-two-gpus")
    pod = wait_pod(cluster, "readers", "py-two-gpus")
    ours = ours_as_go_reads_it(cluster, "readers", "py-two-gpus")
    claim = claim_of(run, pod, "gpu")
    devices = ours["requests"][0]["devices"]
    assert [d["name"] for d in devices] == allocated(claim)
    assert len(devices) == 2
    slice_attributes = published(cluster, PY_DRIVER)
    for device in devices:
        assert device["driver"] == PY_DRIVER
        assert device["attributes"] == slice_attributes[device["name"]]
    cluster.kubectl("delete", "pod", "readers", "--namespace", "py-two-gpus", "--wait=true")
    wait_clean(cluster)


def test_a_running_container_sees_the_in_place_update(cluster: Cluster, scenario: Start) -> None:
    """watch.yaml: annotating the claim makes the driver write generation 2 in place (the
    same inode on the node); `dra-metadata watch` and dm.watch() in the running pod each
    see generation 1 then 2, every event an update (no error from a torn read, no stale)."""
    scenario(PY_DRIVER_SOURCE / "watch.yaml", "py-watch")
    wait_pod(cluster, "watchers", "py-watch", ("Running",))

    def seen(container: str) -> list[dict[str, Any]]:
        return lines(logs(cluster, "watchers", container, "py-watch"))

    def until(ready: Any, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert time.monotonic() < deadline, f"{what}: {seen('cli')} {seen('python')}"
            time.sleep(0.5)

    until(lambda: seen("cli") and seen("python"), "generation 1 seen")
    (path,) = cluster.plugin_dir(PY_DRIVER).rglob("metadata.json")
    inode = path.stat().st_ino
    cluster.kubectl(
        "annotate", "resourceclaim", "py-gpu", "--namespace", "py-watch",
        f"{PY_DRIVER}/firmware=2.1",
    )  # fmt: skip
    until(lambda: len(seen("cli")) >= 2 and len(seen("python")) >= 2, "generation 2 seen")
    time.sleep(2)  # anything more would show now
    cli, python = seen("cli"), seen("python")
    assert [(e["event"], e["generation"]) for e in cli] == [("update", 1), ("update", 2)], cli
    firmware = [
        [d["attributes"].get("firmwareVersion") for d in e["metadata"]["requests"][0]["devices"]]
        for e in cli
    ]
    assert firmware == [[None], [{"string": "2.1"}]]
    assert python == [
        {"event": "update", "generation": 1, "firmware": [None]},
        {"event": "update", "generation": 2, "firmware": ["2.1"]},
    ]
    assert path.stat().st_ino == inode  # written in place, not replaced
    assert dm.read_file(path).metadata.generation == 2
    assert "in place: generation 2" in driver_log(cluster)


def test_one_container_with_a_go_and_a_python_driver(cluster: Cluster, scenario: Start) -> None:
    """two-drivers.yaml: one claim, a GPU of each driver: `ls`, `show` and `env` in the
    container list both drivers' files, each as its driver wrote it."""
    run = scenario(PY_DRIVER_SOURCE / "two-drivers.yaml", "py-two-drivers")
    pod = wait_pod(cluster, "both", "py-two-drivers")
    listed, shown, env = logs(cluster, "both", "list", "py-two-drivers").split("---\n")
    rows = json.loads(listed)
    assert [(r["request"], r["driver"], r["status"]) for r in rows] == [
        ("go-gpu", "gpu.example.com", "ok"),
        ("py-gpu", PY_DRIVER, "ok"),
    ]
    claim = claim_of(run, pod, "gpus")
    results = {r["request"]: r for r in claim["status"]["allocation"]["devices"]["results"]}
    merged = json.loads(shown)
    by_request = {r["name"]: r["devices"] for r in merged["requests"]}
    assert sorted(by_request) == ["go-gpu", "py-gpu"]
    uuids = []
    for request, devices in by_request.items():
        (device,) = devices
        wanted = results[request]
        assert (device["driver"], device["pool"], device["name"]) == (
            wanted["driver"], wanted["pool"], wanted["device"],
        )  # fmt: skip
        on_slice = published(cluster, wanted["driver"])[wanted["device"]]
        assert device["attributes"]["uuid"] == on_slice["uuid"]
        uuids.append(on_slice["uuid"]["string"])
    variables = json.loads(env)
    assert variables["DRA_GPUS_GO_GPU_DRIVERS"] == "gpu.example.com"
    assert variables["DRA_GPUS_PY_GPU_DRIVERS"] == PY_DRIVER
    assert {variables["DRA_GPUS_GO_GPU_UUID"], variables["DRA_GPUS_PY_GPU_UUID"]} == set(uuids)


def test_kill_9_in_the_middle_of_a_prepare(cluster: Cluster, scenario: Start) -> None:
    """two-requests.yaml: the driver is killed (SIGKILL) after publishing the first of two
    requests; started again, the kubelet's retry prepares the claim: both files decode,
    no temporary is left; deleting the pod leaves nothing of the driver on the node."""
    pause = cluster.py_driver_pause
    before = driver_pod(cluster)
    pause.touch()
    try:
        run = scenario(PY_DRIVER_SOURCE / "two-requests.yaml", "py-two-requests")
        deadline = time.monotonic() + 120
        while "paused before request second" not in driver_log(cluster):
            assert time.monotonic() < deadline, driver_log(cluster)
            time.sleep(0.2)
        # The container's process, seen from the node: the kubelet starts it again.
        (pid,) = [p for p in processes_naming(DRIVER_PROGRAM) if Path(f"/proc/{p}").exists()]
        os.kill(pid, signal.SIGKILL)
        while Path(f"/proc/{pid}").exists():
            time.sleep(0.05)
        half = [str(path) for path in node_files(cluster)]
        assert any(f.endswith("/first/metadata.json") for f in half), half
        assert not any(f.endswith("/second/metadata.json") for f in half), half
    finally:
        pause.unlink(missing_ok=True)
    again = wait_driver(cluster, lambda pod: restarts(pod) == restarts(before) + 1,
                        "the driver's container started again")  # fmt: skip
    assert again["metadata"]["uid"] == before["metadata"]["uid"]  # the same pod
    pod = wait_pod(cluster, "lister", "py-two-requests", ("Running",), timeout=300)
    deadline = time.monotonic() + 60
    while not (listed := logs(cluster, "lister", "ls", "py-two-requests")):
        assert time.monotonic() < deadline, "ls printed nothing"
        time.sleep(0.5)
    rows = json.loads(listed)
    assert [(r["request"], r["status"]) for r in rows] == [("first", "ok"), ("second", "ok")]
    claim = claim_of(run, pod, "gpus")
    files = node_files(cluster)
    temporaries = [f.name for f in files if f.name.endswith(".tmp")]
    assert temporaries == []
    written = sorted(f for f in files if f.name == "metadata.json")
    assert len(written) == 2
    for path in written:
        assert dm.read_file(path).metadata.uid == claim["metadata"]["uid"]
    cluster.kubectl("delete", "pod", "lister", "--namespace", "py-two-requests", "--wait=true")
    wait_clean(cluster)


#: A client of the driver's DRAPlugin socket, run by the driver's own venv on the stubs
#: build_stubs.py made: each call of stdin's list, its answer as JSON on stdout.
GRPC_CLIENT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import grpc
from google.protobuf.json_format import MessageToDict
from kubelet.dra.v1 import api_pb2 as dra, api_pb2_grpc as dra_grpc
job = json.load(sys.stdin)
with grpc.insecure_channel("unix://" + job["socket"]) as channel:
    plugin = dra_grpc.DRAPluginStub(channel)
    for call, claims in job["calls"]:
        request = getattr(dra, call + "Request")(claims=[dra.Claim(**c) for c in claims])
        answer = getattr(plugin, call)(request, timeout=60)
        print(json.dumps(MessageToDict(answer, preserving_proto_field_name=True)), flush=True)
"""


def call_driver(cluster: Cluster, calls: list[tuple[str, list[dict[str, str]]]]) -> list[Any]:
    """The driver's answers to gRPC calls made as the kubelet makes them, on its socket."""
    built = cluster.bin_dir / "python-driver"
    job = {"socket": str(cluster.plugin_dir(PY_DRIVER) / "dra.sock"), "calls": calls}
    done = subprocess.run(
        [str(built / "venv" / "bin" / "python"), "-c", GRPC_CLIENT, str(built / "stubs")],
        input=json.dumps(job), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return lines(done.stdout)


def test_prepare_and_unprepare_are_idempotent(cluster: Cluster, scenario: Start) -> None:
    """Called again as the kubelet calls after a restart or a timeout, on a claim its pod
    uses: each prepare answers the same devices and CDI IDs and writes the next
    generation; each unprepare succeeds, the first removing everything, the second
    finding nothing to remove. A claim that is gone, or was made again, is a one-line
    error and writes nothing."""
    run = scenario(PY_DRIVER_SOURCE / "two-requests.yaml", "py-two-requests")
    pod = wait_pod(cluster, "lister", "py-two-requests", ("Running",))
    claim = claim_of(run, pod, "gpus")
    ref = {k: claim["metadata"][k] for k in ("namespace", "name", "uid")}
    files = sorted(cluster.plugin_dir(PY_DRIVER).rglob("metadata.json"))
    assert [dm.read_file(f).metadata.generation for f in files] == [1, 1]
    first, second = call_driver(
        cluster, [("NodePrepareResources", [ref]), ("NodePrepareResources", [ref])]
    )
    assert first == second
    devices = first["claims"][ref["uid"]]["devices"]
    assert sorted((d["request_names"], d["device_name"]) for d in devices) == sorted(
        ([r["request"]], r["device"]) for r in claim["status"]["allocation"]["devices"]["results"]
    )
    for device in devices:
        (request,) = device["request_names"]
        assert device["cdi_device_ids"] == [f"{PY_DRIVER}/metadata={ref['uid']}_{request}"]
    assert [dm.read_file(f).metadata.generation for f in files] == [3, 3]
    answers = call_driver(
        cluster, [("NodeUnprepareResources", [ref]), ("NodeUnprepareResources", [ref])]
    )
    assert answers == [{"claims": {ref["uid"]: {}}}] * 2
    assert node_files(cluster) == []
    # What the kubelet is told when the claim is not the one it means: one line each.
    gone = {**ref, "name": "no-such-claim", "uid": "u-gone"}
    replaced = {**ref, "uid": "u-old"}
    answers = call_driver(cluster, [("NodePrepareResources", [gone, replaced])])
    assert answers == [{"claims": {
        "u-gone": {"error": 'API server: 404 resourceclaims.resource.k8s.io "no-such-claim" '
                            "not found"},
        "u-old": {"error": f"claim py-two-requests/{ref['name']} has uid {ref['uid']}, not "
                           "u-old: it was deleted and made again"},
    }}]  # fmt: skip
    assert node_files(cluster) == []
    cluster.kubectl("delete", "pod", "lister", "--namespace", "py-two-requests", "--wait=true")
    wait_clean(cluster)


def test_the_resource_slice_is_kept_current(cluster: Cluster) -> None:
    """As the Go slice controller keeps a pool: a slice deleted is written again; one
    changed is written again with the pool's generation one more; another slice of the
    driver on the node (an older version's, say) is deleted. Each within seconds: the
    driver watches."""
    name = f"localhost-{PY_DRIVER}"
    expected = published(cluster, PY_DRIVER)

    def slices() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = json.loads(
            cluster.kubectl("get", "resourceslices", "--output", "json")
        )["items"]
        return found

    def current() -> dict[str, Any] | None:
        return next((s for s in slices() if s["metadata"]["name"] == name), None)

    def until(ready: Any) -> dict[str, Any]:
        deadline = time.monotonic() + 40
        while not ready(found := current()):
            assert time.monotonic() < deadline, found
            time.sleep(0.5)
        assert found is not None
        return found

    cluster.kubectl("delete", "resourceslice", name)
    back = until(lambda s: s is not None)
    assert published(cluster, PY_DRIVER) == expected
    generation = back["spec"]["pool"]["generation"]
    patch = [{"op": "remove", "path": "/spec/devices/0/attributes/uuid"}]
    cluster.kubectl("patch", "resourceslice", name, "--type", "json", "--patch", json.dumps(patch))
    restored = until(lambda s: s is not None and s["spec"]["pool"]["generation"] > generation)
    assert restored["spec"]["pool"]["generation"] == generation + 1
    assert published(cluster, PY_DRIVER) == expected
    stale = slice_on(NODE, f"{name}-old")
    cluster.kubectl("create", "-f", "-", feed=json.dumps(stale))
    deadline = time.monotonic() + 40
    while any(s["metadata"]["name"] == f"{name}-old" for s in slices()):
        assert time.monotonic() < deadline, "the stale slice is still there"
        time.sleep(0.5)
    assert published(cluster, PY_DRIVER) == expected
    assert f"ResourceSlice {name}-old deleted" in driver_log(cluster)


def test_the_driver_pod_replaced_while_a_workload_runs(cluster: Cluster, scenario: Start) -> None:
    """two-requests.yaml: the driver's pod deleted while the claim's pod runs: the
    DaemonSet makes another, the kubelet registers it, it finds the claim's files as they
    were; when the workload goes, the new pod unprepares the claim and nothing of it stays
    on the node."""
    run = scenario(PY_DRIVER_SOURCE / "two-requests.yaml", "py-two-requests")
    pod = wait_pod(cluster, "lister", "py-two-requests", ("Running",))
    claim = claim_of(run, pod, "gpus")

    def contents() -> dict[Path, bytes | None]:
        return {p: p.read_bytes() if p.is_file() else None for p in node_files(cluster)}

    prepared = contents()
    assert len([p for p in prepared if p.name == "metadata.json"]) == 2
    old = driver_pod(cluster)
    cluster.kubectl("delete", "pod", old["metadata"]["name"], "--namespace", deploy.NAMESPACE,
                    "--wait=true")  # fmt: skip
    new = wait_driver(cluster, lambda p: p["metadata"]["uid"] != old["metadata"]["uid"],
                      "the DaemonSet's new pod")  # fmt: skip
    assert contents() == prepared
    cluster.kubectl("delete", "pod", "lister", "--namespace", "py-two-requests", "--wait=true")
    wait_clean(cluster)
    assert f"unprepared py-two-requests/{claim['metadata']['name']}" in driver_log(cluster)
    assert driver_pod(cluster)["metadata"]["uid"] == new["metadata"]["uid"]


def test_a_new_driver_version_rolled_out_while_a_workload_runs(
    cluster: Cluster, scenario: Start, tmp_path: Path
) -> None:
    """watch.yaml: the DaemonSet's image changed to another build (v2) while the watchers
    run: the old pod stops, the new one registers, and it serves the claim the old one
    prepared: the firmware annotation is written in place as generation 2, which the
    running containers see; when they go, v2 unprepares the claim and nothing stays."""
    v1 = deploy.image()
    v2 = v1.rpartition(":")[0] + ":v2"
    env = cluster.podman_env()
    (tmp_path / "Containerfile").write_text(
        f"FROM {v1}\nLABEL org.opencontainers.image.version=v2\n", encoding="utf-8"
    )
    build = ["podman", "build", "--network", "none", "--pull=never", "--tag", v2, str(tmp_path)]
    subprocess.run(build, env=env, capture_output=True, check=True)
    try:
        cluster.import_image(v2, tmp_path, env)
    finally:
        subprocess.run(["podman", "rmi", "--force", v2], env=env, capture_output=True)
    scenario(PY_DRIVER_SOURCE / "watch.yaml", "py-watch")
    wait_pod(cluster, "watchers", "py-watch", ("Running",))
    deadline = time.monotonic() + 60
    while not lines(logs(cluster, "watchers", "python", "py-watch")):  # generation 1, read
        assert time.monotonic() < deadline, "the watcher printed nothing"
        time.sleep(0.5)
    old = driver_pod(cluster)
    set_image = ["set", "image", f"daemonset/{deploy.DAEMONSET}", "--namespace", deploy.NAMESPACE]
    try:
        cluster.kubectl(*set_image, f"driver={v2}")
        new = wait_driver(cluster, lambda p: p["spec"]["containers"][0]["image"] == v2,
                          "the DaemonSet rolled out to v2")  # fmt: skip
        assert new["metadata"]["uid"] != old["metadata"]["uid"]
        (was,), (now,) = old["status"]["containerStatuses"], new["status"]["containerStatuses"]
        assert now["imageID"] != was["imageID"]  # another image, not another name for it
        cluster.kubectl(
            "annotate", "resourceclaim", "py-gpu", "--namespace", "py-watch",
            f"{PY_DRIVER}/firmware=2.2",
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while len(seen := lines(logs(cluster, "watchers", "python", "py-watch"))) < 2:
            assert time.monotonic() < deadline, seen
            time.sleep(0.5)
        time.sleep(2)  # anything more would show now
        assert lines(logs(cluster, "watchers", "python", "py-watch")) == [
            {"event": "update", "generation": 1, "firmware": [None]},
            {"event": "update", "generation": 2, "firmware": ["2.2"]},
        ]
        assert "in place: generation 2" in driver_log(cluster)
        cluster.kubectl("delete", "pod", "watchers", "--namespace", "py-watch", "--wait=true")
        wait_clean(cluster)
        assert "unprepared py-watch/py-gpu" in driver_log(cluster)
    finally:
        cluster.kubectl(*set_image, f"driver={v1}")
        wait_driver(cluster, lambda p: p["spec"]["containers"][0]["image"] == v1,
                    "the DaemonSet rolled back to v1")  # fmt: skip


#: What the driver's service account may do (deploy/2-rbac.yaml), each (group, resource, verb).
GRANTED = [
    ("resource.k8s.io", "resourceclaims", "get"),
    ("resource.k8s.io", "resourceclaims", "list"),
    ("resource.k8s.io", "resourceclaims", "watch"),
    ("resource.k8s.io", "resourceslices", "list"),
    ("resource.k8s.io", "resourceslices", "watch"),
    ("resource.k8s.io", "resourceslices", "create"),
    ("resource.k8s.io", "resourceslices", "update"),
    ("resource.k8s.io", "resourceslices", "delete"),
]
#: And a sample of what it may not: no secrets, pods, nodes; no claim it could change; no
#: slice it could patch, or delete but by name.
REFUSED = [
    ("", "secrets", "get"), ("", "secrets", "list"), ("", "configmaps", "get"),
    ("", "pods", "get"), ("", "pods", "list"), ("", "pods", "create"),
    ("", "nodes", "get"), ("", "nodes", "list"), ("", "nodes", "patch"),
    ("", "serviceaccounts/token", "create"),
    ("resource.k8s.io", "resourceclaims", "update"), ("resource.k8s.io", "resourceclaims", "patch"),
    ("resource.k8s.io", "resourceclaims", "delete"),
    ("resource.k8s.io", "resourceclaims/status", "update"),
    ("resource.k8s.io", "resourceslices", "get"), ("resource.k8s.io", "resourceslices", "patch"),
    ("resource.k8s.io", "resourceslices", "deletecollection"),
    ("resource.k8s.io", "deviceclasses", "create"),
]  # fmt: skip


def allowed(cluster: Cluster, group: str, resource: str, verb: str, namespace: str) -> bool:
    """The API server's answer (a SubjectAccessReview, as ``kubectl auth can-i --as`` asks)
    for the driver's service account."""
    name, _, sub = resource.partition("/")
    review = {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {
            "user": deploy.SERVICE_ACCOUNT,
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{deploy.NAMESPACE}",
                       "system:authenticated"],
            "resourceAttributes": {"group": group, "resource": name, "subresource": sub,
                                   "verb": verb, "namespace": namespace},
        },
    }  # fmt: skip
    answer = json.loads(cluster.kubectl("create", "-f", "-", "-o", "json", feed=json.dumps(review)))
    granted: bool = answer["status"]["allowed"]
    return granted


def test_the_driver_may_do_what_it_needs_and_nothing_more(cluster: Cluster) -> None:
    """deploy/2-rbac.yaml, as the API server's authorizer reads it: the eight grants the
    driver uses, none of eighteen it does not; deploy/3-admission.yaml: its ResourceSlice
    changes only for the node its pod's token names (dry runs: nothing is written)."""
    for namespace in ("", "default", deploy.NAMESPACE):
        assert [rule for rule in GRANTED if not allowed(cluster, *rule, namespace)] == []
        assert [rule for rule in REFUSED if allowed(cluster, *rule, namespace)] == []

    pod = driver_pod(cluster)["metadata"]["name"]
    token = ["create", "token", "python-driver", "--namespace", deploy.NAMESPACE]
    pods_token = cluster.kubectl(*token, "--bound-object-kind", "Pod",
                                 "--bound-object-name", pod).strip()  # fmt: skip
    plain_token = cluster.kubectl(*token).strip()

    def call(bearer: str, method: str, path: str, body: Any = None) -> tuple[int, str]:
        """The API server's answer to the driver's token, as a dry run: nothing is written."""
        request = urllib.request.Request(
            f"https://127.0.0.1:{PORTS['kube-apiserver']}/apis/resource.k8s.io/v1/"
            f"resourceslices{path}?dryRun=All",
            data=json.dumps(body).encode() if body is not None else None, method=method,
            headers={"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"},
        )  # fmt: skip
        context = ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))
        try:
            with urllib.request.urlopen(request, context=context, timeout=30) as answer:
                return answer.status, ""
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())["message"]

    def create_slice(bearer: str, node: str) -> tuple[int, str]:
        return call(bearer, "POST", "", slice_on(node, f"admission-{node}"))

    assert create_slice(pods_token, NODE) == (201, "")
    status, message = create_slice(pods_token, "elsewhere")
    assert status == 403, message
    elsewhere = (
        f"a python-driver pod on node {NODE} may change only that node's ResourceSlices, "
        "not node elsewhere's"
    )
    assert message.endswith(elsewhere), message
    status, message = create_slice(plain_token, NODE)
    assert status == 403, message
    assert message.endswith("changes ResourceSlices only with a pod's token, which names the "
                            "pod's node"), message  # fmt: skip
    # Another node's slice, made by the admin: the driver's pod may not delete it.
    other = json.dumps(slice_on("elsewhere", "admission-elsewhere"))
    made = cluster.kubectl("create", "-f", "-", "-o", "name", feed=other)
    try:
        status, message = call(pods_token, "DELETE", "/admission-elsewhere")
        assert status == 403, message
        assert message.endswith(elsewhere), message
    finally:
        cluster.kubectl("delete", made.strip())


def slice_on(node: str, name: str) -> dict[str, Any]:
    """A ResourceSlice of the Python driver's, with no device, for ``node``."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {"driver": PY_DRIVER, "nodeName": node, "devices": [],
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}},
    }  # fmt: skip
