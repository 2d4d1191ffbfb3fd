"""The end-to-end suites' fixtures: a Debian base image, our image, CDI, and the engines.

Two suites run our image in real containers, each only when asked:

- ``python -m pytest -m e2e tests/e2e`` (or ``DRA_METADATA_E2E=1``): podman and runc,
  containers get the files through ``--device <driver>/metadata=...`` (test_container.py);
- ``python -m pytest -m cri tests/e2e`` (or ``DRA_METADATA_CRI=1``): containerd v2 over
  the CRI, as the kubelet drives it, with ``CDIDevices`` (test_cri.py, tests/e2e/cri.py).

What both do, as a node would: a bookworm root file system with python3
(``mmdebstrap``, devtools/podman.py) becomes a base image (``podman import``); the CLI
image is built on it by ``scripts/build-image``; a :class:`~dra_metadata.MetadataPublisher`
writes the node files into a temporary plugin directory and the CDI specs where the
engine reads them (podman: ``/var/run/cdi``; containerd: the suite's own directory).

Anywhere else, and where a tool is missing or the user is not root, every test of the
suite is skipped with the reason. The images are built once per session and removed at
its end; each test removes its CDI specs. To try a change to the tests without building
again, give an image built before (``scripts/build-image``) in
``DRA_METADATA_E2E_IMAGE``: it is used as it is, and kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import dra_metadata as dm
from devtools.containerd import PAUSE_CONTAINERFILE, PAUSE_IMAGE
from devtools.podman import CONTAINERS_CONF, debian_rootfs
from tests.conftest import REPO
from tests.e2e.cri import Containerd, Pod
from tests.e2e.kube import cluster, goref_image, scenario  # noqa: F401 (fixtures of the cluster suites)
from tests.goref.harness import Goref
from tests.goref.harness import build as build_goref

#: Set to 1 to run the suite without ``-m e2e``.
E2E_ENV = "DRA_METADATA_E2E"
#: Set to 1 to run the CRI suite without ``-m cri``.
CRI_ENV = "DRA_METADATA_CRI"
#: Set to 1 to run the cluster suite without ``-m cluster``.
CLUSTER_ENV = "DRA_METADATA_CLUSTER"
#: An image built before, to use instead of building one (tests of the tests only).
IMAGE_ENV = "DRA_METADATA_E2E_IMAGE"
TOOLS = ("podman", "runc", "mmdebstrap")
#: The CRI suite builds containerd and its client with go (scripts/build-containerd).
CRI_TOOLS = (*TOOLS, "go")
#: The cluster suite builds Kubernetes too and makes the cluster's credentials with openssl.
CLUSTER_TOOLS = (*CRI_TOOLS, "openssl")
#: Where podman 4.3 looks for CDI specs (besides /etc/cdi); it has no setting to add one.
CDI_DIR = "/var/run/cdi"


def missing_tools_or_root(
    suite: str, tools: Sequence[str], install: str, root: str, *, why: str = ""
) -> str | None:
    """Why a suite cannot run on this machine (a tool missing, not root), or None."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        return f"{suite} tests need {', '.join(missing)} ({install}){why}"
    if os.geteuid() != 0:
        return f"{suite} tests need root: {root}"
    return None


def skip_reason(config: pytest.Config) -> str | None:
    """Why the podman suite cannot or should not run here, or None."""
    cannot = missing_tools_or_root(
        "end-to-end", TOOLS, "apt-get install podman runc mmdebstrap",
        f"podman reads CDI specs from {CDI_DIR}",
    )  # fmt: skip
    if cannot is not None:
        return cannot
    if not asked(config, "e2e", E2E_ENV):
        return (
            "end-to-end tests run only when asked: python -m pytest -m e2e tests/e2e "
            f"(or {E2E_ENV}=1)"
        )
    return None


def cri_skip_reason(config: pytest.Config) -> str | None:
    """Why the CRI suite cannot or should not run here, or None."""
    cannot = missing_tools_or_root(
        "CRI", CRI_TOOLS,
        "apt-get install podman runc mmdebstrap; go 1.26 or newer for scripts/build-containerd",
        "containerd and runc make mounts and namespaces",
    )  # fmt: skip
    if cannot is not None:
        return cannot
    if not asked(config, "cri", CRI_ENV):
        return f"CRI tests run only when asked: python -m pytest -m cri tests/e2e (or {CRI_ENV}=1)"
    return None


def cluster_cannot_run() -> str | None:
    """Why the cluster suite cannot run on this machine, or None."""
    return missing_tools_or_root(
        "cluster", CLUSTER_TOOLS,
        "apt-get install podman runc mmdebstrap openssl; go 1.26 or newer",
        "the kubelet and containerd make mounts and cgroups",
        why=": they build Kubernetes v1.37 and run a one-node cluster",
    )  # fmt: skip


def cluster_skip_reason(config: pytest.Config) -> str | None:
    """Why the cluster suite should not run here, or None.

    Asked for under CI (``CI=true``) where it cannot run, it runs: its fixture then
    fails, saying why (CI must run it).
    """
    cannot = cluster_cannot_run()
    if not asked(config, "cluster", CLUSTER_ENV):
        return cannot or (
            "cluster tests run only when asked: python -m pytest -m cluster tests/e2e "
            f"(or {CLUSTER_ENV}=1); they build Kubernetes v1.37 with go and run a one-node "
            "cluster as root (scripts/cluster up)"
        )
    if cannot is not None and os.environ.get("CI") != "true":
        return cannot
    return None


def asked(config: pytest.Config, marker: str, env: str) -> bool:
    """Whether the run selects ``marker`` (``-m``) or sets ``env`` to 1."""
    return marker in (config.getoption("markexpr") or "") or os.environ.get(env) == "1"


#: Each suite's marker and the question whether it runs here.
#: The cluster suite's last test: it takes the cluster down.
CLUSTER_DOWN_TEST = "test_up_again_is_a_no_op_then_down_restores_the_machine"
SUITES = {"e2e": skip_reason, "cri": cri_skip_reason, "cluster": cluster_skip_reason}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, with the reason, each test of a suite that cannot or should not run here.

    This is decided before any fixture runs, so no image is built for a skipped suite.
    """
    reasons: dict[str, str | None] = {}
    for item in items:
        for marker, reason_for in SUITES.items():
            if item.get_closest_marker(marker) is None:
                continue
            if marker not in reasons:
                reasons[marker] = reason_for(config)
            reason = reasons[marker]
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
    # The test that takes the cluster down runs after every other cluster test.
    items.sort(key=lambda item: item.name == CLUSTER_DOWN_TEST)


@dataclass
class Podman:
    """podman with this suite's containers.conf; each call is one real podman command."""

    env: dict[str, str]
    names: list[str] = field(default_factory=list)  # containers to remove at the end

    def __call__(
        self, *args: str, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["podman", *args],
            capture_output=True,
            text=True,
            env=self.env,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
        return done

    def run(
        self, image: str, command: Sequence[str], *options: str, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """``podman run --rm`` of ``command`` in ``image`` with runc, no network."""
        return self(
            "run", "--rm", "--runtime", "runc", "--network", "none", *options, image, *command,
            check=check,
        )  # fmt: skip

    def start(self, image: str, command: Sequence[str], *options: str) -> str:
        """Start a detached container; returns its name (removed at the session's end)."""
        name = f"dra-e2e-{uuid.uuid4().hex[:10]}"
        self.names.append(name)
        self(
            "run", "--detach", "--name", name, "--runtime", "runc", "--network", "none",
            *options, image, *command,
        )  # fmt: skip
        return name

    def logs(self, name: str) -> tuple[str, str]:
        """What the container printed so far: stdout, stderr."""
        done = self("logs", name)
        return done.stdout, done.stderr

    def wait_logs(self, name: str, text: str, *, timeout: float = 30) -> tuple[str, str]:
        """Poll the container's output until ``text`` shows up in it; returns both streams."""
        deadline = time.monotonic() + timeout
        while True:
            out, err = self.logs(name)
            if text in out or text in err:
                return out, err
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not printed by {name}:\n{out}\n{err}")
            time.sleep(0.1)


@pytest.fixture(scope="session")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Podman]:
    """podman set up for these machines (CONTAINERS_CONF at this suite's file).

    Both suites build their images with it; the CRI suite hands them to containerd.
    """
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text(CONTAINERS_CONF, encoding="utf-8")
    tool = Podman({**os.environ, "CONTAINERS_CONF": str(conf)})
    yield tool
    for name in tool.names:
        tool("rm", "--force", "--time", "0", name, check=False)


@pytest.fixture(scope="session")
def base_image(podman: Podman, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Debian bookworm image with python3 (and its venv module), made by mmdebstrap."""
    if os.environ.get(IMAGE_ENV):
        yield ""  # not needed: the image is given
        return
    rootfs = tmp_path_factory.mktemp("rootfs") / "bookworm.tar"
    debian_rootfs(rootfs)
    tag = f"localhost/dra-metadata-e2e-base:{uuid.uuid4().hex[:8]}"
    podman("import", str(rootfs), tag)
    rootfs.unlink()
    yield tag
    podman("rmi", "--force", tag, check=False)


@pytest.fixture(scope="session")
def image(podman: Podman, base_image: str) -> Iterator[str]:
    """The CLI image built from this checkout on the Debian base, by scripts/build-image."""
    given = os.environ.get(IMAGE_ENV)
    if given:
        yield given
        return
    tag = f"localhost/dra-metadata-e2e:{uuid.uuid4().hex[:8]}"
    done = subprocess.run(
        [str(REPO / "scripts" / "build-image"), "--base", base_image, "--tag", tag],
        capture_output=True,
        text=True,
        env=podman.env,
        stdin=subprocess.DEVNULL,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    yield tag
    podman("rmi", "--force", tag, check=False)


def container_view(specs: Sequence[Path], root: Path) -> Path:
    """Copy the file each CDI spec mounts to its container path under ``root``."""
    for path in specs:
        spec = json.loads(path.read_text(encoding="utf-8"))
        for device in spec["devices"]:
            for mount in device["containerEdits"]["mounts"]:
                target = root / os.path.relpath(mount["containerPath"], dm.CONTAINER_DIR)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(mount["hostPath"], target)
    return root


class Node:
    """The node side of one test: a driver's publisher, its prepared claims, their copies."""

    def __init__(self, tmp_path: Path, driver: str, cdi_dir: str | Path = CDI_DIR) -> None:
        self.pub = dm.MetadataPublisher(
            driver, plugin_data_dir=tmp_path / "plugins" / driver, cdi_dir=cdi_dir
        )
        self.claims: list[dm.ClaimRef] = []
        self.prepared: list[tuple[dm.ClaimRef, str]] = []

    def prepare_cdi(self, claim: dm.ClaimRef, request: str, devices: list[dm.Device]) -> str:
        """Prepare as the driver does; returns the CDI device ID (the kubelet's ``CDIDevices``)."""
        self.claims.append(claim)
        self.prepared.append((claim, request))
        return self.pub.prepare(claim, request, devices)

    def prepare(self, claim: dm.ClaimRef, request: str, devices: list[dm.Device]) -> str:
        """Prepare as the driver does; returns the ``--device`` argument for podman."""
        return f"--device={self.prepare_cdi(claim, request, devices)}"

    def container_view(self, root: Path) -> Path:
        """Copy every prepared file to its container path under ``root``, as the mounts show it."""
        specs = [Path(self.pub.cdi_spec_path(claim, request)) for claim, request in self.prepared]
        return container_view(specs, root)

    def cleanup(self) -> None:
        for claim in self.claims:
            self.pub.unprepare(claim)


@contextlib.contextmanager
def publishing_node(tmp_path: Path, cdi_dir: str | Path) -> Iterator[Node]:
    """A publisher for a driver of the test's own, CDI specs in ``cdi_dir`` (removed after)."""
    created = not os.path.isdir(cdi_dir)
    node = Node(tmp_path, f"gpu-{uuid.uuid4().hex[:8]}.e2e.example.com", cdi_dir)
    try:
        yield node
    finally:
        node.cleanup()
        if created:
            with contextlib.suppress(OSError):  # someone else's specs are there now
                os.rmdir(cdi_dir)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    """A publisher for a driver of this test's own, CDI specs in /var/run/cdi (removed after)."""
    with publishing_node(tmp_path, CDI_DIR) as node:
        yield node


#: Where scripts/build-containerd puts containerd, its shim, ctr, cri-client and pause.
CRI_BIN = REPO / "build" / "cri"
#: The CRI suite's figures (seconds), printed at the end of the run.
CRI_TIMES: dict[str, float] = {}
#: The cluster suite's figures (seconds), when it brought the cluster up itself.
CLUSTER_TIMES: dict[str, float] = {}


def podman_to_containerd(podman: Podman, containerd: Containerd, tag: str, scratch: Path) -> str:
    """Hand a podman image to containerd (``podman save``, ``ctr images import``): its ID."""
    archive = scratch / "image.tar"
    podman("save", "--format", "docker-archive", "--output", str(archive), tag)
    try:
        return containerd.import_archive(archive, tag)
    finally:
        archive.unlink()


@pytest.fixture(scope="session")
def containerd(podman: Podman, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Containerd]:
    """containerd v2 of the suite's own (devtools/containerd.py says how it is configured).

    Built by scripts/build-containerd into build/cri (nothing is rebuilt when that is up
    to date), started with its own root, state, socket and CDI spec directory, given the
    local pause image; at the end every pod is removed, containerd stopped and its
    directories unmounted and removed.
    """
    started = time.monotonic()
    done = subprocess.run(
        [str(REPO / "scripts" / "build-containerd"), str(CRI_BIN)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    CRI_TIMES["build containerd (s)"] = time.monotonic() - started
    base = tmp_path_factory.mktemp("containerd")
    runtime = Containerd(CRI_BIN, base, base / "cdi")
    try:
        CRI_TIMES["start containerd (s)"] = runtime.start()
        pause = tmp_path_factory.mktemp("pause")
        shutil.copy(CRI_BIN / "pause", pause / "pause")
        (pause / "Containerfile").write_text(PAUSE_CONTAINERFILE, encoding="utf-8")
        podman("build", "--network", "none", "--pull=never", "--tag", PAUSE_IMAGE, str(pause))
        podman_to_containerd(podman, runtime, PAUSE_IMAGE, pause)
        podman("rmi", "--force", PAUSE_IMAGE, check=False)
        yield runtime
    finally:
        runtime.stop()


@pytest.fixture(scope="session")
def cri_image(
    podman: Podman, containerd: Containerd, image: str, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """Our image (scripts/build-image), imported into containerd; its name there."""
    podman_to_containerd(podman, containerd, image, tmp_path_factory.mktemp("image"))
    return image


@pytest.fixture
def cri_node(containerd: Containerd, tmp_path: Path) -> Iterator[Node]:
    """A publisher for a driver of this test's own, CDI specs where containerd reads them."""
    with publishing_node(tmp_path, containerd.cdi_dir) as node:
        yield node


@pytest.fixture
def pods(containerd: Containerd, tmp_path: Path) -> Iterator[Callable[[str, str], Pod]]:
    """Run pods (``pods(name, namespace)``) as the kubelet does; each is removed after the test."""
    made: list[Pod] = []

    def new(name: str, namespace: str) -> Pod:
        pod = Pod(containerd, tmp_path / "pods", name, namespace)
        made.append(pod)
        return pod

    yield new
    for pod in made:
        pod.remove()


@pytest.fixture(scope="session")
def go_reference() -> Iterator[Goref]:
    """The Go reference harness (conformance/goref, static build), running on the node.

    It runs the Go kubelet plugin ``Helper`` (writes) and the Go readers (in a private
    mount namespace). The static build is the one put into the reader image too.
    """
    harness = Goref(build_goref(static=True))
    yield harness
    harness.close()


@pytest.fixture(scope="session")
def go_reader_image(
    podman: Podman, containerd: Containerd, cri_image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Our image plus the static harness as /usr/local/bin/goref, in containerd: the Go
    readers inside a container, reading what the runtime mounted."""
    context = tmp_path_factory.mktemp("goref-image")
    shutil.copy(build_goref(static=True), context / "goref")
    (context / "Containerfile").write_text(
        f"FROM {cri_image}\nCOPY goref /usr/local/bin/goref\n", encoding="utf-8"
    )
    tag = f"localhost/dra-metadata-goref:{uuid.uuid4().hex[:8]}"
    podman("build", "--network", "none", "--pull=never", "--tag", tag, str(context))
    try:
        podman_to_containerd(podman, containerd, tag, context)
        yield tag
    finally:
        podman("rmi", "--force", tag, check=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The CRI suite's figures: how long containerd took to build and to start."""
    if CRI_TIMES:
        figures = ", ".join(f"{name} {value:.1f}" for name, value in CRI_TIMES.items())
        terminalreporter.write_line(f"CRI suite: {figures}")
    if CLUSTER_TIMES:
        figures = ", ".join(f"{name} {value:.1f}" for name, value in CLUSTER_TIMES.items())
        terminalreporter.write_line(f"cluster suite: {figures}")
