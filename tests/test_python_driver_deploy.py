"""The Python example driver's deployment (examples/python-driver/deploy/), read as files.

The cluster suite runs it (tests/e2e/test_python_driver.py); these checks need no
cluster: the ClusterRole grants exactly the API calls driver.py makes, the DaemonSet
mounts each host directory at its own path and passes those paths to the driver, the pod
runs with no capability, and the cluster changes the DaemonSet only where it says.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from devtools.cluster import deploy
from devtools.cluster.settings import PY_DRIVER, PY_DRIVER_SOURCE
from tests.conftest import REPO

LABEL = {"app.kubernetes.io/name": "python-driver"}


def objects() -> list[dict[str, Any]]:
    return [obj for path in deploy.MANIFESTS for obj in deploy.documents(path)]


def test_every_manifest_is_applied_and_every_object_labelled() -> None:
    assert deploy.MANIFESTS[-1] == deploy.DAEMONSET_FILE
    kinds = [obj["kind"] for obj in objects()]
    assert kinds == [
        "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "DeviceClass",
        "DaemonSet",
    ]  # fmt: skip
    for obj in objects():
        assert obj["metadata"]["labels"] == {**obj["metadata"]["labels"], **LABEL}, obj["kind"]
        if obj["kind"] not in (
            "Namespace",
            "ClusterRole",
            "ClusterRoleBinding",
            "DeviceClass",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ):
            assert obj["metadata"]["namespace"] == deploy.NAMESPACE, obj["kind"]  # fmt: skip


#: The kubernetes client's method prefixes, as the API's verbs.
VERBS = {"read": "get", "list": "list", "create": "create", "replace": "update",
         "patch": "patch", "delete": "delete"}  # fmt: skip


def calls_of_the_driver() -> set[tuple[str, str]]:
    """(resource, verb) of every API call driver.py makes through ``self.api``; a method
    handed to a watch's ``stream`` is a watch too."""
    tree = ast.parse((PY_DRIVER_SOURCE / "driver.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "api"
        ):
            continue
        prefix, _, rest = node.attr.partition("_")
        rest = rest.removeprefix("namespaced_").removesuffix("_for_all_namespaces")
        found.add((rest.replace("_", "") + "s", VERBS[prefix]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "stream":
            (method, *_) = node.args
            assert isinstance(method, ast.Attribute)
            rest = method.attr.partition("_")[2].removesuffix("_for_all_namespaces")
            found.add((rest.replace("_", "") + "s", "watch"))
    return found


def test_the_role_grants_exactly_the_calls_the_driver_makes() -> None:
    (role,) = [obj for obj in objects() if obj["kind"] == "ClusterRole"]
    granted = {
        (resource, verb)
        for rule in role["rules"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        if rule["apiGroups"] == ["resource.k8s.io"]
    }
    assert all(rule["apiGroups"] == ["resource.k8s.io"] for rule in role["rules"])
    assert granted == calls_of_the_driver()
    assert granted == {
        ("resourceclaims", "get"), ("resourceclaims", "list"), ("resourceclaims", "watch"),
        ("resourceslices", "list"), ("resourceslices", "watch"), ("resourceslices", "create"),
        ("resourceslices", "update"), ("resourceslices", "delete"),
    }  # fmt: skip
    (binding,) = [obj for obj in objects() if obj["kind"] == "ClusterRoleBinding"]
    (subject,) = binding["subjects"]
    assert f"system:serviceaccount:{subject['namespace']}:{subject['name']}" == (
        deploy.SERVICE_ACCOUNT
    )
    (policy,) = [obj for obj in objects() if obj["kind"] == "ValidatingAdmissionPolicy"]
    assert deploy.SERVICE_ACCOUNT in policy["spec"]["matchConditions"][0]["expression"]


def test_the_daemonset_mounts_each_host_directory_at_its_own_path() -> None:
    obj = deploy.daemonset()
    assert obj["spec"]["selector"]["matchLabels"] == LABEL
    pod = obj["spec"]["template"]["spec"]
    assert obj["spec"]["template"]["metadata"]["labels"] == LABEL
    (container,) = pod["containers"]
    host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    mounted = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert (
        host
        == mounted
        == {
            "plugin": f"/var/lib/kubelet/plugins/{PY_DRIVER}",
            "registry": "/var/lib/kubelet/plugins_registry",
            "cdi": "/var/run/cdi",
        }
    )
    args = dict(arg.lstrip("-").split("=", 1) for arg in container["args"])
    assert args == {
        "node": "$(NODE_NAME)",
        "plugin-dir": host["plugin"],
        "registry-dir": host["registry"],
        "cdi-dir": host["cdi"],
    }
    security = container["securityContext"]
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "privileged" not in security
    assert "hostNetwork" not in pod
    assert pod["serviceAccountName"] == deploy.SERVICE_ACCOUNT.rpartition(":")[2]
    assert deploy.image() == container["image"]


def test_the_cluster_changes_the_daemonset_only_where_it_says(tmp_path: Path) -> None:
    original = deploy.daemonset()
    root, test_dir = tmp_path / "kubelet", tmp_path / "py-driver"
    ours = deploy.for_this_cluster(original, kubelet_root=root, api_port=16443, test_dir=test_dir)
    assert original == deploy.daemonset()  # not changed in place
    pod = ours["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod.pop("hostNetwork") is True
    assert container["env"][-2:] == [
        {"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
        {"name": "KUBERNETES_SERVICE_PORT", "value": "16443"},
    ]
    del container["env"][-2:]
    assert pod["volumes"].pop() == {
        "name": "test",
        "hostPath": {"path": str(test_dir), "type": "Directory"},
    }
    assert container["volumeMounts"].pop() == {"name": "test", "mountPath": str(test_dir)}
    assert container["args"].pop() == f"--test-pause-file={test_dir / 'pause'}"
    # What is left is the original with the kubelet's root moved, and nothing else.
    text = re.sub(re.escape(str(root)), "/var/lib/kubelet", repr(ours))
    assert text == repr(original)
    assert str(root) in repr(ours)
    assert "/var/run/cdi" in repr(ours)


def test_the_image_is_built_from_what_its_script_puts_in_the_context() -> None:
    """Each COPY and bind mount of the Containerfile names a path .containerignore lets
    through, and examples/python-driver/build-image makes or has it."""
    containerfile = (PY_DRIVER_SOURCE / "Containerfile").read_text(encoding="utf-8")
    sources = re.findall(r"^COPY (\S+) ", containerfile, re.M)
    sources += re.findall(r"--mount=type=bind,source=([^,\s]+)", containerfile)
    allowed = [
        line[1:].rstrip("/")
        for line in (REPO / ".containerignore").read_text(encoding="utf-8").splitlines()
        if line.startswith("!")
    ]
    assert sorted(sources) == sorted(allowed)
    script = (PY_DRIVER_SOURCE / "build-image").read_text(encoding="utf-8")
    assert 'stubs="$repo/build/python-driver-stubs"' in script


def test_the_driver_page_shows_the_containerfile_whole() -> None:
    page = (REPO / "docs" / "driver.md").read_text(encoding="utf-8")
    text = (PY_DRIVER_SOURCE / "Containerfile").read_text(encoding="utf-8")
    assert f"`examples/python-driver/Containerfile`:\n\n```dockerfile\n{text}```\n" in page
