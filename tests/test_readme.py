"""The README's code runs and its shown output is what the commands print."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README) if lang == language]


def test_quickstart_is_two_commands_and_ci_runs_the_second() -> None:
    """Quickstart holds exactly two commands; .ci/run runs the second one verbatim."""
    quickstart = README.split("## Quickstart", 1)[1].split("##", 1)[0]
    commands = BLOCK.findall(quickstart)[0][1].strip().splitlines()
    assert len(commands) == 2
    assert commands[0].startswith("pip install . && dra-metadata show ")
    assert commands[1] in (REPO / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("code", blocks("python"), ids=lambda c: c.splitlines()[0][:40])
def test_python_blocks_run(code: str) -> None:
    """Every python block of the README runs without error from the checkout."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr


def console_examples() -> list[tuple[str, str]]:
    found = []
    for body in blocks("console"):
        lines = body.splitlines()
        if lines and lines[0].startswith("$ "):
            found.append((lines[0][2:], "\n".join(lines[1:]) + "\n"))
    return found


@pytest.mark.parametrize(("command", "output"), console_examples(), ids=lambda v: str(v)[:40])
def test_console_examples_print_what_is_shown(command: str, output: str, tmp_path: Path) -> None:
    """Each `$ command` shown with its output prints exactly that output."""
    words = shlex.split(command)
    env = dict(os.environ)
    while words and "=" in words[0]:
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    if words[0] == "dra-metadata":
        words = [sys.executable, "-m", "dra_metadata", *words[1:]]
    elif words[0] == "python":
        words[0] = sys.executable
    cwd = REPO
    if "bad-metadata.json" in words:
        import dra_metadata as dm

        (tmp_path / "bad-metadata.json").write_bytes(
            dm.encode(dm.DeviceMetadata(pod_claim_name="BAD"))
        )
        cwd = tmp_path
        env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(words, capture_output=True, text=True, cwd=cwd, env=env, timeout=60)
    assert done.stdout == output, done.stderr
