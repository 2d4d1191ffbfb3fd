"""The dra-metadata command, run for real in a subprocess."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dra_metadata as dm
from tests.conftest import REPO, run_cli, run_cli_bytes


def test_show_prints_the_merged_request_once_as_json(sample_root: Path) -> None:
    """show prints one JSON document: the merged object, with the claim's identity in it."""
    done = run_cli("show", "--root", str(sample_root), "--claim", "train", "--request", "accel")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    md = dm.read_resource_claim("train", "accel", root=sample_root)
    expected = md.to_dict()
    assert shown["metadata"]["uid"] == md.claim_uid
    assert shown.pop("generations") == md.generations
    assert {**shown, "metadata": {}} == expected
    go = run_cli("show", "--root", str(sample_root), "--claim", "train", "--request", "accel",
                 "--format", "go")  # fmt: skip
    assert json.loads(go.stdout) == expected  # Go's merged object, exactly
    assert [d["driver"] for d in shown["requests"][0]["devices"]] == [
        "gpu.example.com",
        "rdma.example.com",
    ]


def test_show_summary_lists_devices_and_files(sample_root: Path) -> None:
    """The summary names every file, device and attribute, one per line."""
    done = run_cli(
        "show",
        "--template-claim",
        "gpu",
        "--request",
        "gpu",
        "--format",
        "summary",
        env={dm.ROOT_ENV: str(sample_root)},
    )
    assert done.returncode == 0, done.stderr
    assert "gpu.example.com worker-1/gpu-1" in done.stdout
    assert "uuid = GPU-1c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22" in done.stdout
    assert "driverVersion = 570.124.6" in done.stdout
    assert "gpu.example.com-metadata.json (claim ml-team/trainer-0-gpu-x7k2p" in done.stdout


def test_show_missing_request_exits_66_with_one_line(tmp_path: Path) -> None:
    """A missing request directory is exit 66 (not found) and one line naming it and the fix."""
    done = run_cli("show", "--root", str(tmp_path), "--claim", "c", "--request", "r")
    assert done.returncode == 66
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        f"dra-metadata: no metadata files found in {tmp_path}/resourceclaims/c/r: "
    )
    assert f"nothing is mounted under {tmp_path}; " in line
    assert "resources.claims" in line


def test_unsafe_names_and_bad_options_are_usage_errors(tmp_path: Path) -> None:
    """An unsafe name or a bad option exits 64."""
    assert (
        run_cli("show", "--root", str(tmp_path), "--claim", "..", "--request", "r").returncode == 64
    )
    assert run_cli("get", "--claim", "c").returncode == 64  # no attribute NAME
    assert run_cli("frobnicate").returncode == 64


def test_validate_exit_codes(tmp_path: Path, sample_root: Path) -> None:
    """validate exits 0 when valid, 1 when invalid, 65 undecodable, 66 missing: the worst wins."""
    good = sample_root / "resourceclaims/nic/eth/sriov.example.com-metadata.json"
    bad = tmp_path / "bad-metadata.json"
    bad.write_bytes(dm.encode(dm.DeviceMetadata(pod_claim_name="BAD")))
    broken = tmp_path / "broken-metadata.json"
    broken.write_bytes(b'{"kind":"DeviceMeta')
    ok = run_cli("validate", str(good))
    assert ok.returncode == 0, ok.stderr
    assert "valid (metadata.resource.k8s.io/v1beta1)" in ok.stdout
    invalid = run_cli("validate", str(good), str(bad))
    assert invalid.returncode == 1
    assert (
        f'{bad}: podClaimName: Invalid value: "BAD": a lowercase RFC 1123 label' in invalid.stdout
    )
    undecodable = run_cli("validate", str(bad), str(broken))
    assert undecodable.returncode == 65
    assert f"{broken}: read metadata object from stream: unexpected EOF" in undecodable.stderr
    missing = run_cli("validate", str(bad), str(broken), str(tmp_path / "missing.json"))
    assert missing.returncode == 66
    assert "no such file or directory" in missing.stderr


def test_console_script_is_installed(sample_root: Path) -> None:
    """The installed dra-metadata entry point runs the same CLI."""
    exe = shutil.which("dra-metadata")
    if exe is None:
        pytest.skip("dra-metadata is not on PATH (package not installed)")
    done = subprocess.run(
        [exe, "show", "--root", str(sample_root), "--claim", "nic", "--request", "eth"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (
        json.loads(done.stdout)["requests"][0]["devices"][0]["networkData"]["interfaceName"]
        == "net1"
    )


def test_help_documents_the_exit_codes() -> None:
    """--help of every command names the exit codes."""
    for args in ([], ["show"], ["validate"]):
        done = run_cli(*args, "--help")
        assert done.returncode == 0
        assert (
            "exit codes: 0 success, 1 condition false or invalid, 64 usage error,\n"
            "65 not decodable, 66 not found, 69 cannot happen here (wait), 71 out of memory,\n"
            "74 output not written, 130 interrupted." in done.stdout
        )


def _large_tree(root: Path, claims: int) -> None:
    for i in range(claims):
        md = dm.DeviceMetadata(
            requests=(
                dm.DeviceMetadataRequest(
                    "gpu",
                    (
                        dm.Device(
                            "gpu.example.com",
                            "pool",
                            f"gpu-{i}",
                            {"uuid": dm.DeviceAttribute(string=f"GPU-{i:032x}")},
                        ),
                    ),
                ),
            )
        )
        directory = root / "resourceclaims" / f"claim-{i}" / "gpu"
        directory.mkdir(parents=True)
        (directory / "gpu.example.com-metadata.json").write_bytes(dm.encode(md))


@pytest.mark.parametrize("output", ["shell", "dotenv", "json"])
def test_env_streamed_in_blocks_prints_what_the_library_renders(
    tmp_path: Path, output: str
) -> None:
    """env over 600 claims (several 64 KiB blocks) prints exactly render(env_vars()), to the end."""
    _large_tree(tmp_path, 600)
    done = run_cli_bytes("env", "--root", str(tmp_path), "--format", output)
    from dra_metadata._envtext import render

    expected, _ = render(dm.env_vars(root=tmp_path), output)  # type: ignore[arg-type]
    assert len(expected) > 3 * 65536
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == expected


def test_one_shot_commands_end_without_teardown_and_others_do_not(sample_root: Path) -> None:
    """From the console entry, a one-shot command skips atexit (fast exit); --version does not."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('teardown ran\\n'))\n"
        "from dra_metadata._cli import console_main\n"
        "sys.argv = ['dra-metadata', *sys.argv[1:]]\n"
        "sys.exit(console_main())\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    one_shot = subprocess.run(
        [sys.executable, "-c", code, "ls", "--root", str(sample_root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert one_shot.returncode == 0
    assert one_shot.stdout.startswith("KIND ")
    assert "teardown ran" not in one_shot.stderr
    missing = subprocess.run(
        [sys.executable, "-c", code, "ls", "--root", str(sample_root / "nope")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert missing.returncode == 66
    assert missing.stderr.startswith("dra-metadata: ")
    other = subprocess.run(
        [sys.executable, "-c", code, "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert other.returncode == 0
    assert other.stderr == "teardown ran\n"


def test_no_arguments_lists_every_command_on_one_line_and_exits_0() -> None:
    """A bare ``dra-metadata``: the usage, each command of the parser once, one line each."""
    from dra_metadata._cli import build_parser

    done = run_cli()
    assert done.returncode == 0
    assert done.stderr == ""
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("usage: dra-metadata")
    listed = lines[lines.index("commands:") + 1 :]
    listed = listed[: listed.index("")]
    assert [line.split()[0] for line in listed] == list(commands.choices)
    for line, choice in zip(listed, commands._choices_actions, strict=True):
        assert line.split(None, 1)[1] == choice.help
        assert len(line) <= 100


@pytest.mark.parametrize(
    ("root", "meant"),
    [
        ("examples", "examples/dra-device-attributes"),
        ("examples/dra-device-attributes/resourceclaims", "examples/dra-device-attributes"),
    ],
    ids=["one-level-too-high", "one-level-too-low"],
)
def test_a_root_one_level_off_says_did_you_mean(root: str, meant: str) -> None:
    """--root one level above (or below) a metadata root: exit 66, naming the root meant."""
    for command in (["env"], ["ls"], ["show", "--claim", "nic", "--request", "eth"]):
        done = run_cli(*command, "--root", root)
        assert done.returncode == 66
        assert f"nothing is mounted under {root}; did you mean --root {meant}" in done.stderr


def test_the_synopsis_in_docs_cli_md_is_the_parsers() -> None:
    """docs/cli.md's synopsis: one line per command, each naming every option it takes."""
    import re

    from dra_metadata._cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    block = text[text.index("```text\n") + len("```text\n") :]
    block = block[: block.index("```")]
    lines = {line.split()[1]: line for line in block.splitlines()}
    assert list(lines) == list(commands.choices)
    for name, line in lines.items():
        shown = set(re.findall(r"(?<![\w-])--?[a-z0-9][a-z-]*", line))
        actions = commands.choices[name]._actions
        # A shorthand (``--json`` for ``--format json``) sets what a shown option sets.
        shown_dests = {a.dest for a in actions if shown & set(a.option_strings)}
        for action in actions:
            if action.option_strings and "-h" not in action.option_strings:
                documented = shown & set(action.option_strings) or action.dest in shown_dests
                assert documented, f"{name}: {action.option_strings}"
            elif not action.option_strings and action.metavar:  # NAME, FILE...
                assert str(action.metavar) in line, f"{name}: {action.metavar}"
        known = {o for a in commands.choices[name]._actions for o in a.option_strings}
        assert shown <= known, f"{name}: {sorted(shown - known)}"
