"""The end-to-end suite's fixtures: podman and runc, a Debian base image, our image, CDI.

What the suite does, as a node and a container engine would: a bookworm root file
system with python3 (``mmdebstrap``) becomes a base image (``podman import``); the
CLI image is built on it by ``scripts/build-image``; a
:class:`~dra_metadata.MetadataPublisher` writes the node files into a temporary
plugin directory and the CDI specs into ``/var/run/cdi``, where podman reads them;
containers get the files through ``--device <driver>/metadata=...``.

It runs only when asked: ``python -m pytest -m e2e tests/e2e`` (or with
``DRA_METADATA_E2E=1``). Anywhere else, and where podman, runc or mmdebstrap is
missing or the user is not root, every test is skipped with the reason. The images
are built once per session and removed at its end; each test removes its CDI specs.
To try a change to the tests without building again, give an image built before
(``scripts/build-image``) in ``DRA_METADATA_E2E_IMAGE``: it is used as it is, and kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import dra_metadata as dm
from tests.conftest import REPO

#: Set to 1 to run the suite without ``-m e2e``.
E2E_ENV = "DRA_METADATA_E2E"
#: An image built before, to use instead of building one (tests of the tests only).
IMAGE_ENV = "DRA_METADATA_E2E_IMAGE"
TOOLS = ("podman", "runc", "mmdebstrap")
#: Where podman 4.3 looks for CDI specs (besides /etc/cdi); it has no setting to add one.
CDI_DIR = "/var/run/cdi"
#: The host's Debian sources, handed to mmdebstrap (it reads stdin without a mirror).
APT_SOURCES = "/etc/apt/sources.list.d/debian.sources"
#: podman's settings for these machines: no raised rlimits, cgroupfs, runc.
CONTAINERS_CONF = """\
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
"""


def skip_reason(config: pytest.Config) -> str | None:
    """Why the suite cannot or should not run here, or None."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return (
            f"end-to-end tests need {', '.join(missing)} (apt-get install podman runc mmdebstrap)"
        )
    if os.geteuid() != 0:
        return f"end-to-end tests need root: podman reads CDI specs from {CDI_DIR}"
    asked = "e2e" in (config.getoption("markexpr") or "") or os.environ.get(E2E_ENV) == "1"
    if not asked:
        return (
            "end-to-end tests run only when asked: python -m pytest -m e2e tests/e2e "
            f"(or {E2E_ENV}=1)"
        )
    return None


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
def podman(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Podman]:
    """podman set up for these machines (CONTAINERS_CONF at this suite's file).

    Every end-to-end test needs it, so this is where the suite is skipped, with the
    reason, where it cannot or should not run: before any image is built.
    """
    reason = skip_reason(request.config)
    if reason is not None:
        pytest.skip(reason)
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
    mirror = [APT_SOURCES] if os.path.exists(APT_SOURCES) else []
    command = [
        "mmdebstrap", "--variant=minbase", "--include=python3,python3-venv",
        # No documentation, manual pages or translations: a smaller image, as slim ones do.
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--dpkgopt=path-exclude=/usr/share/info/*",
        "bookworm", str(rootfs), *mirror,
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
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


class Node:
    """The node side of one test: a driver's publisher, its prepared claims, their copies."""

    def __init__(self, tmp_path: Path, driver: str) -> None:
        self.pub = dm.MetadataPublisher(
            driver, plugin_data_dir=tmp_path / "plugins" / driver, cdi_dir=CDI_DIR
        )
        self.claims: list[dm.ClaimRef] = []
        self.prepared: list[tuple[dm.ClaimRef, str]] = []

    def prepare(self, claim: dm.ClaimRef, request: str, devices: list[dm.Device]) -> str:
        """Prepare as the driver does; returns the ``--device`` argument for podman."""
        self.claims.append(claim)
        self.prepared.append((claim, request))
        return f"--device={self.pub.prepare(claim, request, devices)}"

    def container_view(self, root: Path) -> Path:
        """Copy every prepared file to its container path under ``root``, as the mounts show it."""
        for claim, request in self.prepared:
            spec = json.loads(Path(self.pub.cdi_spec_path(claim, request)).read_text())
            (mount,) = spec["devices"][0]["containerEdits"]["mounts"]
            target = root / os.path.relpath(mount["containerPath"], dm.CONTAINER_DIR)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(mount["hostPath"], target)
        return root

    def cleanup(self) -> None:
        for claim in self.claims:
            self.pub.unprepare(claim)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    """A publisher for a driver of this test's own, CDI specs in /var/run/cdi (removed after)."""
    created = not os.path.isdir(CDI_DIR)
    node = Node(tmp_path, f"gpu-{uuid.uuid4().hex[:8]}.e2e.example.com")
    try:
        yield node
    finally:
        node.cleanup()
        if created:
            with contextlib.suppress(OSError):  # someone else's specs are there now
                os.rmdir(CDI_DIR)
