"""What both end-to-end suites run: the claims, devices and commands of their scenarios.

The podman suite (test_container.py) and the CRI suite (test_cri.py) prepare the same
claims with the same devices and compare the same commands, so that they show the
same things in two container engines.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

import dra_metadata as dm
from tests.conftest import REPO
from tests.e2e.conftest import Node

PODS = REPO / "examples" / "pods"
#: Where the metadata files are inside the container: /var/run is a link to /run.
INSIDE = "/run/kubernetes.io/dra-device-attributes"
#: gpu-env.yaml's two GPUs, as `dra-metadata env` joins their UUIDs.
GPU_UUIDS = "GPU-0c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22,GPU-1c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22"


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


def wait_then_show(driver: str) -> str:
    """The deferred-network scenario's script: wait for the NIC's network data, then show it."""
    return (
        "dra-metadata wait --claim nic --request eth --for network --timeout 60s --progress 0.2s"
        f" && dra-metadata show --claim nic --request eth --driver {driver} --json"
    )


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


def answer_of(output: str, command: str) -> str:
    """What ``command`` printed in the output of an ``answers`` script (without its exit line)."""
    start = output.index(f"$ {command}\n") + len(command) + 3
    return output[start : output.index("\nexit ", start)]


def answers_on_the_node(view: Path, scratch: Path, commands: list[str] = COMMANDS) -> str:
    """What ``answers(commands)`` prints on the node, reading ``view`` (a container view).

    The node runs this checkout's CLI; paths of the view are shown as the container's.
    """
    host_commands = [c.replace(dm.CONTAINER_DIR, str(view)) for c in commands]
    bin_dir = scratch / "bin"
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
    return on_host.stdout.replace(str(view), dm.CONTAINER_DIR)
