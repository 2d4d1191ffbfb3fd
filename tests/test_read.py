"""Reading files and request directories, and merging drivers' files as Go does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import dra_metadata as dm
from dra_metadata.testing import MetadataTree, MountedMetadataTree
from tests.conftest import MERGE_CASES, REPO, case_files, needs_corpus, wire


@needs_corpus(MERGE_CASES)
def test_corpus_request_directory_merges_like_go(case: dict[str, Any], tmp_path: Path) -> None:
    """Each corpus request directory merges to Go's object, or fails with Go's error."""
    directory = tmp_path / "req"
    directory.mkdir()
    for name, data in case_files(case).items():
        (directory / name).write_bytes(data)
    expect = case["expect"]
    if expect["error"] is not None:
        with pytest.raises(dm.DRAMetadataError) as err:
            dm.read_request_dir(directory)
        assert str(err.value) == expect["error"].replace("<DIR>", str(directory))
    else:
        merged = dm.read_request_dir(directory)
        assert merged.to_dict() == wire(expect["object"])


def test_read_with_driver_reads_one_file(tmp_path: Path) -> None:
    """With a driver, exactly that driver's file is read, object metadata included."""
    tree = MetadataTree(tmp_path)
    claim = tree.claim("c", namespace="ns", uid="uid-1", generation=2)
    claim.request("gpu").device("gpu.example.com", "pool", "dev-0")
    claim.request("gpu").device("nic.example.com", "pool", "dev-0")
    tree.write()
    md = dm.read_resource_claim("c", "gpu", driver="gpu.example.com", root=tmp_path)
    assert [d.driver for d in md.requests[0].devices] == ["gpu.example.com"]
    assert md.metadata.uid == "uid-1"
    assert md.metadata.generation == 2
    assert not isinstance(md, dm.MergedDeviceMetadata)


def test_merge_keeps_each_files_identity(tmp_path: Path) -> None:
    """A merged read has Go's wire form plus, per file, driver, path, generation and UID."""
    tree = MetadataTree(tmp_path)
    request = tree.template_claim("gpu", uid="uid-1", generation=2).request("gpu")
    for driver in ("nic.example.com", "gpu.example.com"):
        request.device(driver, "pool", "dev-0")
    tree.write()
    md = dm.read_resource_claim_template("gpu", "gpu", root=tmp_path)
    assert isinstance(md, dm.MergedDeviceMetadata)
    assert md.to_dict()["metadata"] == {}
    assert [d.driver for d in md.requests[0].devices] == ["gpu.example.com", "nic.example.com"]
    assert [s.driver for s in md.sources] == ["gpu.example.com", "nic.example.com"]
    assert {s.generation for s in md.sources} == {2}
    assert md.claim_uid == "uid-1"
    assert md.conflicting_sources == ()
    assert md.api_version == dm.V1BETA1


def test_merge_reports_files_of_another_claim(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Files that disagree on the claim UID are reported, and logged as a warning."""
    # Two drivers that saw different claims of one name (the claim was re-created).
    for driver, uid in (("a.example.com", "one"), ("b.example.com", "two")):
        tree = MetadataTree(tmp_path)
        tree.claim("c", uid=uid).request("gpu").device(driver, "pool", "dev-0")
        tree.write()
    md = dm.read_resource_claim("c", "gpu", root=tmp_path)
    assert isinstance(md, dm.MergedDeviceMetadata)
    assert md.claim_uid is None
    assert [s.driver for s in md.conflicting_sources] == ["b.example.com"]
    assert "disagree on the claim UID" in caplog.text


def test_merge_order_is_bytewise_and_includes_dot_files(tmp_path: Path) -> None:
    """Files merge in byte order of their names, dot-files included (Go's glob)."""
    tree = MetadataTree(tmp_path)
    request = tree.claim("c").request("r")
    for driver in ("b.x", ".hidden", "B.x", "a.x"):
        request.device(driver, "pool", "dev-0")
    tree.write()
    (tmp_path / "resourceclaims" / "c" / "r" / "notes.json").write_bytes(b"not metadata")
    md = dm.read_resource_claim("c", "r", root=tmp_path)
    assert [d.driver for d in md.requests[0].devices] == [".hidden", "B.x", "a.x", "b.x"]


def test_subrequest_reads_from_the_base_request_directory(sample_root: Path) -> None:
    """A request named req/sub lives in the directory req; its content keeps the full name."""
    md = dm.read_resource_claim_template("inference", "gpu/high-memory", root=sample_root)
    assert md.requests[0].name == "gpu/high-memory"
    assert md.requests[0].base_name == "gpu"


def test_missing_file_and_directory_are_not_found_errors(tmp_path: Path) -> None:
    """A missing file or directory raises MetadataNotFoundError naming the path, Go's text first."""
    path = dm.resource_claim_file_path("gpu.example.com", "c", "gpu", root=tmp_path)
    with pytest.raises(dm.MetadataNotFoundError) as err:
        dm.read_resource_claim("c", "gpu", driver="gpu.example.com", root=tmp_path)
    assert str(err.value).startswith(
        f"open metadata file: open {path}: no such file or directory: "
    )
    assert err.value.path == path
    assert isinstance(err.value, FileNotFoundError)
    with pytest.raises(dm.MetadataNotFoundError, match="no metadata files found in ") as err2:
        dm.read_resource_claim("c", "gpu", root=tmp_path)
    assert err2.value.path == os.path.dirname(path)


def test_decode_errors_name_the_file(tmp_path: Path) -> None:
    """An undecodable file's error starts with its path, as Go's does."""
    path = tmp_path / "x-metadata.json"
    path.write_bytes(b"{}")
    with pytest.raises(dm.DecodeError) as err:
        dm.read_file(path)
    assert str(err.value) == f"{path}: decode metadata object: Object 'Kind' is missing in '{{}}'"
    assert err.value.path == str(path)


def test_root_comes_from_the_environment(
    dra_metadata_tree: MetadataTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a root argument, $DRA_METADATA_ROOT is used, else the container directory."""
    dra_metadata_tree.claim("c").request("r").device("d.x", "pool", "dev-0")
    dra_metadata_tree.write()
    assert os.environ[dm.ROOT_ENV] == str(dra_metadata_tree.root)
    assert dm.read_resource_claim("c", "r").requests[0].devices[0].driver == "d.x"
    monkeypatch.delenv(dm.ROOT_ENV)
    assert dm.default_root() == dm.CONTAINER_DIR


@pytest.mark.parametrize(
    ("claim", "request_name", "driver"),
    [
        ("..", "gpu", None),
        ("c", "..", None),
        ("c", "gpu/..", None),
        ("c", "a/b/c", None),
        ("c/../../etc", "gpu", None),
        ("", "gpu", None),
        ("c", "", None),
        ("c", "gpu/", None),
        ("c", "gpu", "../../etc/passwd"),
        ("c", "gpu", "a\x00b"),
        (".", "gpu", None),
    ],
)
def test_names_that_leave_the_directory_are_refused(
    claim: str, request_name: str, driver: str | None, tmp_path: Path
) -> None:
    """Unsafe claim, request and driver names raise InvalidNameError before any file access."""
    with pytest.raises(dm.InvalidNameError):
        dm.read_resource_claim(claim, request_name, driver=driver, root=tmp_path / "missing")
    with pytest.raises(dm.InvalidNameError):
        dm.read_resource_claim_template(
            claim, request_name, driver=driver, root=tmp_path / "missing"
        )


def test_nul_in_a_path_or_root_is_an_invalid_name(tmp_path: Path) -> None:
    """A NUL byte in a file path or root gives InvalidNameError, not a bare ValueError."""
    with pytest.raises(dm.InvalidNameError):
        dm.read_file(str(tmp_path / "a\x00b"))
    with pytest.raises(dm.InvalidNameError):
        dm.read_resource_claim("c", "r", root=str(tmp_path) + "\x00")


def test_files_over_the_size_cap_are_refused(tmp_path: Path) -> None:
    """A file over max_size raises FileTooLargeError without being decoded."""
    tree = MetadataTree(tmp_path)
    dev = tree.template_claim("gpu").request("gpu").device("big.example.com", "pool", "dev-0")
    tree.write()
    with open(dev.path, "ab") as out:
        out.write(b" " * 4096)
    with pytest.raises(dm.FileTooLargeError, match="over the limit of 1024"):
        dm.read_file(dev.path, max_size=1024)
    assert dm.read_file(dev.path).pod_claim_name == "gpu"


def test_a_directory_named_like_a_file_fails_like_go(tmp_path: Path) -> None:
    """A directory matching *-metadata.json fails to decode as an empty stream, as in Go."""
    base = tmp_path / "resourceclaims" / "c" / "gpu"
    (base / "odd-metadata.json").mkdir(parents=True)
    with pytest.raises(dm.DecodeError, match="no metadata objects found in stream"):
        dm.read_resource_claim("c", "gpu", root=tmp_path)


# --- real read-only single-file bind mounts, as a container sees the files ---------------


@pytest.fixture
def mounted(dra_metadata_mounted_tree: MountedMetadataTree) -> MountedMetadataTree:
    """One GPU file written on the node and bind-mounted read-only into the container tree."""
    tree = dra_metadata_mounted_tree
    tree.claim("c", namespace="ns", uid="uid-1").request("gpu").device(
        "gpu.example.com", "pool", "dev-0"
    )
    tree.write()
    return tree


def test_reads_through_a_read_only_bind_mount(mounted: MountedMetadataTree) -> None:
    """A file bind-mounted read-only into the container tree reads like a plain file."""
    (target,) = mounted.mounted
    with pytest.raises(OSError, match="Read-only"):
        target.write_bytes(b"x")
    md = dm.read_resource_claim("c", "gpu", root=mounted.root)
    assert md.requests[0].devices[0].name == "dev-0"


def test_in_place_update_on_the_host_is_seen_through_the_mount(
    mounted: MountedMetadataTree,
) -> None:
    """A host writer that rewrites the file in place (Go v1.36) is seen by the next read."""
    mounted.update(mounted.claim("c"), mode="in-place")  # truncate + write, same inode
    md = dm.read_resource_claim("c", "gpu", driver="gpu.example.com", root=mounted.root)
    assert md.metadata.generation == 2


def test_rename_on_the_host_leaves_the_old_content_in_the_container(
    mounted: MountedMetadataTree,
) -> None:
    """A host replace-by-rename (Go v1.37) is invisible: old inode, nlink 0."""
    (dev,) = mounted.claim("c").request("gpu").devices
    dev.set(model="new")
    mounted.update(mode="rename")
    assert os.stat(dev.path).st_nlink == 0
    md = dm.read_resource_claim("c", "gpu", driver="gpu.example.com", root=mounted.root)
    assert md.metadata.generation == 1
    assert md.requests[0].devices[0].attribute("model") is None


# --- a real writer racing the reader ----------------------------------------------------

_WRITER = """
import sys
from dra_metadata.testing import MetadataTree

root, rounds = sys.argv[1], int(sys.argv[2])
tree = MetadataTree(root, mode="in-place")  # as the Go v1.36 writer does: torn reads happen
request = tree.claim("c", namespace="ns", uid="u").request("r")
for generation in range(1, rounds + 1):
    for device in request.devices:
        request.remove_device(device)
    for i in range(generation % 7 + 1):
        request.device("d.x", "p", f"dev-{i}")
    tree.write() if generation == 1 else tree.update()
"""


def test_reads_racing_an_in_place_writer_are_whole_or_a_decode_error(tmp_path: Path) -> None:
    """While another process rewrites the file, each read is a whole object or a DecodeError."""
    tree = MetadataTree(tmp_path)
    request = tree.claim("c", namespace="ns", uid="u").request("r")
    for i in range(2):  # generation 1 as the writer makes it
        request.device("d.x", "p", f"dev-{i}")
    (path,) = tree.write()
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), "400"], cwd=REPO)
    whole = torn = 0
    try:
        while writer.poll() is None:
            try:
                md = dm.read_file(path)
            except dm.DecodeError:
                torn += 1
                continue
            generation = md.metadata.generation
            assert len(md.requests[0].devices) == generation % 7 + 1
            whole += 1
    finally:
        writer.wait(timeout=60)
    assert writer.returncode == 0
    assert dm.read_file(path).metadata.generation == 400
    assert whole > 0, f"no whole object read while the writer ran ({torn} torn reads)"


def test_a_fifo_named_like_a_metadata_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    """read_file() on a FIFO raises at once; it would block until a writer opened it."""
    fifo = tmp_path / "resourceclaims" / "c" / "r" / "d.example.com-metadata.json"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    code = (
        "import sys, dra_metadata as dm\n"
        "try:\n"
        f"    dm.read_resource_claim('c', 'r', root={str(tmp_path)!r})\n"
        "except dm.DRAMetadataError as err:\n"
        "    print(type(err).__name__, err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"DRAMetadataError {fifo}: not a regular file\n"
