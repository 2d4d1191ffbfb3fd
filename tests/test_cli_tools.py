"""The init-container toolkit: ls, get and env, run for real in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dra_metadata as dm
from dra_metadata._claims import read_request
from dra_metadata._cli._ls import row, table
from dra_metadata._env import collect
from dra_metadata._envtext import render
from dra_metadata._standard import answer
from dra_metadata.testing import MetadataTree
from tests.conftest import REPO, SAMPLE_ROOT, run_cli_bytes
from tests.exploration import examples

#: The columns of `ls`.
HEADER = ("KIND", "CLAIM", "REQUEST", "DRIVER", "VERSION", "GENERATION", "DEVICES", "STATUS")

A = dm.DeviceAttribute


def errors(done: subprocess.CompletedProcess[bytes]) -> list[str]:
    """The stderr lines of a run (each must be one ``dra-metadata: `` line, no traceback)."""
    lines = done.stderr.decode("utf-8", "replace").splitlines()
    assert not any("Traceback" in line for line in lines), lines
    return lines


SAMPLE_TABLE = """\
KIND      CLAIM      REQUEST  DRIVER                VERSION   GENERATION  DEVICES  STATUS
claim     cpus       cpus     dra.cpu               v1beta1            1        4  ok
claim     nic        eth      sriov.example.com     v1beta1            2        1  ok
claim     train      accel    gpu.example.com       v1beta1            1        1  ok
claim     train      accel    rdma.example.com      v1beta1            1        1  ok
claim     vfio-gpu   gpu      vfio.gpu.example.com  v1alpha1           1        1  ok
template  gpu        gpu      gpu.example.com       v1beta1            1        2  ok
template  inference  gpu      gpu.example.com       v1beta1            1        1  ok
"""


# --------------------------------------------------------------------------- #
# ls
# --------------------------------------------------------------------------- #


def test_ls_lists_every_sample_file_sorted_and_aligned() -> None:
    """One row per file: kind, claim, request, driver, version, generation, devices, status."""
    done = run_cli_bytes("ls", env={dm.ROOT_ENV: str(SAMPLE_ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == SAMPLE_TABLE


def test_ls_json_is_the_same_rows_with_more_detail() -> None:
    """--json gives one object per file, in the table's order, with the full apiVersion."""
    done = run_cli_bytes("ls", "--root", str(SAMPLE_ROOT), "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [(r["kind"], r["claim"], r["request"], r["driver"]) for r in rows] == [
        tuple(line.split()[:4]) for line in SAMPLE_TABLE.splitlines()[1:]
    ]
    inference = rows[-1]
    assert inference["apiVersion"] == dm.V1BETA1
    assert inference["requests"] == ["gpu/high-memory"]
    assert inference["podClaimName"] == "inference"
    assert inference["claimName"] == "inference-0-gpu-q9w8e"
    assert inference["path"] == str(
        SAMPLE_ROOT / "resourceclaimtemplates/inference/gpu/gpu.example.com-metadata.json"
    )
    assert inference["status"] == "ok"
    assert inference["error"] is None


def test_ls_narrows_with_the_selection_options() -> None:
    """--claim, --template-claim, --request and --driver narrow the listing."""
    root = ("--root", str(SAMPLE_ROOT))

    def drivers(*args: str) -> list[str]:
        done = run_cli_bytes("ls", *root, "--json", *args)
        assert done.returncode == 0, done.stderr
        return [row["driver"] for row in json.loads(done.stdout)]

    assert drivers("--claim", "train") == ["gpu.example.com", "rdma.example.com"]
    assert drivers("--template-claim", "gpu") == ["gpu.example.com"]
    assert drivers("--request", "gpu") == [
        "vfio.gpu.example.com",
        "gpu.example.com",
        "gpu.example.com",
    ]
    assert drivers("--claim", "train", "--driver", "rdma.example.com") == ["rdma.example.com"]
    missing = run_cli_bytes("ls", *root, "--claim", "nope")
    assert missing.returncode == 66
    (line,) = errors(missing)
    assert line.startswith(
        f"dra-metadata: no metadata files found for claim 'nope' under {SAMPLE_ROOT}: "
        "there is no claim 'nope'; claims here: "
    )


def test_ls_marks_files_that_do_not_decode_and_exits_65(dra_metadata_tree: MetadataTree) -> None:
    """A broken file keeps its row with status 'undecodable'; the rest is listed; exit 65."""
    tree = dra_metadata_tree
    good = tree.claim("c", namespace="ns", uid="uid-1", generation=3).request("r")
    good.add_driver("good.example.com")
    tree.write()
    # Hand-damaged bytes and a file outside the layout: the kit writes neither.
    broken = good.path().parent / "bad.example.com-metadata.json"
    broken.write_bytes(b'{"kind":"DeviceMeta')
    (good.path().parent / "notes.txt").write_text("not metadata")
    done = run_cli_bytes("ls", "--root", str(tree.root))
    assert done.returncode == 65
    assert done.stdout.decode().splitlines() == [
        "KIND   CLAIM  REQUEST  DRIVER            VERSION  GENERATION  DEVICES  STATUS",
        "claim  c      r        bad.example.com   -                 -        -  undecodable",
        "claim  c      r        good.example.com  v1beta1           3        0  ok",
    ]
    assert errors(done) == [
        f"dra-metadata: {broken}: read metadata object from stream: unexpected EOF"
    ]
    rows = json.loads(run_cli_bytes("ls", "--root", str(tree.root), "--json").stdout)
    assert rows[0]["status"] == "undecodable"
    assert rows[0]["error"].endswith("unexpected EOF")


def test_ls_of_a_missing_root_is_66_and_of_an_empty_root_says_nothing_is_mounted(
    tmp_path: Path,
) -> None:
    """No root: the header, exit 66 and one line. No metadata: the header, a note, exit 0."""
    missing = run_cli_bytes("ls", "--root", str(tmp_path / "absent"))
    assert missing.returncode == 66
    assert missing.stdout.decode().split() == list(HEADER)
    (line,) = errors(missing)
    assert f"the metadata root {tmp_path / 'absent'} does not exist" in line
    assert "resources.claims" in line
    (tmp_path / "resourceclaims" / "c" / "r").mkdir(parents=True)
    empty = run_cli_bytes("ls", "--root", str(tmp_path))
    assert empty.returncode == 66  # as every command says of an empty root
    assert empty.stdout.decode().split() == list(HEADER)
    (note,) = errors(empty)
    assert note.startswith(f"dra-metadata: nothing is mounted under {tmp_path}; ")
    assert json.loads(run_cli_bytes("ls", "--root", str(tmp_path), "--json").stdout) == []


def test_symlinks_below_the_root_are_never_followed(
    dra_metadata_tree: MetadataTree, tmp_path: Path
) -> None:
    """Links to metadata outside the root, as claim, request or file, are reported, not read."""
    outside = MetadataTree(tmp_path / "outside")
    secret = outside.claim("x").request("r").device("evil.example.com", "p", "secret-device")
    outside.write()
    tree = dra_metadata_tree
    tree.claim("real").request("r").add_driver("gpu.example.com")
    tree.write()
    root = tree.root
    # Symbolic links are what this test is about; the kit never makes them.
    (root / "resourceclaims/claim-link").symlink_to(secret.path.parent.parent)
    (root / "resourceclaims/real/request-link").symlink_to(secret.path.parent)
    (root / "resourceclaims/real/r/file-link-metadata.json").symlink_to(secret.path)
    (root / "resourceclaimtemplates").symlink_to(outside.root / "resourceclaims")
    done = run_cli_bytes("ls", "--root", str(root), "--json")
    assert done.returncode == 66
    rows = json.loads(done.stdout)
    assert [(r["kind"], r["claim"], r["request"], r["driver"], r["status"]) for r in rows] == [
        ("claim", "claim-link", "", "", "symlink"),
        ("claim", "real", "r", "file-link", "symlink"),
        ("claim", "real", "r", "gpu.example.com", "ok"),
        ("claim", "real", "request-link", "", "symlink"),
        ("template", "", "", "", "symlink"),
    ]
    assert len(errors(done)) == 4
    assert all(
        "is a symbolic link; links below the metadata root are not followed" in line
        for line in errors(done)
    )
    env = run_cli_bytes("env", "--root", str(root))
    assert env.returncode == 66
    assert b"secret-device" not in env.stdout
    assert b"evil" not in env.stdout
    assert b"DRA_REAL_R_" not in env.stdout  # its request holds a link: left out whole
    got = run_cli_bytes("get", "--root", str(root), "--claim", "real", "--request", "r", "name")
    assert got.returncode == 66
    assert b"secret-device" not in got.stdout
    # The root itself may be a link: it is where the user pointed.
    (tmp_path / "root-link").symlink_to(root)
    listed = run_cli_bytes(
        "ls", "--root", str(tmp_path / "root-link"), "--claim", "real", "--request", "r"
    )
    assert b"gpu.example.com" in listed.stdout


def test_special_files_and_odd_names_give_rows_not_hangs_or_tracebacks(
    dra_metadata_tree: MetadataTree,
) -> None:
    """A FIFO, a too-large file and a name that is not UTF-8 are rows with a status."""
    # A FIFO, an oversized file and a claim directory whose name is not UTF-8 are what
    # this test is about; the kit makes none of them, so they are made by hand.
    root = dra_metadata_tree.root
    request_dir = root / "resourceclaims" / "c" / "r"
    request_dir.mkdir(parents=True)
    os.mkfifo(request_dir / "fifo.example.com-metadata.json")
    with open(request_dir / "huge.example.com-metadata.json", "wb") as huge:
        huge.truncate(dm.DEFAULT_MAX_SIZE + 1)  # sparse: costs no disk
    odd = os.fsencode(root / "resourceclaims") + b"/caf\xe9\nx/r"
    os.makedirs(odd)
    # The odd directory holds a good file: the kit's bytes for an empty request.
    good = dra_metadata_tree.claim("c").request("r").add_driver("gpu.example.com")
    with open(odd + b"/gpu.example.com-metadata.json", "wb") as out:
        out.write(good.encode())
    done = run_cli_bytes("ls", "--root", str(root), timeout=30)
    assert done.returncode == 66  # the worst: the FIFO cannot be read (65 < 66)
    lines = done.stdout.decode().splitlines()
    assert lines[1].split()[:4] == ["claim", "c", "r", "fifo.example.com"]
    assert lines[1].endswith("unreadable")
    assert lines[2].endswith("too-large")
    assert lines[3].split()[1] == "caf\\xe9\\nx"
    assert lines[3].endswith("ok")
    assert any("not a regular file" in line for line in errors(done))


# --------------------------------------------------------------------------- #
# get
# --------------------------------------------------------------------------- #


def get(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``dra-metadata get`` against the sample tree."""
    return run_cli_bytes("get", "--root", str(SAMPLE_ROOT), *args)


def test_get_prints_one_value_per_device_in_order() -> None:
    """get prints the attribute of every device, one per line, in merged order."""
    done = get("--template-claim", "gpu", "--request", "gpu", "uuid")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        b"GPU-8f6c2a4e-0b1d-4c55-9a1e-3d2b7c9e0f11\nGPU-1c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22\n"
    )
    index = get("--template-claim", "gpu", "--request", "gpu", "gpu.example.com/index")
    assert index.stdout == b"0\n1\n"


def test_get_resolves_names_as_the_library_does() -> None:
    """Qualified or not, standard attributes, lists comma-joined, network fields."""
    nic = ("--claim", "nic", "--request", "eth")
    assert get(*nic, "resource.kubernetes.io/pciBusID").stdout == b"0000:5e:00.3\n"
    assert get(*nic, "resource.kubernetes.io/numaNode").stdout == b"1\n"  # the physical node
    assert get(*nic, "resource.kubernetes.io/numaNodes").stdout == b"1,0\n"
    assert get(*nic, "sriov.example.com/vfIndex").stdout == b"3\n"
    assert get(*nic, "interfaceName").stdout == b"net1\n"
    assert get(*nic, "ips").stdout == b"10.20.30.41/24,fd00:10:20::29/64\n"
    assert get(*nic, "networkData.hardwareAddress").stdout == b"52:54:00:ab:cd:03\n"
    cpus = get("--claim", "cpus", "--request", "cpus", "smtEnabled")
    assert cpus.stdout == b"true\ntrue\ntrue\ntrue\n"
    version = get("--template-claim", "inference", "--request", "gpu/high-memory", "memory")
    assert version.stdout == b"141Gi\n"


def test_get_json_and_nul_outputs_are_exact() -> None:
    """--json gives typed values; -0 ends each value with a NUL."""
    typed = get("--claim", "nic", "--request", "eth", "--json", "resource.kubernetes.io/numaNodes")
    assert json.loads(typed.stdout) == [[1, 0]]
    typed = get("--claim", "nic", "--request", "eth", "--json", "numaNode")
    assert json.loads(typed.stdout) == [1]
    flags = get("--claim", "cpus", "--request", "cpus", "--json", "smtEnabled")
    assert json.loads(flags.stdout) == [True, True, True, True]
    nul = get("--template-claim", "gpu", "--request", "gpu", "-0", "model")
    assert nul.stdout == b"H100-SXM5-80GB\0H100-SXM5-80GB\0"


def test_get_an_attribute_some_device_lacks_is_1_with_the_reason() -> None:
    """Absent on any device: nothing printed, exit 1, one line naming the first such device."""
    done = get("--claim", "train", "--request", "accel", "uuid")
    assert done.returncode == 1
    assert done.stdout == b""
    assert errors(done) == [
        "dra-metadata: 'uuid' is absent on 1 of 2 devices of claim 'train' request 'accel' "
        "(first: rdma.example.com/worker-2/mlx5-0)"
    ]
    narrowed = get("--claim", "train", "--request", "accel", "--driver", "gpu.example.com", "uuid")
    assert narrowed.stdout == b"GPU-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d\n"
    nowhere = get("--template-claim", "gpu", "--request", "gpu", "interfaceName")
    assert nowhere.returncode == 1
    assert "absent on 2 of 2 devices" in errors(nowhere)[0]


def test_get_exit_codes_for_missing_broken_empty_and_unsafe(
    dra_metadata_tree: MetadataTree,
) -> None:
    """66 not found, 65 undecodable, 1 no devices, 64 unsafe name or bad usage."""
    tree = dra_metadata_tree
    tree.claim("empty").request("r").add_driver("d.example.com")
    tree.write()
    # Hand-damaged bytes: the kit writes only whole, valid streams.
    broken = tree.root / "resourceclaims/broken/r/d.example.com-metadata.json"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"[]")
    base = ("get", "--root", str(tree.root))
    missing = run_cli_bytes(*base, "--claim", "nope", "--request", "r", "uuid")
    assert missing.returncode == 66
    (line,) = errors(missing)
    assert line.startswith(
        f"dra-metadata: no metadata files found in {tree.root}/resourceclaims/nope/r: "
        "there is no claim 'nope'; claims here: "
    )
    assert run_cli_bytes(*base, "--claim", "broken", "--request", "r", "uuid").returncode == 65
    empty = run_cli_bytes(*base, "--claim", "empty", "--request", "r", "uuid")
    assert empty.returncode == 1
    assert errors(empty) == ["dra-metadata: claim 'empty' request 'r' has no devices"]
    assert run_cli_bytes(*base, "--claim", "..", "--request", "r", "uuid").returncode == 64
    assert run_cli_bytes(*base, "--claim", "c", "--request", "a/b/c", "uuid").returncode == 64
    assert run_cli_bytes(*base, "--claim", "c").returncode == 64  # no attribute NAME
    pattern = run_cli_bytes(*base, "--claim", "c", "--request", "*", "uuid")
    assert pattern.returncode == 64  # no patterns
    json_and_nul = run_cli_bytes(*base, "--claim", "c", "--request", "r", "--json", "-0", "x")
    assert json_and_nul.returncode == 64


# --------------------------------------------------------------------------- #
# env
# --------------------------------------------------------------------------- #


def test_env_prints_the_documented_variables_for_the_sample_tree() -> None:
    """The shell output of the sample tree: every request, in order, as env_vars() says."""
    done = run_cli_bytes("env", env={dm.ROOT_ENV: str(SAMPLE_ROOT)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    expected = dm.env_vars(root=SAMPLE_ROOT)
    assert [line.split("=", 1)[0] for line in lines] == [f"export {n}" for n in expected]
    assert "export DRA_GPU_GPU_COUNT=2" in lines
    assert (
        "export DRA_GPU_GPU_UUID="
        "GPU-8f6c2a4e-0b1d-4c55-9a1e-3d2b7c9e0f11,GPU-1c9e7b3a-5d2f-4e8a-b6c4-7a0e9d3f5b22"
    ) in lines
    assert "export DRA_VFIO_GPU_GPU_PRODUCT_NAME='NVIDIA A100-PCIE-40GB'" in lines
    assert "export DRA_NIC_ETH_IPS=10.20.30.41/24,fd00:10:20::29/64" in lines


def test_env_formats_carry_the_same_variables() -> None:
    """dotenv and json hold the same names and values as the shell output."""
    root = ("--root", str(SAMPLE_ROOT), "--claim", "vfio-gpu")
    expected = dm.env_vars(root=SAMPLE_ROOT, claim="vfio-gpu")
    as_json = run_cli_bytes("env", *root, "--format", "json")
    assert json.loads(as_json.stdout) == expected
    assert list(json.loads(as_json.stdout)) == list(expected)
    dotenv = run_cli_bytes("env", *root, "--format", "dotenv").stdout.decode().splitlines()
    assert dotenv[0] == "DRA_VFIO_GPU_GPU_COUNT=1"
    assert 'DRA_VFIO_GPU_GPU_PRODUCT_NAME="NVIDIA A100-PCIE-40GB"' in dotenv
    assert len(dotenv) == len(expected)


def test_env_selects_and_prefixes() -> None:
    """--claim, --template-claim, --request and --prefix choose what and how it is named."""

    def names(*args: str) -> set[str]:
        done = run_cli_bytes("env", "--root", str(SAMPLE_ROOT), "--format", "json", *args)
        assert done.returncode == 0, done.stderr
        return {name.split("_")[1] for name in json.loads(done.stdout)}

    assert names("--template-claim", "gpu") == {"GPU"}
    assert names("--request", "gpu") == {"VFIO", "GPU", "INFERENCE"}
    assert names("--claim", "nic", "--prefix", "X_") == {"NIC"}
    assert run_cli_bytes("env", "--root", str(SAMPLE_ROOT), "--prefix", "1X").returncode == 64


def test_env_exit_codes_for_missing_empty_and_broken(
    dra_metadata_tree: MetadataTree,
) -> None:
    """Missing root or selection 66; empty root 66, said on stderr only; one broken request 65."""
    tree = dra_metadata_tree
    assert run_cli_bytes("env", "--root", str(tree.root / "absent")).returncode == 66
    assert run_cli_bytes("env", "--root", str(SAMPLE_ROOT), "--claim", "nope").returncode == 66
    (tree.root / "resourceclaims").mkdir(parents=True)
    empty = run_cli_bytes("env", "--root", str(tree.root))
    assert (empty.returncode, empty.stdout) == (66, b"")  # stdout stays safe to source
    assert empty.stderr.decode().startswith(f"dra-metadata: nothing is mounted under {tree.root}; ")
    for claim in ("a", "b"):
        tree.claim(claim).request("r").device("d.example.com", "p", "dev-0", uuid="u")
    tree.write()
    # Hand-damaged bytes: the kit writes only whole, valid streams.
    broken = tree.root / "resourceclaims/b/r/e.example.com-metadata.json"
    broken.write_bytes(b"{}")
    done = run_cli_bytes("env", "--root", str(tree.root))
    assert done.returncode == 65
    printed = done.stdout.decode()
    assert "export DRA_A_R_0_UUID=u\n" in printed
    assert "DRA_B_" not in printed  # half a request would shift device indices
    assert errors(done) == [
        f"dra-metadata: {broken}: decode metadata object: Object 'Kind' is missing in '{{}}'"
    ]


def test_env_collisions_are_65_and_name_both_sources(dra_metadata_tree: MetadataTree) -> None:
    """Claims a-b and a_b: exit 65, one line naming both, the other requests printed."""
    tree = dra_metadata_tree
    for claim in ("a-b", "a_b", "c"):
        tree.claim(claim).request("r").device("d.example.com", "p", "dev-0")
    tree.write()
    done = run_cli_bytes("env", "--root", str(tree.root))
    assert done.returncode == 65
    assert errors(done) == [
        "dra-metadata: DRA_A_B_R_COUNT: claim 'a-b' request 'r' and claim 'a_b' request 'r' "
        "map to the same name (and 6 more names they share)"
    ]
    assert b"export DRA_C_R_0_NAME=dev-0\n" in done.stdout
    assert b"DRA_A_B" not in done.stdout


def test_env_of_hostile_files_sources_exactly_in_sh_and_bash(
    dra_metadata_tree: MetadataTree, tmp_path: Path
) -> None:
    """Values a driver wrote with quotes, $(), backticks and newlines come back exactly."""
    nasty = [
        "it's",
        '"$(touch pwned)"',
        "`touch pwned`",
        "line1\nline2\n",
        "tab\tand spaces  ",
        "$HOME ${HOME} \\ \\\\ '\\''",
        "日本語 😀 \u2028",
        "",
        "-n",
        "a=b; c",
    ]
    tree = dra_metadata_tree
    attributes = {f"v{i}": value for i, value in enumerate(nasty)}  # each a string attribute
    tree.claim("c").request("r").device("d.example.com", "p", "dev-0", attributes=attributes)
    tree.write()
    done = run_cli_bytes("env", "--root", str(tree.root))
    assert done.returncode == 0, done.stderr
    script = tmp_path / "dra.env"
    script.write_bytes(done.stdout)
    for shell in ("/bin/sh", "bash"):
        for load in (f". {script}", f'eval "$(cat {script})"'):
            shown = subprocess.run(
                [
                    shell,
                    "-c",
                    f"{load} && printf '%s\\0' "
                    + " ".join(f'"$DRA_C_R_0_V{i}"' for i in range(len(nasty))),
                ],
                capture_output=True,
                cwd=tmp_path,
                timeout=30,
                check=False,
            )
            assert shown.returncode == 0, shown.stderr
            assert shown.stdout.decode().split("\0")[:-1] == nasty, (shell, load)
            assert not (tmp_path / "pwned").exists()


def test_env_refuses_a_nul_value_but_prints_the_rest(dra_metadata_tree: MetadataTree) -> None:
    """A \\u0000 in a file decodes to NUL: that variable is left out with an error, exit 65."""
    tree = dra_metadata_tree
    tree.claim("c").request("r").device("d.example.com", "p", "dev-0", bad="a\x00b", good="fine")
    tree.write()
    for fmt in ("shell", "dotenv", "json"):
        done = run_cli_bytes("env", "--root", str(tree.root), "--format", fmt)
        assert done.returncode == 65
        assert b"fine" in done.stdout
        assert b"DRA_C_R_0_BAD" not in done.stdout
        assert errors(done)[0] == (
            "dra-metadata: DRA_C_R_BAD: the value of claim 'c' request 'r' attribute BAD "
            "holds a NUL character, which no environment variable can hold"
        )


def test_env_dotenv_refusals_are_65_with_the_rest_printed(
    dra_metadata_tree: MetadataTree,
) -> None:
    """A value no dotenv form carries (ends with a backslash) is left out; exit 65."""
    tree = dra_metadata_tree
    tree.claim("c").request("r").device("d.example.com", "p", "dev-0", path="C:\\", ok="fine")
    tree.write()
    done = run_cli_bytes("env", "--root", str(tree.root), "--format", "dotenv")
    assert done.returncode == 65
    assert b"DRA_C_R_0_OK=fine\n" in done.stdout
    assert b"PATH" not in done.stdout
    assert len(errors(done)) == 2  # the device's and the request's variable
    assert run_cli_bytes("env", "--root", str(tree.root)).returncode == 0  # shell carries it


def test_a_closed_pipe_ends_quietly() -> None:
    """`dra-metadata env | head -1` exits 0 with no error message."""
    done = subprocess.run(
        f"{sys.executable} -m dra_metadata env --root {SAMPLE_ROOT} | head -c 10",
        shell=True,
        capture_output=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.stdout == b"export DRA"
    assert done.stderr == b""


@pytest.mark.parametrize("command", ["ls", "get", "env"])
def test_help_documents_the_exit_codes(command: str) -> None:
    """--help of ls, get and env names the shared exit codes."""
    done = run_cli_bytes(command, "--help")
    assert done.returncode == 0
    assert (
        b"exit codes: 0 success, 1 condition false or invalid, 64 usage error,\n"
        b"65 not decodable, 66 not found, 69 cannot happen here (wait), 71 out of memory,\n"
        b"74 output not written, 130 interrupted." in done.stdout
    )


# --------------------------------------------------------------------------- #
# Whatever the bytes on disk: a clear error per file, nothing else
# --------------------------------------------------------------------------- #


def one_request(name: str, device: dm.Device) -> dm.DeviceMetadata:
    """A claim's metadata with one request holding ``device``.

    Private on purpose: hypothesis makes request and driver names ("", "x/y") and
    cuts the bytes, none of which the testing kit writes (it refuses such names).
    """
    return dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid="uid-1", generation=3),
        requests=(dm.DeviceMetadataRequest(name, (device,)),),
    )


STREAM_BYTES = st.one_of(
    st.binary(max_size=200),
    st.builds(
        lambda md, cut, junk: dm.encode(md)[:cut] + junk,
        st.builds(
            one_request,
            st.sampled_from(["r", "r/sub", ""]),
            st.builds(
                dm.Device,
                st.sampled_from(["d.example.com", "", "x/y"]),
                st.just("p"),
                st.text(max_size=5),
                attributes=st.dictionaries(
                    st.text(max_size=6), st.builds(A, string=st.text(max_size=6)), max_size=3
                ),
            ),
        ),
        st.integers(min_value=0, max_value=400),
        st.binary(max_size=8),
    ),
    st.just(b"[" * 100_000),
    st.just(
        b'{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1",'
        b'"metadata":' + b'{"labels":' * 5000 + b"{}" + b"}" * 5001
    ),
)
DIR_NAMES = st.one_of(
    st.sampled_from(["c", "a-b", "a_b", "caf\xe9", "new\nline", "\udcff", " ", "-"]),
    # No lone surrogates but the ones a file system name decodes to ("\udcff" above).
    st.text(
        alphabet=st.characters(exclude_characters="/\x00", exclude_categories=["Cs"]),
        min_size=1,
        max_size=6,
    ).filter(lambda name: name not in (".", "..")),
)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.tuples(DIR_NAMES, STREAM_BYTES), min_size=1, max_size=4))
def test_any_bytes_and_names_give_rows_and_errors_never_exceptions(
    tmp_path_factory: pytest.TempPathFactory, files: list[tuple[str, bytes]]
) -> None:
    """ls rows, env variables in every format and get values come out, or DRAMetadataErrors."""
    # Written by hand: hypothesis makes the directory names (not UTF-8, newlines) and the
    # bytes (cut, junk), which the testing kit cannot express.
    root = tmp_path_factory.mktemp("root")
    for index, (claim, data) in enumerate(files):
        directory = os.fsencode(root / "resourceclaims") + b"/" + os.fsencode(claim) + b"/r"
        os.makedirs(directory, exist_ok=True)
        with open(directory + f"/d{index}.example.com-metadata.json".encode(), "wb") as out:
            out.write(data)
    inv = dm.inventory(root)
    rows = [row(file) for file in inv.files]
    table(rows).encode("utf-8")
    msgspec.json.encode(rows)
    variables, problems = collect(inv)
    assert all(isinstance(problem, dm.DRAMetadataError) for problem in problems)
    for fmt in ("shell", "dotenv", "json"):
        render(variables, fmt)
    for claim, _ in files:
        try:
            md = read_request("claim", claim, "r", root=root)
        except dm.DRAMetadataError:
            continue
        for _, device in md.devices():
            answer(device, "uuid")
            answer(device, "ips")


def test_usage_errors_name_every_missing_argument() -> None:
    """A usage error exits 64 with argparse's whole message on one stderr line."""
    done = run_cli_bytes("get")
    assert done.returncode == 64
    assert errors(done)[-1] == (
        "dra-metadata get: error: the following arguments are required: NAME"
    )


# --------------------------------------------------------------------------- #
# Output: names that are not UTF-8, and a stdout that cannot be written


@pytest.mark.parametrize("command", ["validate", "lint", "show"])
def test_non_utf8_paths_print_as_their_bytes_under_a_strict_utf8_stdout(
    command: str, tmp_path: Path
) -> None:
    """A path that is not UTF-8 is printed as its bytes, not a UnicodeEncodeError traceback."""
    root = os.fsencode(tmp_path) + b"/r\xff"
    request = root + b"/resourceclaims/train/accel"
    os.makedirs(request)
    source = SAMPLE_ROOT / "resourceclaims/train/accel/gpu.example.com-metadata.json"
    target = request + b"/gpu.example.com-metadata.json"
    with open(target, "wb") as out:
        out.write(source.read_bytes())
    if command == "show":
        args = ["show", "--root", os.fsdecode(root), "--claim", "train", "--request", "accel"]
        args += ["--format", "summary"]
    else:
        args = [command, os.fsdecode(target)]
    done = run_cli_bytes(*args, env={"PYTHONIOENCODING": "utf-8"})
    errors(done)
    assert done.returncode == 0
    assert target in done.stdout or root in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["env", "--root", str(SAMPLE_ROOT)],
        ["ls", "--root", str(SAMPLE_ROOT)],
        ["show", "--root", str(SAMPLE_ROOT), "--claim", "nic", "--request", "eth"],
        ["validate", str(SAMPLE_ROOT / "resourceclaims/nic/eth/sriov.example.com-metadata.json")],
    ],
    ids=lambda args: args[0],
)
def test_a_stdout_that_cannot_be_written_is_one_error_line_not_a_traceback(
    args: list[str],
) -> None:
    """A full disk on stdout (/dev/full) is one error line and exit 74, never a traceback."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "dra_metadata", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            cwd=REPO,
            check=False,
        )
    assert errors(done) == ["dra-metadata: write standard output: no space left on device"]
    assert done.returncode == 74
