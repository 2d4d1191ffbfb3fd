"""Reading files and request directories, and merging drivers' files as Go does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import dra_metadata as dm
from tests.conftest import MERGE_CASES, case_files, needs_corpus, wire


def gpu(
    driver: str = "gpu.example.com", uid: str = "uid-1", request: str = "gpu"
) -> dm.DeviceMetadata:
    return dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="claim", namespace="ns", uid=uid, generation=2),
        pod_claim_name="gpu",
        requests=(dm.DeviceMetadataRequest(request, (dm.Device(driver, "pool", "dev-0"),)),),
    )


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


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
    write(
        Path(dm.resource_claim_file_path("gpu.example.com", "c", "gpu", root=tmp_path)),
        dm.encode(gpu()),
    )
    md = dm.read_resource_claim("c", "gpu", driver="gpu.example.com", root=tmp_path)
    assert md.metadata.uid == "uid-1"
    assert md.metadata.generation == 2
    assert not isinstance(md, dm.MergedDeviceMetadata)


def test_merge_keeps_each_files_identity(tmp_path: Path) -> None:
    """A merged read has Go's wire form plus, per file, driver, path, generation and UID."""
    for driver in ("nic.example.com", "gpu.example.com"):
        write(
            Path(dm.resource_claim_template_file_path(driver, "gpu", "gpu", root=tmp_path)),
            dm.encode(gpu(driver)),
        )
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
    base = tmp_path / "resourceclaims" / "c" / "gpu"
    write(base / "a.example.com-metadata.json", dm.encode(gpu("a.example.com", uid="one")))
    write(base / "b.example.com-metadata.json", dm.encode(gpu("b.example.com", uid="two")))
    md = dm.read_resource_claim("c", "gpu", root=tmp_path)
    assert isinstance(md, dm.MergedDeviceMetadata)
    assert md.claim_uid is None
    assert [s.driver for s in md.conflicting_sources] == ["b.example.com"]
    assert "disagree on the claim UID" in caplog.text


def test_merge_order_is_bytewise_and_includes_dot_files(tmp_path: Path) -> None:
    """Files merge in byte order of their names, dot-files included (Go's glob)."""
    base = tmp_path / "resourceclaims" / "c" / "r"
    for driver in ("b.x", ".hidden", "B.x", "a.x"):
        write(base / f"{driver}-metadata.json", dm.encode(gpu(driver, request="r")))
    write(base / "notes.json", b"not metadata")
    md = dm.read_resource_claim("c", "r", root=tmp_path)
    assert [d.driver for d in md.requests[0].devices] == [".hidden", "B.x", "a.x", "b.x"]


def test_subrequest_reads_from_the_base_request_directory(sample_root: Path) -> None:
    """A request named req/sub lives in the directory req; its content keeps the full name."""
    md = dm.read_resource_claim_template("inference", "gpu/high-memory", root=sample_root)
    assert md.requests[0].name == "gpu/high-memory"
    assert md.requests[0].base_name == "gpu"


def test_missing_file_and_directory_are_not_found_errors(tmp_path: Path) -> None:
    """A missing file or directory raises MetadataNotFoundError naming the path, Go's text."""
    path = dm.resource_claim_file_path("gpu.example.com", "c", "gpu", root=tmp_path)
    with pytest.raises(dm.MetadataNotFoundError) as err:
        dm.read_resource_claim("c", "gpu", driver="gpu.example.com", root=tmp_path)
    assert str(err.value) == f"open metadata file: open {path}: no such file or directory"
    assert err.value.path == path
    assert isinstance(err.value, FileNotFoundError)
    with pytest.raises(dm.MetadataNotFoundError, match="no metadata files found in ") as err2:
        dm.read_resource_claim("c", "gpu", root=tmp_path)
    assert err2.value.path == os.path.dirname(path)


def test_decode_errors_name_the_file(tmp_path: Path) -> None:
    """An undecodable file's error starts with its path, as Go's does."""
    path = write(tmp_path / "x-metadata.json", b"{}")
    with pytest.raises(dm.DecodeError) as err:
        dm.read_file(path)
    assert str(err.value) == f"{path}: decode metadata object: Object 'Kind' is missing in '{{}}'"
    assert err.value.path == str(path)


def test_root_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a root argument, $DRA_METADATA_ROOT is used, else the container directory."""
    monkeypatch.setenv(dm.ROOT_ENV, str(tmp_path))
    write(Path(dm.resource_claim_file_path("d.x", "c", "r")), dm.encode(gpu("d.x", request="r")))
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
    path = write(tmp_path / "big-metadata.json", dm.encode(gpu()) + b" " * 4096)
    with pytest.raises(dm.FileTooLargeError, match="over the limit of 1024"):
        dm.read_file(path, max_size=1024)
    assert dm.read_file(path).pod_claim_name == "gpu"


def test_a_directory_named_like_a_file_fails_like_go(tmp_path: Path) -> None:
    """A directory matching *-metadata.json fails to decode as an empty stream, as in Go."""
    base = tmp_path / "resourceclaims" / "c" / "gpu"
    (base / "odd-metadata.json").mkdir(parents=True)
    with pytest.raises(dm.DecodeError, match="no metadata objects found in stream"):
        dm.read_resource_claim("c", "gpu", root=tmp_path)


# --- real read-only single-file bind mounts, as a container sees the files ---------------


@pytest.fixture
def bind_mount() -> Iterator[Any]:
    """Mount a host file read-only onto a container path; unmount afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("bind mounts need root and mount(8)")
    mounted: list[Path] = []

    def mount(host: Path, target: Path) -> Path:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
        done = subprocess.run(
            ["mount", "--bind", "-o", "ro", str(host), str(target)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"mount --bind refused here: {done.stderr.strip()}")
        mounted.append(target)
        return target

    yield mount
    for target in reversed(mounted):
        subprocess.run(["umount", str(target)], check=False)


@pytest.fixture
def mounted(tmp_path: Path, bind_mount: Any) -> tuple[Path, Path, Path]:
    """A host metadata file mounted read-only into a container tree: (host, root, target)."""
    host = write(tmp_path / "host" / "metadata.json", dm.encode(gpu()))
    root = tmp_path / "ctr"
    target = Path(dm.resource_claim_file_path("gpu.example.com", "c", "gpu", root=root))
    bind_mount(host, target)
    return host, root, target


def test_reads_through_a_read_only_bind_mount(mounted: tuple[Path, Path, Path]) -> None:
    """A file bind-mounted read-only into the container tree reads like a plain file."""
    _host, root, target = mounted
    with pytest.raises(OSError, match="Read-only"):
        target.write_bytes(b"x")
    md = dm.read_resource_claim("c", "gpu", root=root)
    assert md.requests[0].devices[0].name == "dev-0"


def test_in_place_update_on_the_host_is_seen_through_the_mount(
    mounted: tuple[Path, Path, Path],
) -> None:
    """A host writer that rewrites the file in place (Go v1.36) is seen by the next read."""
    host, root, _target = mounted
    updated = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="claim", namespace="ns", uid="uid-1", generation=3),
        requests=gpu().requests,
    )
    with open(host, "r+b") as out:  # truncate + write, same inode
        out.truncate(0)
        out.write(dm.encode(updated))
    md = dm.read_resource_claim("c", "gpu", driver="gpu.example.com", root=root)
    assert md.metadata.generation == 3


def test_rename_on_the_host_leaves_the_old_content_in_the_container(
    mounted: tuple[Path, Path, Path],
) -> None:
    """A host replace-by-rename (Go v1.37) is invisible: old inode, nlink 0."""
    host, root, target = mounted
    replacement = write(host.parent / ".metadata.json.tmp", dm.encode(gpu(uid="uid-2")))
    os.replace(replacement, host)
    assert os.stat(target).st_nlink == 0
    md = dm.read_resource_claim("c", "gpu", driver="gpu.example.com", root=root)
    assert md.metadata.uid == "uid-1"


# --- a real writer racing the reader ----------------------------------------------------

_WRITER = """
import sys
import dra_metadata as dm

path, rounds = sys.argv[1], int(sys.argv[2])
for generation in range(1, rounds + 1):
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid="u", generation=generation),
        requests=(
            dm.DeviceMetadataRequest(
                "r",
                tuple(dm.Device("d.x", "p", f"dev-{i}") for i in range(generation % 7 + 1)),
            ),
        ),
    )
    with open(path, "r+b") as out:  # in place, as the Go v1.36 writer does: torn reads happen
        out.truncate(0)
        out.write(dm.encode(md))
"""


def test_reads_racing_an_in_place_writer_are_whole_or_a_decode_error(tmp_path: Path) -> None:
    """While another process rewrites the file, each read is a whole object or a DecodeError."""
    path = write(tmp_path / "d.x-metadata.json", dm.encode(gpu("d.x", request="r")))
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), "400"], cwd=Path(__file__).resolve().parents[1]
    )
    whole = torn = 0
    try:
        while writer.poll() is None:
            try:
                md = dm.read_file(path)
            except dm.DecodeError:
                torn += 1
                continue
            generation = md.metadata.generation
            if generation == 2 and md.metadata.uid == "uid-1":
                continue  # the file as first written
            assert len(md.requests[0].devices) == generation % 7 + 1
            whole += 1
    finally:
        writer.wait(timeout=60)
    assert writer.returncode == 0
    assert dm.read_file(path).metadata.generation == 400
    assert whole > 0, f"no whole object read while the writer ran ({torn} torn reads)"
