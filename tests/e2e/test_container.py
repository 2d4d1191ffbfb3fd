"""The whole path in a real OCI runtime: publisher, CDI spec, podman + runc, our CLI image.

Each test prepares claims with :class:`~dra_metadata.MetadataPublisher` (node files in
a temporary plugin directory, CDI specs in /var/run/cdi) and runs containers of the
image built from this checkout that get the files through ``--device``, the way the
kubelet hands CDI devices to the container runtime.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

import dra_metadata as dm
from tests.conftest import REPO
from tests.e2e.conftest import Node, Podman

pytestmark = pytest.mark.e2e

PODS = REPO / "examples" / "pods"
#: Where the metadata files are inside the container: /var/run is a link to /run.
INSIDE = "/run/kubernetes.io/dra-device-attributes"


def pod_spec(name: str) -> dict[str, Any]:
    """The Pod of an example manifest."""
    with open(PODS / name, encoding="utf-8") as stream:
        (found,) = [d for d in yaml.safe_load_all(stream) if d and d["kind"] == "Pod"]
    spec: dict[str, Any] = found["spec"]
    return spec


def gpu_claim() -> dm.ClaimRef:
    """The claim Kubernetes makes from gpu-env.yaml's template, with a fresh UID."""
    return dm.ClaimRef(
        name="trainer-0-gpu-x7k2p", namespace="ml-team", uid=str(uuid.uuid4()), pod_claim_name="gpu"
    )


def gpus(node: Node) -> list[dm.Device]:
    """Two GPUs with UUIDs and indexes."""
    return [
        node.pub.device(
            "worker-0",
            f"gpu-{index}",
            attributes={
                "uuid": dm.DeviceAttribute(
                    string=f"GPU-{index}c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22"
                ),
                "index": dm.DeviceAttribute(int=index),
                "resource.kubernetes.io/pciBusID": dm.DeviceAttribute(string=f"0000:3b:0{index}.0"),
            },
        )
        for index in range(2)
    ]


NIC = dm.ClaimRef(name="nic", namespace="ml-team", uid="d1e2f3a4-0000-4000-8000-00000000cafe")
NETWORK = dm.NetworkDeviceData(
    interface_name="net1", ips=("10.20.30.41/24",), hardware_address="52:54:00:ab:cd:03"
)


def vf(node: Node, network: dm.NetworkDeviceData | None = None) -> list[dm.Device]:
    """One SR-IOV VF, with or without its network data."""
    pf = {"pfName": dm.DeviceAttribute(string="enp94s0f0")}
    return [node.pub.device("node-a", "vf-3", attributes=pf, network_data=network)]


def dra_variables(text: str) -> dict[str, str]:
    """The DRA_* variables of `env` output (one NAME=value a line)."""
    pairs = (line.split("=", 1) for line in text.splitlines() if line.startswith("DRA_"))
    return dict(pairs)


def test_init_container_env_file_reaches_the_main_container(
    podman: Podman, image: str, node: Node, tmp_path: Path
) -> None:
    """gpu-env.yaml's pattern: the init container writes the env file, the main one sources it."""
    spec = pod_spec("gpu-env.yaml")
    (init,) = spec["initContainers"]
    (main,) = spec["containers"]
    device = node.prepare(gpu_claim(), "gpu", gpus(node))
    shared = tmp_path / "dra-env"  # the pod's emptyDir
    shared.mkdir()
    shared.chmod(0o777)  # the image's user is not root
    done = podman.run(image, [*init["command"], *init.get("args", [])], device, f"-v={shared}:/dra")
    assert done.returncode == 0, done.stderr
    # The trainer's own command, with `env` standing in for the training program.
    done = podman.run(image, [*main["command"], "env"], device, f"-v={shared}:/dra:ro")
    assert done.returncode == 0, done.stderr
    shown = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert shown["CUDA_VISIBLE_DEVICES"] == (
        "GPU-0c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22,GPU-1c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22"
    )
    expected = dm.env_vars(root=node.container_view(tmp_path / "view"), pod_claim="gpu")
    assert dra_variables(done.stdout) == expected
    assert expected["DRA_GPU_GPU_COUNT"] == "2"


def test_in_place_update_reaches_a_running_wait(podman: Podman, image: str, node: Node) -> None:
    """Network data written in place (v1.36 style) ends a running `wait --for network`, exit 0."""
    device = node.prepare(NIC, "eth", vf(node))
    script = (
        "dra-metadata wait --claim nic --request eth --for network --timeout 60s --progress 0.2s"
        f" && dra-metadata show --claim nic --request eth --driver {node.pub.driver} --json"
    )
    name = podman.start(image, ["sh", "-c", script], device)
    podman.wait_logs(name, "network")  # a progress line: it is waiting for the network data
    node.pub.update(NIC, "eth", vf(node, NETWORK), mode="in-place")
    assert podman("wait", name, timeout=60).stdout.strip() == "0"
    out, err = podman.logs(name)
    shown = json.loads(out)
    assert shown["metadata"]["generation"] == 2, (shown, err)
    assert shown["requests"][0]["devices"][0]["networkData"]["interfaceName"] == "net1"


def test_atomic_replace_is_stale_inside_and_wait_fails_at_once(
    podman: Podman, image: str, node: Node
) -> None:
    """A replace (v1.37 style) after start: `watch` reports stale; `wait` fails at once, exit 69."""
    device = node.prepare(NIC, "eth", vf(node))
    name = podman.start(
        image, ["dra-metadata", "watch", "--claim", "nic", "--request", "eth"], device
    )
    podman.wait_logs(name, '"event":"update"')
    node.pub.update(NIC, "eth", vf(node, NETWORK), mode="replace")
    out, _ = podman.wait_logs(name, '"event":"stale"')
    events = [json.loads(line) for line in out.splitlines()]
    assert [event["event"] for event in events] == ["update", "stale"]
    stale = events[1]
    assert stale["path"].endswith("/resourceclaims/nic/eth/" + node.pub.driver + "-metadata.json")
    started = time.monotonic()
    done = podman(
        "exec", name, "dra-metadata", "wait", "--claim", "nic", "--request", "eth",
        "--for", "network", "--timeout", "30s",
        check=False,
    )  # fmt: skip
    assert time.monotonic() - started < 10, "wait must not wait for what cannot come"
    assert done.returncode == 69, done.stderr
    assert "replaced" in done.stderr or "stale" in done.stderr, done.stderr


def test_wait_for_a_claim_that_was_never_mounted_fails_at_once(
    podman: Podman, image: str, node: Node
) -> None:
    """The container has the GPU claim only: waiting for the NIC claim fails at once, exit 69."""
    device = node.prepare(gpu_claim(), "gpu", gpus(node))
    started = time.monotonic()
    done = podman.run(
        image,
        ["dra-metadata", "wait", "--claim", "nic", "--request", "eth", "--timeout", "30s"],
        device,
    )
    assert time.monotonic() - started < 15, "wait must not wait for what cannot come"
    assert done.returncode == 69, done.stderr
    assert "nic" in done.stderr, done.stderr


#: The read-only commands compared between host and container, each as one shell line.
COMMANDS = [
    "dra-metadata ls",
    "dra-metadata show --template-claim gpu --request gpu",
    "dra-metadata show --claim nic --request eth --format summary",
    "dra-metadata get --template-claim gpu --request gpu uuid",
    "dra-metadata get --claim nic --request eth interfaceName",
    "dra-metadata validate /var/run/kubernetes.io/dra-device-attributes",
    "dra-metadata lint /var/run/kubernetes.io/dra-device-attributes",
]


def answers(commands: list[str]) -> str:
    """A shell script that runs each command and prints its output and exit code."""
    return "".join(f"echo '$ {c}'; {c} 2>&1; echo \"exit $?\"\n" for c in commands)


def test_files_are_read_only_and_the_cli_answers_as_on_the_host(
    podman: Podman, image: str, node: Node, tmp_path: Path
) -> None:
    """Inside, a write fails; ls, show, get, validate and lint print what they print on the host."""
    devices = [
        node.prepare(gpu_claim(), "gpu", gpus(node)),
        node.prepare(NIC, "eth", vf(node, NETWORK)),
    ]
    files = f"{INSIDE}/resourceclaimtemplates/gpu/gpu/{node.pub.driver}-metadata.json"
    probe = f"if true >> {files}; then echo writable; fi; stat -c %h {files}"
    done = podman.run(image, ["sh", "-c", probe], *devices)
    assert "Permission denied" in done.stderr, done.stderr  # the image's user: not its file
    done = podman.run(image, ["sh", "-c", probe], "--user=0", *devices)
    assert "Read-only file system" in done.stderr, done.stderr  # root: a read-only mount
    assert done.stdout == "1\n"  # the node's file itself (one link), not a copy
    inside = podman.run(image, ["sh", "-c", answers(COMMANDS)], *devices)
    assert inside.returncode == 0, inside.stderr
    view = node.container_view(tmp_path / "view")
    host_commands = [c.replace(dm.CONTAINER_DIR, str(view)) for c in COMMANDS]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dra-metadata").write_text(
        f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)}"
        ' -m dra_metadata "$@"\n'
    )
    (bin_dir / "dra-metadata").chmod(0o755)
    on_host = subprocess.run(
        ["/bin/sh", "-c", answers(host_commands)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", dm.ROOT_ENV: str(view)},
        timeout=120,
        check=True,
    )
    expected = on_host.stdout.replace(str(view), dm.CONTAINER_DIR)
    assert inside.stdout == expected
    assert inside.stdout.count("exit 0") == len(COMMANDS)


def test_the_image_is_labelled_runs_as_non_root_and_has_a_shell(podman: Podman, image: str) -> None:
    """The image carries its version label, runs as user 65532, and has sh for the manifests."""
    shown = podman("image", "inspect", image).stdout
    (config,) = [entry["Config"] for entry in json.loads(shown)]
    assert config["Labels"]["org.opencontainers.image.version"] == dm.__version__
    assert config["User"] == "65532:65532"
    done = podman.run(image, ["sh", "-c", "id -u; dra-metadata --version"])
    assert done.stdout == f"65532\ndra-metadata {dm.__version__}\n", done.stderr
