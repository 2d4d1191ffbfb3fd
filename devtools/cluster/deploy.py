"""The Python example driver deployed as Kubernetes runs drivers: examples/python-driver/deploy/.

``scripts/cluster up`` applies those manifests as they are, except where this cluster is
not a node (:func:`for_this_cluster`, each change with its reason), and builds the image
the DaemonSet names with examples/python-driver/build-image. What a deployment needs
(the manifests, why each permission and host path, an upgrade) is in docs/driver.md,
"Deploying".
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from devtools.cluster.settings import PY_DRIVER_SOURCE

#: The manifests in the order of their names, as ``kubectl apply -f deploy/`` applies
#: them (the namespace before what lives in it); the DaemonSet last.
MANIFESTS = tuple(sorted((PY_DRIVER_SOURCE / "deploy").glob("*.yaml")))
DAEMONSET_FILE = PY_DRIVER_SOURCE / "deploy" / "5-daemonset.yaml"
NAMESPACE = "python-driver"
DAEMONSET = "python-driver"
SERVICE_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:python-driver"
#: The label every object of the deployment has, and the DaemonSet's selector.
SELECTOR = "app.kubernetes.io/name=python-driver"
#: The kubelet's root on a node, as the manifests name it.
NODE_KUBELET_ROOT = "/var/lib/kubelet"


def documents(path: Path) -> list[dict[str, Any]]:
    """The objects of one manifest file."""
    with open(path, encoding="utf-8") as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc]


def daemonset() -> dict[str, Any]:
    """The DaemonSet, as its file has it."""
    (obj,) = documents(DAEMONSET_FILE)
    return obj


def image() -> str:
    """The image the DaemonSet runs (``up`` builds it under that name)."""
    (container,) = daemonset()["spec"]["template"]["spec"]["containers"]
    name: str = container["image"]
    return name


def for_this_cluster(
    obj: dict[str, Any], *, kubelet_root: Path, api_port: int, test_dir: Path
) -> dict[str, Any]:
    """The DaemonSet as this cluster runs it; nothing else of it changes:

    - every path below ``/var/lib/kubelet`` (host paths, mount paths, arguments) moves
      below ``kubelet_root``: this cluster's kubelet has its own root, so as not to touch
      a node's;
    - ``hostNetwork``, and the API server at 127.0.0.1:``api_port``: the cluster has no
      Service network (no kube-proxy; every pod is on the host's network);
    - ``test_dir`` from the host, and ``--test-pause-file`` in it: the cluster suite
      makes a prepare wait there, to kill the driver in the middle of it.

    ``/var/run/cdi`` stays: the cluster's CDI directory is mounted there while it is up.
    """
    out = copy.deepcopy(obj)
    root = str(kubelet_root)

    def moved(path: str) -> str:
        if path == NODE_KUBELET_ROOT or path.startswith(NODE_KUBELET_ROOT + "/"):
            return root + path[len(NODE_KUBELET_ROOT) :]
        return path

    pod = out["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    for volume in pod["volumes"]:
        if "hostPath" in volume:
            volume["hostPath"]["path"] = moved(volume["hostPath"]["path"])
    for mount in container["volumeMounts"]:
        mount["mountPath"] = moved(mount["mountPath"])
    container["args"] = [
        f"{arg.partition('=')[0]}={moved(arg.partition('=')[2])}" if "=" in arg else moved(arg)
        for arg in container["args"]
    ]
    pod["hostNetwork"] = True
    container["env"] = [
        *container.get("env", []),
        {"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
        {"name": "KUBERNETES_SERVICE_PORT", "value": str(api_port)},
    ]
    pod["volumes"].append(
        {"name": "test", "hostPath": {"path": str(test_dir), "type": "Directory"}}
    )
    container["volumeMounts"].append({"name": "test", "mountPath": str(test_dir)})
    container["args"].append(f"--test-pause-file={test_dir / 'pause'}")
    return out
