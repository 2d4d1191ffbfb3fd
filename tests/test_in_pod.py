"""A user's first minutes in a pod: exact requests, identity, errors that say what to do, waits.

The CLI runs for real in a subprocess; waits inside a "container" use real read-only
single-file bind mounts, which ``/proc/self/mountinfo`` lists as a container's do.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata.testing import MetadataTree, MountedMetadataTree
from tests.conftest import REPO, SAMPLE_ROOT, run_cli

ROOT = str(SAMPLE_ROOT)


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a run, without the program prefix."""
    (line,) = done.stderr.splitlines()
    assert line.startswith("dra-metadata: ")
    return line.removeprefix("dra-metadata: ")


# --------------------------------------------------------------------------- exact requests


def test_a_subrequest_that_was_not_allocated_is_not_found_and_names_the_one_that_was() -> None:
    """Asking for gpu/low-memory when gpu/high-memory was allocated is a not-found naming it."""
    with pytest.raises(dm.MetadataNotFoundError) as err:
        dm.read_resource_claim_template("inference", "gpu/low-memory", root=ROOT)
    assert "gpu/high-memory" in str(err.value)
    assert err.value.nearby == ("gpu/high-memory",)
    for command in ("show", "get"):
        extra = ["uuid"] if command == "get" else []
        done = run_cli(command, "--root", ROOT, "--template-claim", "inference", "--request",
                       "gpu/low-memory", *extra)  # fmt: skip
        assert (done.returncode, done.stdout) == (66, "")
        assert one_error(done) == str(err.value)


def test_the_base_request_answers_with_the_allocated_subrequest() -> None:
    """Asking for gpu returns what was allocated, and its name says which subrequest."""
    md = dm.read_resource_claim_template("inference", "gpu", root=ROOT)
    assert [r.name for r in md.requests] == ["gpu/high-memory"]
    exact = dm.read_resource_claim_template("inference", "gpu/high-memory", root=ROOT)
    assert exact.to_dict() == md.to_dict()
    one = dm.read_resource_claim_template(
        "inference", "gpu/high-memory", driver="gpu.example.com", root=ROOT
    )
    assert [r.name for r in one.requests] == ["gpu/high-memory"]


def test_leaving_the_request_out_reads_every_request_of_the_claim(
    dra_metadata_tree: MetadataTree,
) -> None:
    """request=None (and no --request) merges every request directory of the claim."""
    claim = dra_metadata_tree.claim("c")
    claim.request("gpu").device("g.example.com", "p", "g0", uuid="u0")
    claim.request("nic").device("n.example.com", "p", "n0", uuid="u1")
    dra_metadata_tree.write()
    root = str(dra_metadata_tree.root)
    md = dm.read_resource_claim("c", root=root)
    assert [r.name for r in md.requests] == ["gpu", "nic"]
    assert [s.driver for s in md.sources] == ["g.example.com", "n.example.com"]
    done = run_cli("get", "--root", root, "--claim", "c", "uuid")
    assert (done.returncode, done.stdout) == (0, "u0\nu1\n")


@pytest.mark.parametrize("name", ["*", "gpu*", "g?u", "[gpu]"])
def test_glob_characters_are_refused_and_point_at_the_request_less_form(name: str) -> None:
    """Names are never patterns: *, ? and [ are an InvalidNameError (exit 64) saying what to do."""
    with pytest.raises(dm.InvalidNameError, match="leave the request out"):
        dm.read_resource_claim("train", name, root=ROOT)
    done = run_cli("show", "--root", ROOT, "--claim", "train", "--request", name)
    assert done.returncode == 64
    assert "leave the request out" in one_error(done)


# --------------------------------------------------------------------------- identity


def test_a_merged_read_tells_the_claim_identity_and_each_generation() -> None:
    """Name, namespace and UID come through a merge; generations per driver; Go's dict unchanged."""
    md = dm.read_resource_claim("nic", "eth", root=ROOT)
    assert (md.claim_namespace, md.claim_name) == ("ml-team", "nic")
    assert md.claim_uid == md.sources[0].claim_uid
    assert md.generations == {"sriov.example.com": 2}
    assert md.disagreement() is None
    assert md.metadata == dm.ObjectMeta()  # Go's merged object has no object metadata
    assert "metadata" in md.to_dict()
    assert md.to_dict()["metadata"] == {}
    summary = run_cli("show", "--root", ROOT, "--claim", "nic", "--request", "eth", "--format",
                      "summary").stdout  # fmt: skip
    assert f"claim: ml-team/nic uid={md.claim_uid} generation: sriov.example.com=2" in summary


def test_files_that_disagree_on_the_claim_say_so(dra_metadata_tree: MetadataTree) -> None:
    """Two files of different claim UIDs: no identity, a disagreement naming both, a warning."""
    tree = dra_metadata_tree
    request = tree.claim("c", uid="uid-1").request("r")
    request.device("a.example.com", "p", "a0")
    tree.write()
    other = MetadataTree(tree.root.parent / "other")
    other.claim("c", uid="uid-2").request("r").device("b.example.com", "p", "b0")
    other.write()
    source = other.root / "resourceclaims/c/r/b.example.com-metadata.json"
    (tree.root / "resourceclaims/c/r/b.example.com-metadata.json").write_bytes(source.read_bytes())
    md = dm.read_resource_claim("c", "r", root=tree.root)
    assert md.claim_uid is None
    disagreement = md.disagreement()
    assert disagreement is not None
    assert "uid-1" in disagreement
    assert "uid-2" in disagreement
    done = run_cli("show", "--root", str(tree.root), "--claim", "c", "--request", "r")
    assert done.returncode == 0
    assert one_error(done).startswith("warning: the files disagree on the claim UID")


def test_the_readers_return_types_let_user_code_read_sources_under_mypy_strict(
    tmp_path: Path,
) -> None:
    """read_resource_claim() without a driver is typed MergedDeviceMetadata; with one, not."""
    from mypy import api

    user = tmp_path / "user_code.py"
    user.write_text(
        "import dra_metadata as dm\n"
        "md = dm.read_resource_claim('nic', 'eth')\n"
        "paths: list[str] = [source.path for source in md.sources]\n"
        "one = dm.read_resource_claim('nic', 'eth', driver='sriov.example.com')\n"
        "reveal_type(one)\n"
    )
    out, _, status = api.run(["--strict", "--no-incremental", str(user)])
    assert status == 0, out
    assert 'Revealed type is "dra_metadata._model.DeviceMetadata"' in out


# --------------------------------------------------------------------------- not found


def test_a_claim_of_the_other_kind_is_pointed_at_in_the_library_and_the_cli() -> None:
    """--claim gpu when only a template claim gpu exists says to use --template-claim."""
    with pytest.raises(dm.MetadataNotFoundError) as err:
        dm.read_resource_claim("gpu", "gpu", root=ROOT)
    message = str(err.value)
    assert "a template claim 'gpu' exists (--template-claim gpu" in message
    for command in (["show"], ["get"], ["ls"], ["env"]):
        extra = ["uuid"] if command == ["get"] else []
        done = run_cli(*command, "--root", ROOT, "--claim", "gpu", "--request", "gpu", *extra)
        assert done.returncode == 66, command
        assert "a template claim 'gpu' exists (--template-claim gpu" in done.stderr, command
    assert (
        one_error(run_cli("show", "--root", ROOT, "--claim", "gpu", "--request", "gpu")) == message
    )


def test_a_short_driver_name_is_pointed_at_its_whole_name() -> None:
    """--driver sriov offers sriov.example.com first."""
    with pytest.raises(dm.MetadataNotFoundError) as err:
        dm.read_resource_claim("nic", "eth", driver="sriov", root=ROOT)
    assert err.value.nearby[0] == "sriov.example.com"
    assert "--driver takes the whole name" in str(err.value)


def test_a_misspelled_request_offers_the_ones_there() -> None:
    """--request gpus offers gpu."""
    done = run_cli("get", "--root", ROOT, "--template-claim", "gpu", "--request", "gpus", "uuid")
    assert done.returncode == 66
    assert "template claim 'gpu' has no request 'gpus'; its requests: gpu" in one_error(done)


def test_no_root_at_all_says_nothing_is_mounted_and_why(tmp_path: Path) -> None:
    """A missing root names itself, says nothing is mounted, and gives the fix."""
    root = str(tmp_path / "absent")
    done = run_cli("show", "--root", root, "--claim", "c", "--request", "r")
    assert done.returncode == 66
    message = one_error(done)
    assert f"the metadata root {root} does not exist" in message
    assert "resources.claims" in message
    assert "device metadata enabled" in message


def test_root_works_before_or_after_the_command() -> None:
    """--root R ls and ls --root R print the same."""
    before = run_cli("--root", ROOT, "ls")
    after = run_cli("ls", "--root", ROOT)
    assert before.returncode == after.returncode == 0
    assert before.stdout == after.stdout
    assert "nic" in before.stdout


def test_ls_of_an_empty_root_prints_the_header_and_says_nothing_is_mounted(tmp_path: Path) -> None:
    """An empty root: the header on stdout, one line on stderr, exit 66 as every command."""
    done = run_cli("ls", "--root", str(tmp_path))
    assert done.returncode == 66
    assert done.stdout.split() == [
        "KIND", "CLAIM", "REQUEST", "DRIVER", "VERSION", "GENERATION", "DEVICES", "STATUS"
    ]  # fmt: skip
    assert one_error(done).startswith(f"nothing is mounted under {tmp_path}; ")


# --------------------------------------------------------------------------- small things


def test_get_finds_standard_attributes_by_their_short_names() -> None:
    """pciBusID, pcieRoot and numaNode reach resource.kubernetes.io/... as env names them."""
    for name, expected in (("pciBusID", "0000:af:00.0"), ("pcieRoot", "pci0000:ae"),
                           ("numaNode", "1")):  # fmt: skip
        done = run_cli("get", "--root", ROOT, "--claim", "vfio-gpu", "--request", "gpu", name)
        assert (done.returncode, done.stdout) == (0, expected + "\n"), name
    env = dm.env_vars(root=ROOT, claim="vfio-gpu")
    assert env["DRA_VFIO_GPU_GPU_PCI_BUS_ID"] == "0000:af:00.0"


def test_a_driver_attribute_of_the_short_name_wins_over_the_standard_one(
    dra_metadata_tree: MetadataTree,
) -> None:
    """The driver's own numaNode is what get numaNode prints; the qualified name reaches both."""
    dra_metadata_tree.claim("c").request("r").device(
        "d.example.com", "p", "d0", numaNode=7, attributes={"resource.kubernetes.io/numaNode": 1}
    )
    dra_metadata_tree.write()
    root = str(dra_metadata_tree.root)
    assert (
        run_cli("get", "--root", root, "--claim", "c", "--request", "r", "numaNode").stdout == "7\n"
    )
    qualified = run_cli("get", "--root", root, "--claim", "c", "--request", "r",
                        "resource.kubernetes.io/numaNode")  # fmt: skip
    assert qualified.stdout == "1\n"


@pytest.mark.parametrize("command", ["validate", "lint"])
def test_validate_and_lint_check_every_file_below_a_directory(command: str, tmp_path: Path) -> None:
    """A directory stands for the metadata files below it; an empty one is exit 66."""
    done = run_cli(command, ROOT)
    assert done.returncode in (0, 1)
    checked = [line.partition(": ")[0] for line in done.stdout.splitlines()]
    assert checked == sorted(
        (str(p) for p in SAMPLE_ROOT.rglob("*-metadata.json")), key=os.fsencode
    )
    empty = run_cli(command, str(tmp_path))
    assert empty.returncode == 66
    assert "no *-metadata.json" in one_error(empty)


# --------------------------------------------------------------------------- waiting in a pod


@pytest.fixture
def pod(dra_metadata_mounted_tree: MountedMetadataTree) -> MountedMetadataTree:
    """A container view with one mounted claim, nic/eth, without network data yet."""
    tree = dra_metadata_mounted_tree
    tree.claim("nic").request("eth").device("sriov.example.com", "p", "vf0")
    tree.write()
    return tree


def test_wait_in_a_container_fails_at_once_for_a_claim_that_is_not_mounted(
    pod: MountedMetadataTree,
) -> None:
    """Inside the mounted layout a missing claim can never appear: exit 69 at once, saying why."""
    started = time.monotonic()
    done = run_cli("wait", "--root", str(pod.root), "--claim", "gpu", "--request", "gpu")
    assert time.monotonic() - started < 20  # no waiting: the process start is all it costs
    assert done.returncode == 69
    message = one_error(done)
    assert "is not mounted in this container" in message
    assert "can never appear" in message
    assert "claims here: nic" in message
    with pytest.raises(dm.NotMountedError):
        dm.wait_for(claim="gpu", request="gpu", root=pod.root, timeout=30)


def test_wait_in_a_container_fails_at_once_when_the_file_was_replaced(
    pod: MountedMetadataTree,
) -> None:
    """A file replaced on the node (stale) can never get network data: exit 69 at once."""
    nic = pod.claims[0].requests[0].devices[0]
    nic.network(interface_name="net1")
    pod.update(mode="rename")
    started = time.monotonic()
    done = run_cli("wait", "--root", str(pod.root), "--claim", "nic", "--request", "eth",
                   "--for", "network", "--timeout", "30s")  # fmt: skip
    assert time.monotonic() - started < 20
    assert done.returncode == 69
    assert "was replaced on the node after this container started" in one_error(done)
    with pytest.raises(dm.StaleMetadataError):
        dm.wait_for(claim="nic", request="eth", until=dm.has_network_data, root=pod.root,
                    timeout=30)  # fmt: skip


def test_wait_in_a_container_sees_an_in_place_update(pod: MountedMetadataTree) -> None:
    """An in-place rewrite reaches the mounted file: the wait for network data succeeds."""
    nic = pod.claims[0].requests[0].devices[0]
    waiter = subprocess.Popen(
        [sys.executable, "-m", "dra_metadata", "wait", "--root", str(pod.root), "--claim",
         "nic", "--request", "eth", "--for", "network", "--timeout", "30s"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    nic.network(interface_name="net1")
    pod.update(mode="in-place")
    _, stderr = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, stderr


def test_wait_on_a_plain_tree_still_waits_and_prints_progress(tmp_path: Path) -> None:
    """Outside a container a missing claim may still come: progress lines, then a timeout."""
    done = run_cli("wait", "--root", str(tmp_path), "--claim", "nic", "--request", "eth",
                   "--timeout", "1.2s", "--progress", "0.4s")  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) >= 3
    assert all(line.startswith("dra-metadata: still waiting after ") for line in lines[:-1])
    assert lines[-1].startswith("dra-metadata: timed out after 1.2s waiting for ")
    assert "resources.claims" in lines[-1]


def test_watch_on_a_missing_root_says_so(tmp_path: Path) -> None:
    """watch says the root does not exist, then watches for it."""
    done = run_cli("watch", "--root", str(tmp_path / "absent"), "--claim", "c", "--request", "r",
                   "--timeout", "0.2s")  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    assert "does not exist" in one_error(done)
    assert "watching for it to appear" in done.stderr
