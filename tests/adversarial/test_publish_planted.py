"""Whatever is planted at a claim's own paths, no claim is wedged: each call works or says the fix.

The matrix: the claim's lock, its state, the state's temporary, the CDI lock, the
CDI spec's temporary and the request's metadata file, each replaced by a symbolic
link (to a file outside), a FIFO, a directory, a socket, an immutable file, an
append-only file, a hard link (to a file outside), a huge file or a file of mode
000, on a claim prepared before or not. Then ``prepare``, ``update`` (when the
claim is prepared) and ``unprepare`` run, for real, as root where the machine
allows it:

* every call succeeds, or raises a :class:`~dra_metadata.PublishError` whose
  message holds the command that clears what is in the way (``rm``, ``rm -r``,
  ``chattr -i -a ... && rm``) or says to unprepare the claim;
* nothing outside the publisher's directories changes (the link's and the hard
  link's target keep their bytes and mode);
* after ``unprepare`` nothing of the claim is left but the planted thing (and
  the directories that hold it);
* the command the error gives, run in a shell, clears it: ``unprepare`` then
  succeeds and leaves nothing, and the claim prepares again at generation 1.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import socket
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import dra_metadata as dm

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the matrix plants as root")

DRIVER = "gpu.example.com"
CLAIM = dm.ClaimRef(name="c", namespace="ns", uid="u1")
#: The command an error gives to clear what is in the way.
FIX = re.compile(r"\((?P<command>(?:rm|chattr) [^)]*)\)")
_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_IMMUTABLE = 0x10
_APPEND = 0x20
HUGE = 17 << 20  # over the readers' 16 MiB, and the state's 1 MiB


def publisher(tmp: Path) -> dm.MetadataPublisher:
    return dm.MetadataPublisher(
        DRIVER, plugin_data_dir=tmp / "plugin", cdi_dir=tmp / "cdi", lock_timeout=5
    )


def where(pub: dm.MetadataPublisher, path: str) -> Path:
    """The claim's path of that name."""
    spec = Path(pub.cdi_spec_path(CLAIM, "gpu"))
    state = Path(pub.state_path(CLAIM))
    return {
        "lock": Path(pub.lock_path(CLAIM)),
        "state": state,
        "state temporary": state.with_name(f".{state.name}.tmp"),
        "CDI lock": Path(pub.cdi_lock_path(CLAIM)),
        "spec temporary": spec.with_name(f".{spec.name}.tmp"),
        "metadata file": Path(pub.metadata_path(CLAIM, "gpu")),
    }[path]


def set_flags(path: Path, flags: int) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        current = int.from_bytes(fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(8))[:4], "little")
        new = (current | flags) if flags else (current & ~(_IMMUTABLE | _APPEND))
        fcntl.ioctl(fd, _FS_IOC_SETFLAGS, new.to_bytes(8, "little"))
    finally:
        os.close(fd)


def flags_work(directory: Path) -> str | None:
    """None when this file system takes the immutable flag and chattr is there; else why not."""
    if shutil.which("chattr") is None:
        return "no chattr on PATH (e2fsprogs)"
    probe = directory / "probe"
    probe.write_bytes(b"")
    try:
        set_flags(probe, _IMMUTABLE)
        set_flags(probe, 0)
    except OSError as err:
        return f"the file system of {directory} refuses chattr +i: {err.strerror}"
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return None


def _file(data: bytes, mode: int = 0o644) -> Callable[[Path, Path], None]:
    def put(path: Path, _victim: Path) -> None:
        path.write_bytes(data)
        path.chmod(mode)

    return put


def _immutable(flag: int) -> Callable[[Path, Path], None]:
    def put(path: Path, _victim: Path) -> None:
        path.write_bytes(b"planted\n")
        set_flags(path, flag)

    return put


def _socket(path: Path, _victim: Path) -> None:
    here = os.getcwd()
    os.chdir(path.parent)  # a socket's path has 108 bytes at most: bind it by its name
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(path.name)
    finally:
        os.chdir(here)


def _directory(path: Path, _victim: Path) -> None:
    path.mkdir()
    (path / "inside").write_bytes(b"x")


def _huge(path: Path, _victim: Path) -> None:
    with open(path, "wb") as out:
        out.truncate(HUGE)


KINDS: dict[str, Callable[[Path, Path], None]] = {
    "symlink": lambda path, victim: path.symlink_to(victim),
    "FIFO": lambda path, _victim: os.mkfifo(path),
    "directory": _directory,
    "socket": _socket,
    "immutable": _immutable(_IMMUTABLE),
    "append-only": _immutable(_APPEND),
    "hard link": lambda path, victim: os.link(victim, path),
    "huge": _huge,
    "mode 000": _file(b"{not metadata\n", 0),
}
PATHS = ["lock", "state", "state temporary", "CDI lock", "spec temporary", "metadata file"]


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Path]:
    """A scratch directory whose flags are cleared at the end, so that it can be removed."""
    yield tmp_path
    for path in tmp_path.rglob("*"):
        if not path.is_symlink() and (path.is_file() or path.is_dir()):
            with contextlib.suppress(OSError):
                set_flags(path, 0)


def snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(path.relative_to(directory)): (path.lstat().st_mode, path.read_bytes())
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def claim_files(pub: dm.MetadataPublisher) -> list[Path]:
    """Everything under the publisher's two directories but the directories themselves."""
    found: list[Path] = []
    for root in (Path(pub.plugin_data_dir), Path(pub.cdi_dir)):
        if root.exists():
            found.extend(p for p in root.rglob("*") if p.is_symlink() or not p.is_dir())
            found.extend(p for p in root.rglob("*") if p.is_dir() and not any(p.iterdir()))
    return sorted(found)


def structural(pub: dm.MetadataPublisher, path: Path) -> bool:
    """The publisher's own empty directories, which any node keeps."""
    return path in {Path(pub.lock_path(CLAIM)).parent, Path(pub.claim_dir(CLAIM)).parent}


def outcome(call: Callable[[], object]) -> str:
    """``ok``, or the PublishError's message (anything else fails the test)."""
    try:
        call()
    except dm.PublishError as err:
        return str(err)
    return "ok"


def has_fix(message: str) -> bool:
    return message == "ok" or bool(FIX.search(message)) or "unprepare the claim" in message


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "not-prepared"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("path", PATHS)
def test_a_planted_file_never_wedges_the_claim(
    node: Path, path: str, kind: str, prepared: bool
) -> None:
    """Every call ok or a PublishError with its fix; unprepare leaves only the planted thing."""
    if kind in ("immutable", "append-only"):
        why = flags_work(node)
        if why is not None:
            pytest.skip(why)
    pub = publisher(node)
    gpu = pub.device("n", "gpu-0", attributes={"uuid": "GPU-1"})
    outside = node / "outside"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_bytes(b"secret\n")
    victim.chmod(0o600)
    if prepared:
        pub.prepare(CLAIM, "gpu", [gpu])
    target = where(pub, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        target.unlink()
    before = snapshot(outside)
    KINDS[kind](target, victim)

    outcomes = {"prepare": outcome(lambda: pub.prepare(CLAIM, "gpu", [gpu]))}
    if outcomes["prepare"] == "ok" or prepared:
        outcomes["update"] = outcome(lambda: pub.update(CLAIM, "gpu", [gpu]))
    outcomes["unprepare"] = outcome(lambda: pub.unprepare(CLAIM))
    without_fix = {call: message for call, message in outcomes.items() if not has_fix(message)}
    assert without_fix == {}

    planted = target if (target.exists() or target.is_symlink()) else None
    left = [
        p
        for p in claim_files(pub)
        if not structural(pub, p)
        and planted is not None
        and p != planted
        and planted not in p.parents
        and p not in planted.parents
    ]
    if planted is None:
        left = [p for p in claim_files(pub) if not structural(pub, p)]
    assert left == []
    if planted is not None and outcomes["unprepare"] != "ok":
        assert str(planted) in outcomes["unprepare"]
    assert snapshot(outside) == before
    assert victim.stat().st_nlink == 1 or kind == "hard link"

    # The fix an error gives, run as given, clears it for good (an unprepare of a claim
    # that was never prepared does nothing, and says nothing: prepare's error says it).
    fixes = [FIX.search(message) for message in outcomes.values()]
    fix = next((found["command"] for found in reversed(fixes) if found is not None), None)
    if planted is not None and (planted.exists() or planted.is_symlink()):
        assert fix is not None, outcomes
        subprocess.run(["sh", "-c", fix], check=True)
        pub.unprepare(CLAIM)  # raises if anything is left
    assert [p for p in claim_files(pub) if not structural(pub, p)] == []
    pub.prepare(CLAIM, "gpu", [gpu])
    assert dm.read_file(pub.metadata_path(CLAIM, "gpu")).metadata.generation == 1
    pub.unprepare(CLAIM)
    assert stat.S_ISREG(victim.lstat().st_mode)
