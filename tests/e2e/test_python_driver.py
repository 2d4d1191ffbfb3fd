"""A DRA driver in Python, for real: examples/python-driver behind the cluster's kubelet.

``scripts/cluster up`` starts the example driver (``py.example.com``) beside the Go
reference driver: it registers with the kubelet, publishes its ResourceSlice, reads
each claim's allocation from the API server and publishes with ``MetadataPublisher``.
Each test applies one manifest of examples/python-driver/ and deletes its namespace
after. Runs only with ``python -m pytest -m cluster tests/e2e``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import dra_metadata as dm
from devtools.cluster import PY_DRIVER, PY_DRIVER_SOURCE, Cluster
from tests.conftest import REPO
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


def restart_py_driver() -> None:
    """``scripts/cluster restart py.example.com``: the driver runs on in the background,
    a child of no test process (as ``up`` leaves every component)."""
    done = subprocess.run(
        [str(REPO / "scripts" / "cluster"), "restart", PY_DRIVER],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def driver_log(cluster: Cluster) -> str:
    return (cluster.logs / f"{PY_DRIVER}.log").read_text(errors="replace")


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
    pause.touch()
    seen = len(driver_log(cluster))  # the log goes on across restarts
    try:
        run = scenario(PY_DRIVER_SOURCE / "two-requests.yaml", "py-two-requests")
        deadline = time.monotonic() + 120
        while "paused before request second" not in driver_log(cluster)[seen:]:
            assert time.monotonic() < deadline, driver_log(cluster)[seen:]
            time.sleep(0.2)
        (driver,) = [r for r in cluster.recorded() if r.name == PY_DRIVER]
        os.kill(driver.pid, signal.SIGKILL)
        while driver.alive():
            time.sleep(0.05)
        half = [str(path) for path in node_files(cluster)]
        assert any(f.endswith("/first/metadata.json") for f in half), half
        assert not any(f.endswith("/second/metadata.json") for f in half), half
    finally:
        pause.unlink(missing_ok=True)
        if not any(r.alive() for r in cluster.recorded() if r.name == PY_DRIVER):
            restart_py_driver()  # also when the test failed: the pods need it to go
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
    """A slice deleted is written again; one changed is written again with the pool's
    generation one more (within the driver's 10 s period)."""
    name = f"localhost-{PY_DRIVER}"
    expected = published(cluster, PY_DRIVER)

    def current() -> dict[str, Any] | None:
        found = json.loads(cluster.kubectl("get", "resourceslices", "--output", "json"))
        return next((s for s in found["items"] if s["metadata"]["name"] == name), None)

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
