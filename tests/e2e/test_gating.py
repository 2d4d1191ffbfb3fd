"""The end-to-end suites run only when asked and possible, and say why they do not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e.conftest import (
    CLUSTER_ENV,
    CLUSTER_TOOLS,
    CRI_ENV,
    CRI_TOOLS,
    E2E_ENV,
    IMAGE_ENV,
    TOOLS,
)

#: How many tests tests/e2e/test_cluster.py has.
CLUSTER_TESTS = 7


def run_suite(
    tmp_path: Path, path: str, *args: str, tests: str = "tests/e2e/test_container.py"
) -> str:
    """Run pytest on end-to-end tests with PATH as given; returns what it printed.

    ``CI`` is dropped too: under ``CI=true`` a suite asked for that cannot run fails
    instead of skipping (tested on its own below).
    """
    dropped = (E2E_ENV, CRI_ENV, CLUSTER_ENV, IMAGE_ENV, "CI")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", *args, tests],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**env, "PATH": path},
        timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_without_podman_every_test_is_skipped_saying_what_to_install(tmp_path: Path) -> None:
    """With no podman, runc or mmdebstrap on PATH, even -m e2e skips, naming the packages."""
    empty = tmp_path / "empty"
    empty.mkdir()
    out = run_suite(tmp_path, str(empty), "-m", "e2e")
    assert "end-to-end tests need podman, runc, mmdebstrap (apt-get install" in out
    assert " passed" not in out
    assert "6 skipped" in out


@pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in TOOLS) or os.geteuid() != 0,
    reason="podman, runc, mmdebstrap and root are there only where the suite can run",
)
def test_where_it_could_run_it_still_runs_only_when_asked(tmp_path: Path) -> None:
    """A plain pytest run skips the suite at once and says how to ask for it."""
    out = run_suite(tmp_path, os.environ["PATH"])
    assert "end-to-end tests run only when asked: python -m pytest -m e2e tests/e2e" in out
    assert "6 skipped" in out


def test_without_go_or_podman_the_cri_suite_is_skipped_saying_what_to_install(
    tmp_path: Path,
) -> None:
    """With none of the tools on PATH, even -m cri skips every CRI test, naming what to install."""
    empty = tmp_path / "empty"
    empty.mkdir()
    out = run_suite(tmp_path, str(empty), "-m", "cri", tests="tests/e2e/test_cri.py")
    assert "CRI tests need podman, runc, mmdebstrap, go (apt-get install" in out
    assert " passed" not in out
    assert "9 skipped" in out


@pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in CRI_TOOLS) or os.geteuid() != 0,
    reason="podman, runc, mmdebstrap, go and root are there only where the CRI suite can run",
)
def test_where_the_cri_suite_could_run_it_still_runs_only_when_asked(tmp_path: Path) -> None:
    """A plain pytest run skips the CRI suite at once, builds nothing, and says how to ask."""
    out = run_suite(tmp_path, os.environ["PATH"], tests="tests/e2e/test_cri.py")
    assert "CRI tests run only when asked: python -m pytest -m cri tests/e2e" in out
    assert "9 skipped" in out
    assert "CRI suite:" not in out  # no containerd was built or started


def test_without_the_tools_the_cluster_suite_is_skipped_saying_what_to_install(
    tmp_path: Path,
) -> None:
    """With none of the tools on PATH, even -m cluster skips every test, naming what to install."""
    empty = tmp_path / "empty"
    empty.mkdir()
    out = run_suite(tmp_path, str(empty), "-m", "cluster", tests="tests/e2e/test_cluster.py")
    assert "cluster tests need podman, runc, mmdebstrap, go, openssl (apt-get install" in out
    assert " passed" not in out
    assert f"{CLUSTER_TESTS} skipped" in out


def test_under_ci_the_cluster_suite_fails_where_it_cannot_run(tmp_path: Path) -> None:
    """Asked for under CI=true without the tools, the cluster suite fails, saying why."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != CLUSTER_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "cluster", "-x",
         "tests/e2e/test_cluster.py"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**env, "PATH": str(empty), "CI": "true"},
        timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode != 0, done.stdout
    assert "CI must run the cluster suite: cluster tests need podman" in done.stdout


@pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in CLUSTER_TOOLS) or os.geteuid() != 0,
    reason="the tools and root are there only where the cluster suite can run",
)
def test_where_the_cluster_suite_could_run_it_still_runs_only_when_asked(tmp_path: Path) -> None:
    """A plain pytest run skips the cluster suite at once, builds and starts nothing."""
    out = run_suite(tmp_path, os.environ["PATH"], tests="tests/e2e/test_cluster.py")
    assert "cluster tests run only when asked: python -m pytest -m cluster tests/e2e" in out
    assert f"{CLUSTER_TESTS} skipped" in out
    assert "cluster suite:" not in out
