"""The path Kubernetes takes: containerd's CRI resolves the CDI devices the kubelet passes.

Each test prepares claims with :class:`~dra_metadata.MetadataPublisher`, as a DRA
driver does (node files in a temporary plugin directory, CDI specs in the directory
containerd reads), and runs pods as the kubelet runs them: ``RunPodSandbox`` on the
node's network, then ``CreateContainer`` with the claims' IDs in ``CDIDevices`` and the
pod's volume mounts, ``StartContainer``, ``ContainerStatus`` and the container's log
(tests/e2e/cri.py). Runs only with ``python -m pytest -m cri tests/e2e``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dra_metadata as dm
from tests.e2e.conftest import Node, container_view, publishing_node
from tests.e2e.cri import Containerd, Mount, Pod
from tests.e2e.scenarios import (
    COMMANDS,
    GPU_UUIDS,
    INSIDE,
    NETWORK,
    NIC,
    answer_of,
    answers,
    answers_on_the_node,
    dra_variables,
    gpu_claim,
    gpus,
    pod_spec,
    vf,
    wait_then_show,
)
from tests.goref.harness import Goref

pytestmark = pytest.mark.cri

Pods = Callable[[str, str], Pod]


def empty_dirs(spec: dict[str, Any], tmp_path: Path) -> dict[str, Path]:
    """The pod's emptyDir volumes, made as the kubelet makes them (mode 0777), by name."""
    made = {}
    for volume in spec["volumes"]:
        assert "emptyDir" in volume, volume
        path = tmp_path / "volumes" / "kubernetes.io~empty-dir" / volume["name"]
        path.mkdir(parents=True)
        path.chmod(0o777)  # the image's user is not root
        made[volume["name"]] = path
    return made


def volume_mounts(container: dict[str, Any], volumes: dict[str, Path]) -> list[Mount]:
    """The container's volumeMounts, as the CRI mounts the kubelet passes."""
    return [
        Mount(volumes[m["name"]], m["mountPath"], m.get("readOnly", False))
        for m in container.get("volumeMounts", [])
    ]


def test_init_container_env_file_reaches_the_main_container(
    cri_image: str, cri_node: Node, pods: Pods, tmp_path: Path
) -> None:
    """gpu-env.yaml as the kubelet runs it: the init container writes dra.env into the
    pod's emptyDir, the main container sources it and sees the GPUs and every DRA_* variable."""
    spec = pod_spec("gpu-env.yaml")
    (init,) = spec["initContainers"]
    (main,) = spec["containers"]
    device = cri_node.prepare_cdi(gpu_claim(), "gpu", gpus(cri_node))
    volumes = empty_dirs(spec, tmp_path)
    pod = pods("trainer-0", "ml-team")
    done = pod.run(
        init["name"], cri_image, init["command"], init.get("args", []),
        cdi_devices=[device], mounts=volume_mounts(init, volumes),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The trainer's own command, with `env` standing in for the training program.
    done = pod.run(
        main["name"], cri_image, main["command"], ["env"],
        cdi_devices=[device], mounts=volume_mounts(main, volumes),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert shown["CUDA_VISIBLE_DEVICES"] == GPU_UUIDS
    expected = dm.env_vars(root=cri_node.container_view(tmp_path / "view"), pod_claim="gpu")
    assert dra_variables(done.stdout) == expected
    assert expected["DRA_GPU_GPU_COUNT"] == "2"


def test_nic_wait_pod_starts_its_worker_once_the_network_data_lands(
    cri_image: str, cri_node: Node, pods: Pods, tmp_path: Path
) -> None:
    """nic-wait.yaml as the kubelet runs it: the init container waits for the network
    data the driver writes in place after the pod started, then the worker serves on it."""
    spec = pod_spec("nic-wait.yaml")
    (init,) = spec["initContainers"]
    (main,) = spec["containers"]
    device = cri_node.prepare_cdi(NIC, "eth", vf(cri_node))
    volumes = empty_dirs(spec, tmp_path)
    pod = pods("net-worker", "ml-team")
    waiting = pod.start(
        init["name"], cri_image, init["command"], init.get("args", []),
        cdi_devices=[device], mounts=volume_mounts(init, volumes),
    )  # fmt: skip
    assert pod.status(waiting)["state"] == "CONTAINER_RUNNING"
    cri_node.pub.update(NIC, "eth", vf(cri_node, NETWORK), mode="in-place")
    done = pod.wait(waiting, timeout=60)
    assert done.returncode == 0, done.stderr
    worker = pod.start(
        main["name"], cri_image, main["command"], main.get("args", []),
        cdi_devices=[device], mounts=volume_mounts(main, volumes),
    )  # fmt: skip
    out, _ = pod.wait_logs(worker, "serving on")
    assert out == "serving on net1 (10.20.30.41/24)\n"
    assert pod.status(worker)["state"] == "CONTAINER_RUNNING"


def test_in_place_update_reaches_a_running_wait(cri_image: str, cri_node: Node, pods: Pods) -> None:
    """Network data written in place (v1.36 style) ends a running `wait --for network`, exit 0."""
    device = cri_node.prepare_cdi(NIC, "eth", vf(cri_node))
    pod = pods("net-0", "ml-team")
    container = pod.start(
        "app", cri_image, ["sh", "-c", wait_then_show(cri_node.pub.driver)], cdi_devices=[device]
    )
    pod.wait_logs(container, "network")  # a progress line: it is waiting for the network data
    cri_node.pub.update(NIC, "eth", vf(cri_node, NETWORK), mode="in-place")
    done = pod.wait(container, timeout=60)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["metadata"]["generation"] == 2, (shown, done.stderr)
    assert shown["requests"][0]["devices"][0]["networkData"]["interfaceName"] == "net1"


def test_atomic_replace_is_stale_inside_and_wait_fails_at_once(
    cri_image: str, cri_node: Node, pods: Pods
) -> None:
    """A replace (v1.37 style) after start: `watch` reports stale; `wait` (ExecSync) fails at
    once, exit 69, saying the mounted copy cannot change."""
    device = cri_node.prepare_cdi(NIC, "eth", vf(cri_node))
    pod = pods("net-0", "ml-team")
    container = pod.start(
        "app", cri_image, ["dra-metadata", "watch", "--claim", "nic", "--request", "eth"],
        cdi_devices=[device],
    )  # fmt: skip
    pod.wait_logs(container, '"event":"update"')
    cri_node.pub.update(NIC, "eth", vf(cri_node, NETWORK), mode="replace")
    out, _ = pod.wait_logs(container, '"event":"stale"')
    events = [json.loads(line) for line in out.splitlines()]
    assert [event["event"] for event in events] == ["update", "stale"]
    stale = events[1]["path"]
    assert stale.endswith(f"/resourceclaims/nic/eth/{cri_node.pub.driver}-metadata.json")
    started = time.monotonic()
    done = pod.exec(
        container,
        ["dra-metadata", "wait", "--claim", "nic", "--request", "eth", "--for", "network",
         "--timeout", "30s"],
    )  # fmt: skip
    assert time.monotonic() - started < 10, "wait must not wait for what cannot come"
    assert done.returncode == 69, done.stderr
    assert "replaced" in done.stderr or "stale" in done.stderr, done.stderr


def test_wait_for_a_claim_that_was_never_mounted_fails_at_once(
    cri_image: str, cri_node: Node, pods: Pods
) -> None:
    """The container has the GPU claim only: waiting for the NIC claim fails at once, exit 69."""
    device = cri_node.prepare_cdi(gpu_claim(), "gpu", gpus(cri_node))
    pod = pods("trainer-0", "ml-team")
    started = time.monotonic()
    done = pod.run(
        "app", cri_image,
        ["dra-metadata", "wait", "--claim", "nic", "--request", "eth", "--timeout", "30s"],
        cdi_devices=[device],
    )  # fmt: skip
    assert time.monotonic() - started < 15, "wait must not wait for what cannot come"
    assert done.returncode == 69, done.stderr
    assert "nic" in done.stderr, done.stderr


def test_files_are_read_only_and_the_cli_answers_as_on_the_node(
    cri_image: str, cri_node: Node, pods: Pods, tmp_path: Path
) -> None:
    """Inside, a write fails; ls, show, get, validate and lint print what they print on the node."""
    devices = [
        cri_node.prepare_cdi(gpu_claim(), "gpu", gpus(cri_node)),
        cri_node.prepare_cdi(NIC, "eth", vf(cri_node, NETWORK)),
    ]
    files = f"{INSIDE}/resourceclaimtemplates/gpu/gpu/{cri_node.pub.driver}-metadata.json"
    probe = f"if true >> {files}; then echo writable; fi; stat -c %h {files}"
    pod = pods("trainer-0", "ml-team")
    done = pod.run("user", cri_image, ["sh", "-c", probe], cdi_devices=devices)
    assert "Permission denied" in done.stderr, done.stderr  # the image's user: not its file
    done = pod.run("root", cri_image, ["sh", "-c", probe], cdi_devices=devices, run_as_user=0)
    assert "Read-only file system" in done.stderr, done.stderr  # root: a read-only mount
    assert done.stdout == "1\n"  # the node's file itself (one link), not a copy
    inside = pod.run("cli", cri_image, ["sh", "-c", answers(COMMANDS)], cdi_devices=devices)
    assert inside.returncode == 0, inside.stderr
    view = cri_node.container_view(tmp_path / "view")
    assert inside.stdout == answers_on_the_node(view, tmp_path)
    assert inside.stdout.count("exit 0") == len(COMMANDS)


#: What scenario 6 compares: the merged request, as each command shows it.
MERGED = [
    "dra-metadata ls",
    "dra-metadata show --claim train --request accel --json",
    "dra-metadata show --claim train --request accel --format summary",
    "dra-metadata env --claim train",
    "dra-metadata lint /var/run/kubernetes.io/dra-device-attributes",
]


def test_two_drivers_serving_one_request_merge_inside_as_on_the_node(
    cri_image: str, cri_node: Node, containerd: Containerd, pods: Pods, tmp_path: Path
) -> None:
    """A GPU driver and a NIC driver both serve request `accel`: two CDI devices on one
    container, and the CLI inside shows the one merged request the node shows."""
    train = dm.ClaimRef(name="train", namespace="ml-team", uid=str(uuid.uuid4()))
    with publishing_node(tmp_path / "nic", containerd.cdi_dir) as nic_node:
        devices = [
            cri_node.prepare_cdi(train, "accel", gpus(cri_node)[:1]),
            nic_node.prepare_cdi(train, "accel", vf(nic_node, NETWORK)),
        ]
        pod = pods("train-0", "ml-team")
        inside = pod.run("cli", cri_image, ["sh", "-c", answers(MERGED)], cdi_devices=devices)
        assert inside.returncode == 0, inside.stderr
        view = tmp_path / "view"
        cri_node.container_view(view)
        nic_node.container_view(view)
        assert inside.stdout == answers_on_the_node(view, tmp_path, MERGED)
    assert inside.stdout.count("exit 0") == len(MERGED), inside.stdout
    shown = json.loads(answer_of(inside.stdout, MERGED[1]))
    drivers = {device["driver"] for device in shown["requests"][0]["devices"]}
    assert drivers == {cri_node.pub.driver, nic_node.pub.driver}


SHOW_GPU = "dra-metadata show --template-claim gpu --request gpu --json"
SHOW_NIC = "dra-metadata show --claim nic --request eth --json"


def go_device(pool: str, name: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """A device as the Go driver's PrepareResourceClaims returns it, with its metadata."""
    return {
        "requests": ["gpu"], "pool": pool, "device": name, "cdiDeviceIDs": [],
        "attributes": attributes, "hasMetadata": True,
    }  # fmt: skip


def test_the_go_writers_files_read_by_our_cli_inside(
    go_reference: Goref, cri_image: str, containerd: Containerd, pods: Pods, tmp_path: Path
) -> None:
    """The Go kubelet plugin Helper prepares a claim (NodePrepareResources, as the kubelet
    calls it) and updates it (UpdateRequestMetadata): our CLI inside the container, given
    the CDI device IDs the Helper returned, shows the devices and generation the Go
    reader reads on the node."""
    driver = f"gpu-{uuid.uuid4().hex[:8]}.go.example.com"
    claim = gpu_claim()
    devices = [
        go_device(
            "worker-0",
            f"gpu-{index}",
            {"uuid": {"string": f"GPU-{index}c9e7b3a"}, "index": {"int": index}},
        )
        for index in range(2)
    ]
    updated = [
        {**device, "attributes": {**device["attributes"], "healthy": {"bool": True}}}
        for device in devices
    ]
    metadata = {
        "name": claim.name,
        "namespace": claim.namespace,
        "uid": claim.uid,
        "annotations": {"resource.kubernetes.io/pod-claim-name": claim.pod_claim_name},
    }
    kubelet_claim = {"namespace": claim.namespace, "name": claim.name, "uid": claim.uid}
    answer = go_reference.ask({
        "op": "write", "driver": driver,
        "pluginDataDir": str(tmp_path / "plugins" / driver), "cdiDir": str(containerd.cdi_dir),
        "claims": [{"metadata": metadata, "spec": {}, "status": {"allocation": {}}}],
        "steps": [
            {"call": "prepare", "claims": [kubelet_claim],
             "results": {claim.uid: {"devices": devices}}},
            {"call": "update", "namespace": claim.namespace, "name": claim.name, "uid": claim.uid,
             "request": "gpu", "devices": updated},
        ],
    })  # fmt: skip
    specs = [containerd.cdi_dir / name for name in answer["steps"][-1]["cdi"] if driver in name]
    try:
        prepared, update = answer["steps"]
        assert not prepared.get("error"), answer
        assert not update.get("error"), answer
        ids = sorted(
            {i for d in prepared["response"][claim.uid]["devices"] for i in d["cdiDeviceIDs"]}
        )
        assert ids, prepared
        pod = pods("trainer-0", "ml-team")
        commands = [SHOW_GPU, f"{SHOW_GPU} --driver {driver}"]
        inside = pod.run("cli", cri_image, ["sh", "-c", answers(commands)], cdi_devices=ids)
        assert inside.returncode == 0, inside.stderr
        view = container_view(specs, tmp_path / "view")
        question = {"op": "read", "root": str(view), "template": True, "name": "gpu"}
        go_merged = go_reference.ask({**question, "request": "gpu"})
        go_driver = go_reference.ask({**question, "request": "gpu", "driver": driver})
    finally:
        for spec in specs:
            spec.unlink(missing_ok=True)
    merged, one_driver = (json.loads(answer_of(inside.stdout, c)) for c in commands)
    assert merged["requests"] == go_merged["object"]["requests"], (merged, go_merged)
    assert one_driver["metadata"] == go_driver["object"]["metadata"], (one_driver, go_driver)
    assert one_driver["requests"] == go_driver["object"]["requests"]
    assert one_driver["metadata"]["generation"] == 2
    healthy = [d["attributes"]["healthy"] for d in merged["requests"][0]["devices"]]
    assert healthy == [{"bool": True}] * 2


def test_our_publishers_files_read_by_the_go_reader_inside(
    go_reference: Goref, go_reader_image: str, cri_node: Node, pods: Pods, tmp_path: Path
) -> None:
    """Our publisher prepares and updates a claim: the Go reader (ReadResourceClaimMetadata
    and the template reader, in a static binary) inside the container reads the devices
    and generation our CLI reads on the node."""
    device = cri_node.prepare_cdi(gpu_claim(), "gpu", gpus(cri_node))
    device_nic = cri_node.prepare_cdi(NIC, "eth", vf(cri_node))
    cri_node.pub.update(NIC, "eth", vf(cri_node, NETWORK), mode="replace")
    driver = cri_node.pub.driver
    questions = [
        {"op": "read", "root": "", "template": True, "name": "gpu", "request": "gpu"},
        {"op": "read", "root": "", "template": True, "name": "gpu", "request": "gpu",
         "driver": driver},
        {"op": "read", "root": "", "name": "nic", "request": "eth"},
        {"op": "read", "root": "", "name": "nic", "request": "eth", "driver": driver},
    ]  # fmt: skip
    script = 'printf "%s\\n" "$@" | goref'
    pod = pods("trainer-0", "ml-team")
    done = pod.run(
        "go-reader", go_reader_image, ["sh", "-c", script, "sh", *map(json.dumps, questions)],
        cdi_devices=[device, device_nic],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    go_inside = [json.loads(line) for line in done.stdout.splitlines()]
    commands = [
        SHOW_GPU,
        f"{SHOW_GPU} --driver {driver}",
        SHOW_NIC,
        f"{SHOW_NIC} --driver {driver}",
    ]
    on_node = answers_on_the_node(cri_node.container_view(tmp_path / "view"), tmp_path, commands)
    for answer, command in zip(go_inside, commands, strict=True):
        assert answer["ok"], answer
        ours = json.loads(answer_of(on_node, command))
        assert answer["object"]["requests"] == ours["requests"], command
        if "--driver" in command:
            assert answer["object"]["metadata"] == ours["metadata"], command
    generations = [a["object"]["metadata"].get("generation") for a in go_inside]
    assert generations == [None, 1, None, 2]  # Go's merged object carries no metadata
