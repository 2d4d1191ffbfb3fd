"""``dra-metadata completion bash|zsh|fish``: each script sourced in its real shell, completing.

The scripts ask ``dra-metadata __complete`` what fits; ``complete()`` answers from
the parser (commands, options, choices) and from the root (claims, template
claims, requests, drivers). Each shell is run for real, with a ``dra-metadata``
on ``PATH`` that runs this checkout; a shell that is not installed skips, naming
the package to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dra_metadata._cli._completion import complete
from tests.conftest import REPO, SAMPLE_ROOT

ROOT = str(SAMPLE_ROOT)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["sh"], ["show"]),
        (["w"], ["watch", "wait"]),
        (["c"], ["completion"]),
        (["show", "--fo"], ["--format"]),
        (["show", "--format", ""], ["json", "go", "summary"]),
        (["wait", "--for", ""], ["exists", "network"]),
        (["completion", ""], ["bash", "fish", "zsh"]),
        (["show", "--root", ROOT, "--claim", ""], ["cpus", "nic", "train", "vfio-gpu"]),
        (["--root", ROOT, "get", "--template-claim", "g"], ["gpu"]),
        (["show", "--root", ROOT, "--claim", "nic", "--request", ""], ["eth"]),
        (
            ["show", "--root", ROOT, "--claim=nic", "--request", "eth", "--driver", ""],
            ["sriov.example.com"],
        ),
        (["show", "--root", ROOT, "--claim", "nope", "--request", ""], []),
        (["show", "--root", "/nonexistent", "--claim", ""], []),
        (["show", "--root", ""], []),  # a directory: the shell's own completion
    ],
)
def test_complete_answers_from_the_parser_and_the_root(
    words: list[str], expected: list[str]
) -> None:
    """Commands, options, choices, and the names mounted under --root."""
    assert complete(words) == expected


@pytest.fixture
def on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``dra-metadata`` on PATH runs this checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "dra-metadata"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m dra_metadata "$@"\n')
    wrapper.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp_path),
    }


def shell(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (apt-get install {name})")
    return found


def run(args: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        args, env=env, cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_commands_and_claims(on_path: dict[str, str]) -> None:
    """bash: COMPREPLY from the sourced script, for a command and for a claim name."""
    script = (
        "source <(dra-metadata completion bash)\n"
        "complete -p dra-metadata\n"
        "COMP_WORDS=(dra-metadata sh); COMP_CWORD=1; _dra_metadata; echo ${COMPREPLY[@]}\n"
        f"COMP_WORDS=(dra-metadata show --root {ROOT} --claim n); COMP_CWORD=5\n"
        "_dra_metadata; echo ${COMPREPLY[@]}\n"
    )
    out = run([shell("bash"), "-c", script], on_path)
    assert out[-2:] == ["show", "nic"]
    assert "_dra_metadata" in out


def test_zsh_completes_commands_and_requests(on_path: dict[str, str]) -> None:
    """zsh: the function compdef registers, run with compadd recording what it is given."""
    script = (
        "autoload -U compinit && compinit -u\n"
        "source <(dra-metadata completion zsh)\n"
        "print -r -- $_comps[dra-metadata]\n"
        'compadd() { shift; print -r -- "$@" }\n'
        "words=(dra-metadata wa); CURRENT=2; _dra_metadata\n"
        f"words=(dra-metadata show --root {ROOT} --claim nic --request ''); CURRENT=8\n"
        "_dra_metadata\n"
    )
    out = run([shell("zsh"), "-fc", script], on_path)
    assert out == ["_dra_metadata", "watch", "wait", "eth"]


def test_fish_completes_commands_and_drivers(on_path: dict[str, str]) -> None:
    """fish: ``complete -C`` asks the sourced completion, as fish does at a Tab."""
    script = (
        "dra-metadata completion fish | source\n"
        "complete -C'dra-metadata comp'\n"
        f"complete -C'dra-metadata show --root {ROOT} --claim nic --request eth --driver '\n"
    )
    out = run([shell("fish"), "--no-config", "-c", script], on_path)
    assert out == ["completion", "sriov.example.com"]


def test_completion_refuses_an_unknown_shell(on_path: dict[str, str]) -> None:
    """An unknown shell: usage error 64, naming the choices."""
    done = subprocess.run(
        ["dra-metadata", "completion", "tcsh"],
        env=on_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 64
    assert "choose from bash, fish, zsh" in done.stderr


def test_names_that_are_not_utf8_go_back_as_their_bytes(tmp_path: Path) -> None:
    """A claim directory named with bytes that are not UTF-8: offered as those bytes, exit 0.

    One with a line break cannot be one line of the answer: it is left out.
    """
    claims = tmp_path / "resourceclaims"
    claims.mkdir()
    os.mkdir(os.path.join(os.fsencode(claims), b"gpu-\xff"))
    (claims / "nic").mkdir()
    (claims / "bad\nname").mkdir()
    asked = ["__complete", "show", "--root", str(tmp_path), "--claim", ""]
    done = subprocess.run(
        [sys.executable, "-m", "dra_metadata", *asked],
        cwd=REPO,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    assert done.stdout == b"gpu-\xff\nnic\n"
