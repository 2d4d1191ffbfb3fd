"""The end-to-end suite runs only when asked and possible, and says why it does not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e.conftest import E2E_ENV, IMAGE_ENV, TOOLS


def run_suite(tmp_path: Path, path: str, *args: str) -> str:
    """Run pytest on the end-to-end tests with PATH as given; returns what it printed."""
    env = {k: v for k, v in os.environ.items() if k not in (E2E_ENV, IMAGE_ENV)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", *args,
         "tests/e2e/test_container.py"],
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
