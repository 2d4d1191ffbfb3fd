"""The in-place writer's fence (dra_metadata._fence), with real processes, files and mounts.

A fenced writer that pauses 500 ms in the middle of an object is never read
mid-object: not by a watch, not by a one-shot read, not through a read-only
bind mount. A reader that holds its lock for ever holds a writer back no more
than WRITER_WAIT. A classic POSIX write lock (Go's ``syscall.FcntlFlock`` with
``F_SETLK``) fences the readers too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata import _fence
from dra_metadata._safedir import rewrite_in_place
from dra_metadata.testing import MountedMetadataTree, MountUnavailableError
from tests.conftest import REPO

DRIVER = "x.example.com"

#: A writer that takes the fence (or, with "posix", a classic POSIX write lock, as a Go
#: writer using syscall.FcntlFlock does), writes the first part of the object, says so,
#: pauses, writes the rest, lets go and closes.
WRITER = r"""
import fcntl, os, sys, time
from dra_metadata import _fence
path, kind, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
data = sys.stdin.buffer.read()
fd = os.open(path, os.O_WRONLY)
if kind == "ofd":
    assert _fence.exclusive(fd)
elif kind == "posix":
    fcntl.lockf(fd, fcntl.LOCK_EX)
half = len(data) // 4  # in the middle of the first object: its first devices
os.pwrite(fd, data[:half], 0)
print("half", flush=True)
time.sleep(pause)
os.pwrite(fd, data[half:], half)
os.ftruncate(fd, len(data))
if kind == "ofd":
    _fence.release(fd)
elif kind == "posix":
    fcntl.lockf(fd, fcntl.LOCK_UN)
os.close(fd)
print("done", flush=True)
"""


def stream(generation: int) -> bytes:
    """A stream whose devices all carry ``generation``: a mixture would show."""
    devices = tuple(
        dm.Device(DRIVER, "p", f"dev-{i}", attributes={"gen": dm.DeviceAttribute(int=generation)})
        for i in range(8)
    )
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid="u", generation=generation),
        requests=(dm.DeviceMetadataRequest("r", devices),),
    )
    return dm.encode(md)


def whole(md: dm.DeviceMetadata) -> bool:
    """Every device carries the object's generation."""
    return all(d.attribute("gen") == md.metadata.generation for _r, d in md.devices())


def metadata_file(root: Path) -> Path:
    directory = root / "resourceclaims" / "c" / "r"
    directory.mkdir(parents=True)
    path = directory / f"{DRIVER}-metadata.json"
    path.write_bytes(stream(10))
    return path


def start_writer(path: Path, kind: str, pause: float, data: bytes) -> subprocess.Popen[str]:
    """The writer, stopped in the middle of the object when this returns."""
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), kind, str(pause)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert writer.stdin is not None
    assert writer.stdout is not None
    writer.stdin.write(data.decode())
    writer.stdin.close()
    assert writer.stdout.readline() == "half\n"
    return writer


def finish(writer: subprocess.Popen[str]) -> None:
    """Wait for the writer to be done (and close its pipe)."""
    assert writer.stdout is not None
    with writer.stdout:
        out = writer.stdout.read()
    assert writer.wait(10) == 0
    assert out == "done\n"


@pytest.mark.parametrize("kind", ["ofd", "posix"])
def test_a_one_shot_read_waits_for_a_fenced_writer_paused_mid_object(
    tmp_path: Path, kind: str
) -> None:
    """read_file() during the writer's 500 ms pause returns the new object whole, after it."""
    path = metadata_file(tmp_path)
    writer = start_writer(path, kind, 0.5, stream(11))
    begun = time.monotonic()
    md = dm.read_file(path)
    waited = time.monotonic() - begun
    finish(writer)
    assert md.metadata.generation == 11
    assert whole(md)
    assert 0.2 < waited < _fence.READER_WAIT + 0.5, waited


def test_without_the_fence_the_same_read_is_a_mixture(tmp_path: Path) -> None:
    """The control: the same writer without a lock is read mid-object (so the test can fail)."""
    path = metadata_file(tmp_path)
    writer = start_writer(path, "none", 0.5, stream(11))
    md = dm.read_file(path)
    finish(writer)
    assert md.metadata.generation == 11
    assert not whole(md)


@pytest.mark.parametrize("kind", ["ofd", "posix"])
def test_a_watch_never_delivers_a_fenced_writer_mid_object(tmp_path: Path, kind: str) -> None:
    """watch() hears the writes and another handle's close in the pause: whole, at the close."""
    path = metadata_file(tmp_path)
    events = dm.watch(claim="c", request="r", root=tmp_path, timeout=10)
    first = next(events)
    assert first.generation == 10
    writer = start_writer(path, kind, 0.5, stream(11))
    # Another handle that could write closes during the pause: a close worth a look.
    os.close(os.open(path, os.O_RDWR))
    event = next(events)
    finish(writer)
    events.close()
    assert event.metadata is not None
    assert event.generation == 11
    assert whole(event.metadata)


def test_a_reader_holding_its_lock_holds_the_writer_back_no_more_than_the_bound(
    tmp_path: Path,
) -> None:
    """A process in the container that keeps a read lock: the write goes on after WRITER_WAIT."""
    path = metadata_file(tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, time; from dra_metadata import _fence\n"
            "fd = os.open(sys.argv[1], os.O_RDONLY); assert _fence.shared(fd, wait=0)\n"
            "print('held', flush=True); time.sleep(60)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        begun = time.monotonic()
        rewrite_in_place(path, stream(12))
        took = time.monotonic() - begun
    finally:
        holder.kill()
        holder.communicate()
    assert dm.read_file(path).metadata.generation == 12
    assert _fence.WRITER_WAIT <= took < _fence.WRITER_WAIT + 0.5, took


def test_a_reader_in_the_writers_own_process_is_fenced_too(tmp_path: Path) -> None:
    """Open-file-description locks: the same process's reader sees the writer's lock."""
    path = metadata_file(tmp_path)
    fd = os.open(path, os.O_WRONLY)
    reader = os.open(path, os.O_RDONLY)
    try:
        assert _fence.exclusive(fd)
        assert not _fence.shared(reader, wait=0)
        _fence.release(fd)
        assert _fence.shared(reader, wait=0)
        assert not _fence.exclusive(fd, wait=0)  # the reader's lock holds the writer back
    finally:
        os.close(reader)
        os.close(fd)


def test_the_fence_reaches_through_a_read_only_bind_mount(tmp_path: Path) -> None:
    """The publisher's in-place update, read through the container's bind mount mid-write."""
    try:
        tree = MountedMetadataTree(tmp_path / "node", tmp_path / "container", mode="in-place")
    except MountUnavailableError as err:
        pytest.skip(f"bind mounts refused here: {err.reason}")
    with tree:
        claim = tree.claim("c", namespace="ns", uid="u")
        claim.request("r").device(DRIVER, "p", "dev-0")
        tree.write()
        pub = tree.publisher(DRIVER)
        node = Path(pub.metadata_path(dm.ClaimRef(name="c", namespace="ns", uid="u"), "r"))
        mounted = tmp_path / "container" / "resourceclaims" / "c" / "r" / f"{DRIVER}-metadata.json"
        assert os.stat(node).st_ino == os.stat(mounted).st_ino
        with pytest.raises(OSError, match="Read-only file system"):
            os.open(mounted, os.O_WRONLY)  # read-only: no write lock can be taken here
        fd = os.open(node, os.O_WRONLY)
        reader = os.open(mounted, os.O_RDONLY)
        try:
            assert _fence.exclusive(fd)
            assert not _fence.shared(reader, wait=0)  # the same inode's lock, through the mount
        finally:
            _fence.release(fd)
            os.close(reader)
            os.close(fd)
