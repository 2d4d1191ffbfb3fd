"""The cluster's fixed choices, and what every module of it uses.

Its names, ports, drivers and components, where its state lives, and three helpers:
:class:`ClusterError`, :func:`log` (progress on stderr) and :func:`run` (a command to
its end).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

#: The checkout this file is in.
REPO = Path(__file__).resolve().parents[2]

#: The state directory's variable and default.
STATE_ENV = "DRA_METADATA_CLUSTER_DIR"
DEFAULT_STATE = Path("/var/lib/dra-metadata-cluster")
#: The image the pods run, as containerd knows it.
IMAGE = "localhost/dra-metadata:cluster"
#: The podman image the cluster's image is built on (kept between runs, a cache).
BASE_IMAGE = "localhost/dra-metadata-cluster-base:bookworm"
#: The node's name (its address type Hostname resolves to loopback).
NODE = "localhost"
#: The drivers ``up`` starts, in order, and how many devices each one publishes (the
#: Python example driver as a DaemonSet, the others as processes of the host).
DRIVERS = {
    "gpu.example.com": 4,
    "nic.example.com": 2,
    "py.example.com": 4,
    "a.upstream.example.com": 2,
    "b.upstream.example.com": 1,
}
#: Kubernetes' own e2e test driver (test/e2e/dra/test-driver), run as two drivers with
#: ``--enable-device-metadata``: two devices for one, one for the other, so that a
#: request of three served by the class that selects either takes a device of each.
UPSTREAM_DRIVERS = ("a.upstream.example.com", "b.upstream.example.com")
#: The Python example driver (examples/python-driver), deployed by its manifests
#: (:mod:`devtools.cluster.deploy`).
PY_DRIVER = "py.example.com"
#: Where a node's containerd reads CDI specs, in its order (containerd's defaults).
NODE_CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
#: Where drivers built on the kubelet plugin library write their specs by default: the
#: cluster's own directory is bind-mounted there while it is up.
RUN_CDI = "/var/run/cdi"
PY_DRIVER_SOURCE = REPO / "examples" / "python-driver"
#: Ports on 127.0.0.1 (none of them Kubernetes' defaults, so another cluster may run).
PORTS = {
    "etcd": 23790,
    "etcd-peer": 23800,
    "kube-apiserver": 16443,
    "kube-controller-manager": 20257,
    "kube-scheduler": 20259,
    "kubelet": 20250,
    "kubelet-healthz": 20248,
}
FEATURE_GATES = "DRAListTypeAttributes=true"
#: The processes ``up`` starts, in start order (``down`` stops them in reverse).
COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "containerd",
    "kubelet",
    "gpu.example.com",
    "nic.example.com",
    "a.upstream.example.com",
    "b.upstream.example.com",
)


class ClusterError(Exception):
    """Bringing the cluster up or down failed; the message says where and why."""


def state_dir() -> Path:
    """The cluster's state directory."""
    return Path(os.environ.get(STATE_ENV) or DEFAULT_STATE)


def log(message: str) -> None:
    """One line of progress on stderr."""
    print(f"cluster: {message}", file=sys.stderr, flush=True)


def run(
    command: Sequence[str | Path], *, env: dict[str, str] | None = None, timeout: float = 600,
    feed: str | None = None,
) -> str:  # fmt: skip
    """Run a command to its end; its stdout, or a ClusterError with what it printed."""
    done = subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        env=env,
        input=feed,
        stdin=None if feed is not None else subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise ClusterError(
            f"{' '.join(map(str, command))}: exit {done.returncode}\n"
            f"{done.stdout[-2000:]}{done.stderr[-4000:]}"
        )
    return done.stdout
