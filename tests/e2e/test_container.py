"""The whole path in a real OCI runtime: publisher, CDI spec, podman + runc, our CLI image.

Each test prepares claims with :class:`~dra_metadata.MetadataPublisher` (node files in
a temporary plugin directory, CDI specs in /var/run/cdi) and runs containers of the
image built from this checkout that get the files through ``--device``, the way the
kubelet hands CDI devices to the container runtime.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import dra_metadata as dm
from tests.e2e.conftest import Node, Podman
from tests.e2e.scenarios import (
    COMMANDS,
    GPU_UUIDS,
    INSIDE,
    NETWORK,
    NIC,
    answers,
    answers_on_the_node,
    dra_variables,
    gpu_claim,
    gpus,
    pod_spec,
    vf,
    wait_then_show,
)

pytestmark = pytest.mark.e2e


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
    assert shown["CUDA_VISIBLE_DEVICES"] == GPU_UUIDS
    expected = dm.env_vars(root=node.container_view(tmp_path / "view"), pod_claim="gpu")
    assert dra_variables(done.stdout) == expected
    assert expected["DRA_GPU_GPU_COUNT"] == "2"


def test_in_place_update_reaches_a_running_wait(podman: Podman, image: str, node: Node) -> None:
    """Network data written in place (v1.36 style) ends a running `wait --for network`, exit 0."""
    device = node.prepare(NIC, "eth", vf(node))
    name = podman.start(image, ["sh", "-c", wait_then_show(node.pub.driver)], device)
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
    assert inside.stdout == answers_on_the_node(view, tmp_path)
    assert inside.stdout.count("exit 0") == len(COMMANDS)


def test_the_image_is_labelled_runs_as_non_root_and_has_a_shell(podman: Podman, image: str) -> None:
    """The image carries its version label, runs as user 65532, and has sh for the manifests."""
    shown = podman("image", "inspect", image).stdout
    (config,) = [entry["Config"] for entry in json.loads(shown)]
    assert config["Labels"]["org.opencontainers.image.version"] == dm.__version__
    assert config["User"] == "65532:65532"
    done = podman.run(image, ["sh", "-c", "id -u; dra-metadata --version"])
    assert done.stdout == f"65532\ndra-metadata {dm.__version__}\n", done.stderr
