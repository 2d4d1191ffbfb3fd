"""The pod manifests in examples/pods/ parse, and their dra-metadata scripts work in a real sh."""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import dra_metadata as dm
from tests.conftest import REPO, SAMPLE_ROOT

PODS = REPO / "examples" / "pods"
MANIFESTS = sorted(PODS.glob("*.yaml"))


def documents(path: Path) -> list[dict[str, Any]]:
    """The YAML documents of one manifest file."""
    with open(path, encoding="utf-8") as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc is not None]


def pod(path: Path) -> dict[str, Any]:
    """The one Pod of a manifest file."""
    (found,) = [doc for doc in documents(path) if doc["kind"] == "Pod"]
    return found


def script(container: dict[str, Any]) -> tuple[str, str, list[str]]:
    """The ``sh -c SCRIPT NAME ARGS...`` of a container: sh's flags, the script, its arguments."""
    command = [*container["command"], *container.get("args", [])]
    assert command[0] == "sh", command
    assert command[1] in ("-c", "-ec"), command
    return command[1], command[2], command[3:]


def dra_metadata_lines(text: str) -> list[str]:
    """The dra-metadata commands of a shell script, each up to its `;`, `&&`, `|` or `>`."""
    found = []
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
        while "dra-metadata" in words:
            words = words[words.index("dra-metadata") :]
            end = next(
                (i for i, word in enumerate(words) if word and set(word) <= set(";&|<>()")),
                len(words),
            )
            found.append(shlex.join(words[:end]))
            words = words[end:]
    return found


def test_command_extraction_finds_each_command() -> None:
    """The helper above finds commands wherever the script has them."""
    assert dra_metadata_lines(
        "until dra-metadata get --claim a --request b x; do sleep 1; done\n"
        "dra-metadata env > /f && dra-metadata ls|wc -l  # dra-metadata in a comment"
    ) == [
        "dra-metadata get --claim a --request b x",
        "dra-metadata env",
        "dra-metadata ls",
    ]


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """A directory holding a `dra-metadata` that runs this checkout, to put first on PATH."""
    directory = tmp_path / "bin"
    directory.mkdir()
    wrapper = directory / "dra-metadata"
    wrapper.write_text(
        f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(REPO))} exec "
        f'{shlex.quote(sys.executable)} -m dra_metadata "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return directory


def container_command(
    container: dict[str, Any], volumes: dict[str, Path], args: list[str] | None
) -> list[str]:
    """A container's `sh -c` command line for a real /bin/sh, its mounts mapped to host paths."""
    flags, text, argv = script(container)
    for mount in container.get("volumeMounts", []):
        # The mount path as a whole path prefix only: /dra in /dra/dra.env, once.
        pattern = r"(?<![\w/.-])" + re.escape(mount["mountPath"]) + r"(?![\w.-])"
        text = re.sub(pattern, str(volumes[mount["name"]]).replace("\\", "\\\\"), text)
    return ["/bin/sh", flags, text, *(argv[:1] + (args if args is not None else argv[1:]))]


def container_env(bin_dir: Path) -> dict[str, str]:
    """The environment the containers' scripts run in: this checkout's CLI, the sample tree."""
    return {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        dm.ROOT_ENV: str(SAMPLE_ROOT),
    }


def run_container(
    container: dict[str, Any], volumes: dict[str, Path], bin_dir: Path, args: list[str] | None
) -> subprocess.CompletedProcess[str]:
    """Run a container's `sh -c` script in a real /bin/sh until it exits."""
    return subprocess.run(
        container_command(container, volumes, args),
        capture_output=True,
        text=True,
        env=container_env(bin_dir),
        timeout=60,
        check=False,
    )


def test_there_are_two_pod_examples() -> None:
    """examples/pods/ holds the env-file pod and the wait-for-network pod."""
    assert [path.name for path in MANIFESTS] == ["gpu-env.yaml", "nic-wait.yaml"]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_manifests_are_well_formed(path: Path) -> None:
    """Each file parses; its pod's containers list the claim they read, mounts name volumes."""
    docs = documents(path)
    assert all({"apiVersion", "kind", "metadata"} <= set(doc) for doc in docs)
    spec = pod(path)["spec"]
    claims = {claim["name"] for claim in spec["resourceClaims"]}
    volumes = {volume["name"] for volume in spec["volumes"]}
    for container in spec["initContainers"] + spec["containers"]:
        assert {claim["name"] for claim in container["resources"]["claims"]} <= claims
        assert {mount["name"] for mount in container["volumeMounts"]} <= volumes
    # The claim objects the pod refers to are in the same file.
    for claim in spec["resourceClaims"]:
        kind = "ResourceClaimTemplate" if "resourceClaimTemplateName" in claim else "ResourceClaim"
        name = claim.get("resourceClaimTemplateName") or claim["resourceClaimName"]
        assert any(d["kind"] == kind and d["metadata"]["name"] == name for d in docs)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_every_device_class_the_claims_name_is_in_the_file(path: Path) -> None:
    """A user applies one file: each deviceClassName has its DeviceClass, selecting its driver."""
    docs = documents(path)
    classes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DeviceClass"}
    assert classes, "each example brings the DeviceClass it uses"
    for doc in docs:
        if doc["kind"] not in ("ResourceClaim", "ResourceClaimTemplate"):
            continue
        spec = doc["spec"]["spec"] if doc["kind"] == "ResourceClaimTemplate" else doc["spec"]
        for request in spec["devices"]["requests"]:
            name = request["exactly"]["deviceClassName"]
            assert doc["apiVersion"] == classes[name]["apiVersion"] == "resource.k8s.io/v1"
            (selector,) = classes[name]["spec"]["selectors"]
            assert selector["cel"]["expression"] == f'device.driver == "{name}"'


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_manifests_say_what_the_cluster_and_the_image_need(path: Path) -> None:
    """The header says the driver must have device metadata enabled and how to build the image."""
    comment = path.read_text(encoding="utf-8").split("\napiVersion:", 1)[0]
    header = " ".join(line.lstrip("#").strip() for line in comment.splitlines())
    assert "Kubernetes v1.37" in header
    assert "must have device metadata enabled" in header
    images = {c["image"] for c in pod(path)["spec"]["initContainers"]}
    assert images == {"registry.example.com/dra-metadata:0.1.0"}
    assert "scripts/build-image --base" in header
    assert "--tag registry.example.com/dra-metadata:0.1.0" in header
    assert f"dra-metadata:{dm.__version__}" in header


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_every_dra_metadata_command_runs_against_the_sample_tree(path: Path, bin_dir: Path) -> None:
    """Each dra-metadata command in a container script exits 0 with DRA_METADATA_ROOT set."""
    spec = pod(path)["spec"]
    commands = [
        line
        for container in spec["initContainers"] + spec["containers"]
        for line in dra_metadata_lines(script(container)[1])
    ]
    assert commands, "each example runs dra-metadata"
    for command in commands:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            capture_output=True,
            text=True,
            env={
                "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                dm.ROOT_ENV: str(SAMPLE_ROOT),
            },
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, (command, done.stderr)


def test_gpu_pod_init_container_writes_what_the_main_container_sources(
    tmp_path: Path, bin_dir: Path
) -> None:
    """The init container writes the env file; the main container gets the UUIDs from it."""
    spec = pod(PODS / "gpu-env.yaml")["spec"]
    volumes = {"dra-env": tmp_path / "dra-env"}
    volumes["dra-env"].mkdir()
    (init,) = spec["initContainers"]
    done = run_container(init, volumes, bin_dir, None)
    assert done.returncode == 0, done.stderr
    assert (volumes["dra-env"] / "dra.env").read_text().startswith("export DRA_GPU_GPU_COUNT=2\n")
    (main,) = spec["containers"]
    shown = run_container(main, volumes, bin_dir, ["printenv", "CUDA_VISIBLE_DEVICES"])
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == (
        "GPU-8f6c2a4e-0b1d-4c55-9a1e-3d2b7c9e0f11,GPU-1c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22\n"
    )


def test_nic_pod_waits_for_network_data_then_the_worker_sees_it(
    tmp_path: Path, bin_dir: Path
) -> None:
    """The init container's wait returns at once here; the worker prints name and IPs, and stays."""
    spec = pod(PODS / "nic-wait.yaml")["spec"]
    volumes = {"dra-env": tmp_path / "dra-env"}
    volumes["dra-env"].mkdir()
    (init,) = spec["initContainers"]
    done = run_container(init, volumes, bin_dir, None)
    assert done.returncode == 0, done.stderr
    assert (
        "export DRA_NIC_ETH_0_INTERFACE_NAME=net1\n" in (volumes["dra-env"] / "dra.env").read_text()
    )
    (worker,) = spec["containers"]
    assert "restartPolicy" not in spec  # Always: a worker that exits is restarted in a loop
    with subprocess.Popen(
        container_command(worker, volumes, None),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=container_env(bin_dir),
    ) as running:
        try:
            assert running.stdout is not None
            assert (
                running.stdout.readline() == "serving on net1 (10.20.30.41/24,fd00:10:20::29/64)\n"
            )
            with pytest.raises(subprocess.TimeoutExpired):
                running.wait(timeout=1)  # still serving
        finally:
            running.kill()


CLUSTER = REPO / "examples" / "cluster"
PYTHON_DRIVER = REPO / "examples" / "python-driver"
#: Every manifest the cluster suites apply, and the page that shows it.
CLUSTER_PAGES = {
    CLUSTER: "cluster.md", PYTHON_DRIVER: "driver.md", PYTHON_DRIVER / "deploy": "driver.md"
}  # fmt: skip
CLUSTER_MANIFESTS = sorted(path for folder in CLUSTER_PAGES for path in folder.glob("*.yaml"))


@pytest.mark.parametrize("path", CLUSTER_MANIFESTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_cluster_docs_show_each_manifest_whole(path: Path) -> None:
    """docs/cluster.md and docs/driver.md show every manifest the cluster suites apply, as
    the file has it."""
    page = (REPO / "docs" / CLUSTER_PAGES[path.parent]).read_text(encoding="utf-8")
    where = path.relative_to(REPO)
    assert f"`{where}`:\n\n```yaml\n{path.read_text()}```\n" in page


@pytest.mark.parametrize("path", CLUSTER_MANIFESTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_cluster_pods_run_the_imported_image_on_the_nodes_network(path: Path) -> None:
    """Each pod of examples/cluster/ and examples/python-driver/ runs an image the cluster
    imported (never pulled), on the node's network (the cluster has no CNI plugin),
    without a service account token, each container dropping every capability and
    naming the claims it reads."""
    for doc in documents(path):
        if doc["kind"] != "Pod":
            continue
        spec = doc["spec"]
        assert spec["hostNetwork"] is True
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"]["runAsNonRoot"] is True
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            assert container["image"].startswith("localhost/dra-metadata")
            assert container["image"].endswith(":cluster")
            assert container["imagePullPolicy"] == "Never"
            assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
            claims = {c["name"] for c in container["resources"]["claims"]}
            assert claims <= {c["name"] for c in spec["resourceClaims"]}
