"""The publisher as root on a node: links, swaps, hard links, writers at once, kill -9, a full disk.

Everything is real: a second process swapping directories with
``renameat2(RENAME_EXCHANGE)``, links planted where the publisher's directories
and files belong, writer and reader processes, ``kill -9`` at random moments, a
64 KiB tmpfs. The default run is bounded (seconds per test); ``-m adversarial_long``
runs each swapping race for 20 s per operation and 300 kills per mode.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import dra_metadata as dm
from tests.conftest import REPO

DRIVER = "gpu.example.com"
CLAIM = dm.ClaimRef(name="c", namespace="ns", uid="u1")


def publisher(tmp: Path) -> dm.MetadataPublisher:
    """A publisher writing under tmp/plugins/<driver> and tmp/cdi."""
    return dm.MetadataPublisher(
        DRIVER, plugin_data_dir=tmp / "plugins" / DRIVER, cdi_dir=tmp / "cdi"
    )


def snapshot(root: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every entry below root (root included): mode, inode, links, and content digest or target."""
    found = {}
    for parent, dirs, files in os.walk(root):
        for name in [".", *dirs, *files]:
            path = os.path.join(parent, name)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            elif stat.S_ISLNK(info.st_mode):
                digest = os.readlink(path)
            else:
                digest = ""
            found[os.path.relpath(path, root)] = (
                info.st_mode,
                info.st_ino,
                info.st_nlink,
                digest,
            )
    return found


def victim(tmp: Path) -> Path:
    """A foreign tree outside the publisher's: a 0700 gpu/ with a 0600 metadata.json, and more."""
    root = tmp / "victim"
    (root / "gpu").mkdir(parents=True)
    os.chmod(root / "gpu", 0o700)
    (root / "gpu" / "metadata.json").write_bytes(b"secret\n")
    os.chmod(root / "gpu" / "metadata.json", 0o600)
    (root / "keep").write_bytes(b"keep\n")
    os.chmod(root / "keep", 0o600)
    return root


def end(proc: subprocess.Popen[str]) -> None:
    """Kill ``proc`` if it still runs, reap it and close its pipes."""
    proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def leftovers(*roots: Path) -> list[str]:
    """Temporaries of interrupted writes under roots."""
    return [
        os.path.join(parent, name)
        for root in roots
        for parent, _, names in os.walk(root)
        for name in names
        if name.endswith(".tmp")
    ]


# --- planted links, hard links, special files -------------------------------------------------

PLANTED = ["dra-device-metadata", "claim", "request"]


def plant(pub: dm.MetadataPublisher, where: str, target: Path) -> Path:
    """A link to target where the publisher's directory ``where`` belongs; returns the link."""
    link = {
        "dra-device-metadata": Path(pub.plugin_data_dir, "dra-device-metadata"),
        "claim": Path(pub.claim_dir(CLAIM)),
        "request": Path(pub.claim_dir(CLAIM), "gpu"),
    }[where]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link


@pytest.mark.parametrize("where", PLANTED)
def test_a_link_where_a_directory_belongs_is_refused_and_nothing_is_done_through_it(
    tmp_path: Path, where: str
) -> None:
    """prepare, update and unprepare: PublishError naming the link; the target is untouched."""
    pub = publisher(tmp_path)
    foreign = victim(tmp_path)
    target = {"dra-device-metadata": foreign, "claim": foreign, "request": foreign / "gpu"}[where]
    link = plant(pub, where, target)
    before = snapshot(foreign)
    with pytest.raises(dm.PublishError, match="not a directory") as err:
        pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    assert err.value.path == str(link)
    with pytest.raises((dm.PublishError, dm.MetadataNotFoundError)):
        pub.update(CLAIM, "gpu", [pub.device("n", "d")], mode="in-place")
    with pytest.raises(dm.PublishError, match=r"not a directory|not written by this publisher"):
        pub.unprepare(CLAIM)
    assert snapshot(foreign) == before
    assert link.is_symlink()


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo", "directory"])
@pytest.mark.parametrize("mode", ["replace", "in-place"])
def test_metadata_json_that_is_not_one_regular_file_is_replaced_or_refused_never_written_through(
    tmp_path: Path, kind: str, mode: str
) -> None:
    """A link, a hard link, a FIFO or a directory as metadata.json: the victim stays untouched.

    An atomic update renames over the name (nothing it points to is touched); an
    in-place one refuses to write through it; a directory is refused by both, with
    the command that removes it. Unprepare removes every file there, and names the
    directory with its fix; nothing of the claim is left but the planted directory.
    """
    pub = publisher(tmp_path)
    foreign = victim(tmp_path)
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    path = Path(pub.metadata_path(CLAIM, "gpu"))
    path.unlink()
    secret = foreign / "gpu" / "metadata.json"
    before = snapshot(foreign)  # a hard link adds a name to the victim; the publisher's goes
    if kind == "symlink":
        path.symlink_to(secret)
    elif kind == "hardlink":
        os.link(secret, path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()

    def update() -> dm.DeviceMetadata:
        return pub.update(CLAIM, "gpu", [pub.device("n", "d")], mode=mode)  # type: ignore[arg-type]

    if kind == "directory":
        with pytest.raises(
            dm.PublishError, match=r"a directory where .* \(rm -r .*metadata\.json\)"
        ):
            update()
        with pytest.raises(
            dm.PublishError, match=r"a directory where .* \(rm -r .*metadata\.json\)"
        ):
            pub.unprepare(CLAIM)
        assert path.is_dir()
        assert [p for p in Path(pub.claim_dir(CLAIM)).rglob("*") if p != path] == [path.parent]
    else:
        if mode == "in-place":
            with pytest.raises(
                dm.PublishError,
                match=r"metadata\.json: (a link|not a regular|a file with).*"
                r"\(rm .*metadata\.json\)",
            ):
                update()
        else:
            assert update().metadata.generation == 2
            assert path.is_file()
            assert not path.is_symlink()
            assert os.stat(path).st_nlink == 1
        pub.unprepare(CLAIM)
        assert not Path(pub.claim_dir(CLAIM)).exists()
    assert os.listdir(pub.cdi_dir) == []
    assert snapshot(foreign) == before
    assert os.stat(secret).st_mode & 0o777 == 0o600


def test_a_directory_with_a_spec_name_in_the_cdi_dir_does_not_stop_unprepare(
    tmp_path: Path,
) -> None:
    """It was not written here: unprepare removes the claim's own files and leaves it.

    A spec name of a request the claim does not have is not looked at; one of a
    request it has is named, with the command that removes it.
    """
    pub = publisher(tmp_path)
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    squatter = Path(pub.cdi_spec_path(CLAIM, "other"))
    squatter.mkdir()
    (squatter / "x").write_text("x")
    pub.unprepare(CLAIM)
    assert sorted(os.listdir(pub.cdi_dir)) == [squatter.name]
    assert not Path(pub.claim_dir(CLAIM)).exists()
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    Path(pub.cdi_spec_path(CLAIM, "gpu")).unlink()
    Path(pub.cdi_spec_path(CLAIM, "gpu")).mkdir()
    with pytest.raises(dm.PublishError, match=r"a directory where the request's CDI spec .*rm -r"):
        pub.unprepare(CLAIM)
    assert not Path(pub.claim_dir(CLAIM)).exists()
    spec = Path(pub.cdi_spec_path(CLAIM, "gpu"))
    assert sorted(os.listdir(pub.cdi_dir)) == sorted([squatter.name, spec.name])


def test_unprepare_removes_only_what_the_publisher_writes(tmp_path: Path) -> None:
    """Foreign files in the claim's directory stay and are named; the rest goes."""
    pub = publisher(tmp_path)
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    pub.prepare(CLAIM, "nic", [pub.device("n", "e")])
    foreign = Path(pub.claim_dir(CLAIM), "gpu", "notes.txt")
    foreign.write_text("mine")
    with pytest.raises(
        dm.PublishError, match=r"left 1 path: .*gpu/notes\.txt: not written by this"
    ):
        pub.unprepare(CLAIM)
    assert foreign.read_text() == "mine"
    assert not Path(pub.metadata_path(CLAIM, "gpu")).exists()
    assert not Path(pub.claim_dir(CLAIM), "nic").exists()
    assert os.listdir(pub.cdi_dir) == []


# --- a second process swapping directories for links --------------------------------------------

SWAPPER = textwrap.dedent(
    """
    import ctypes, os, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = libc.renameat2
    c_int, c_path = ctypes.c_int, ctypes.c_char_p
    renameat2.argtypes = (c_int, c_path, c_int, c_path, ctypes.c_uint)
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    pairs = [(a.encode(), b.encode()) for a, b in zip(sys.argv[1::2], sys.argv[2::2])]
    swaps = 0
    print("ready", flush=True)
    end = time.monotonic() + 3600
    while time.monotonic() < end:
        for a, b in pairs:
            if renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
                swaps += 1
                renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
        if swaps % 64 == 0 and os.getppid() == 1:
            break
    """
)


def swap_pairs(pub: dm.MetadataPublisher, foreign: Path, tmp: Path) -> list[str]:
    """For each of the publisher's directories, a link to the victim to swap it with.

    The links wait in ``tmp/swaps`` (same file system, outside both trees), so that
    between swaps the publisher's directories hold only what it wrote.
    """
    pairs = []
    swaps = tmp / "swaps"
    swaps.mkdir()
    for where, target in (
        ("dra-device-metadata", foreign),
        ("claim", foreign),
        ("request", foreign / "gpu"),
    ):
        real = {
            "dra-device-metadata": Path(pub.plugin_data_dir, "dra-device-metadata"),
            "claim": Path(pub.claim_dir(CLAIM)),
            "request": Path(pub.claim_dir(CLAIM), "gpu"),
        }[where]
        real.mkdir(parents=True, exist_ok=True)
        link = swaps / where
        link.symlink_to(target)
        pairs += [str(real), str(link)]
    return pairs


def run_swapping(tmp_path: Path, operation: str, seconds: float) -> tuple[int, int, int]:
    """Run ``operation`` in a loop for ``seconds`` while a process swaps each directory with a
    link to a victim; return (calls, refusals, changes to the victim)."""
    pub = publisher(tmp_path)
    foreign = victim(tmp_path)
    pairs = swap_pairs(pub, foreign, tmp_path)
    before = snapshot(foreign)
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, *pairs], stdout=subprocess.PIPE, text=True
    )
    calls = refused = 0
    try:
        assert swapper.stdout is not None
        assert swapper.stdout.readline() == "ready\n"
        deadline = time.monotonic() + seconds
        device = pub.device("n", "d")
        while time.monotonic() < deadline:
            calls += 1
            try:
                if operation == "prepare":
                    pub.prepare(CLAIM, "gpu", [device])
                elif operation == "unprepare":
                    try:
                        pub.prepare(CLAIM, "gpu", [device])
                    finally:
                        pub.unprepare(CLAIM)
                else:
                    mode = "in-place" if operation == "update-in-place" else "replace"
                    try:
                        pub.update(CLAIM, "gpu", [device], mode=mode)  # type: ignore[arg-type]
                    except dm.MetadataNotFoundError:
                        pub.prepare(CLAIM, "gpu", [device])
            except dm.PublishError:
                refused += 1
    finally:
        end(swapper)
    after = snapshot(foreign)
    changed = sum(1 for key in before.keys() | after.keys() if before.get(key) != after.get(key))
    return calls, refused, changed


OPERATIONS = ["prepare", "update-replace", "update-in-place", "unprepare"]


@pytest.mark.parametrize("operation", OPERATIONS)
def test_swapping_directories_for_links_changes_nothing_outside(
    tmp_path: Path, operation: str
) -> None:
    """Two seconds of swaps per operation: refusals, never a change to the victim."""
    calls, _refused, changed = run_swapping(tmp_path, operation, 2.0)
    assert calls > 10
    assert changed == 0, f"{changed} changes outside the trees in {calls} calls"


@pytest.mark.adversarial_long
@pytest.mark.parametrize("operation", OPERATIONS)
def test_swapping_directories_for_links_for_20_seconds(tmp_path: Path, operation: str) -> None:
    """The issue's measure: at least 20 s of swaps per operation, zero changes outside."""
    calls, refused, changed = run_swapping(tmp_path, operation, 20.0)
    print(f"{operation}: {calls} calls, {refused} refused, {changed} changes outside")
    assert calls > 100
    assert changed == 0


# --- one writer at a time -------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import dra_metadata as dm
    pub = dm.MetadataPublisher("gpu.example.com", plugin_data_dir=sys.argv[2], cdi_dir=sys.argv[3])
    claim = dm.ClaimRef(name="c", namespace="ns", uid="u1")
    device = pub.device("n", "d", attributes={"pad": "x" * 60})
    print("ready", flush=True)
    sys.stdin.readline()
    got = [pub.update(claim, "gpu", [device], mode=sys.argv[5]).metadata.generation
           for _ in range(int(sys.argv[4]))]
    print(json.dumps(got), flush=True)
    """
)

READER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[1])
    import dra_metadata as dm
    last = downs = reads = broken = 0
    print("ready", flush=True)
    import select
    while not select.select([sys.stdin], [], [], 0)[0]:
        try:
            generation = dm.read_file(sys.argv[2]).metadata.generation
        except dm.DRAMetadataError:
            broken += 1
            continue
        reads += 1
        if generation < last:
            downs += 1
        last = max(last, generation)
    print(reads, downs, broken, flush=True)
    """
)


def concurrent_updates(
    tmp_path: Path, processes: int, each: int, mode: str
) -> tuple[list[int], int, int, int, int]:
    """``processes`` writers of ``each`` updates and one reader at once.

    Returns every generation the writers got, the file's last generation, and the
    reader's reads, decreases seen and reads that did not decode.
    """
    pub = publisher(tmp_path)
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    args = [str(REPO), pub.plugin_data_dir, pub.cdi_dir]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, *args, str(each), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(REPO), pub.metadata_path(CLAIM, "gpu")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        for proc in [*writers, reader]:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
        for proc in writers:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        got = []
        for proc in writers:
            out, _ = proc.communicate(timeout=600)
            assert proc.returncode == 0
            got += json.loads(out)
        out, _ = reader.communicate("stop\n", timeout=60)
        reads, downs, broken = (int(x) for x in out.split())
    finally:
        for proc in [*writers, reader]:
            end(proc)
    last = dm.read_file(pub.metadata_path(CLAIM, "gpu")).metadata.generation
    return got, last, reads, downs, broken


def test_four_processes_of_150_updates_end_at_generation_601(tmp_path: Path) -> None:
    """Serialised: 600 distinct generations 2..601, a reader never sees one go down or torn."""
    got, last, reads, downs, broken = concurrent_updates(tmp_path, 4, 150, "replace")
    assert sorted(got) == list(range(2, 602))
    assert last == 601
    assert reads > 0
    assert downs == 0
    assert broken == 0


def test_in_place_updates_from_four_processes_never_go_down(tmp_path: Path) -> None:
    """In place: the same count; a reader may catch a torn file (documented), never a lower one."""
    got, last, _reads, downs, _broken = concurrent_updates(tmp_path, 4, 25, "in-place")
    assert sorted(got) == list(range(2, 102))
    assert last == 101
    assert downs == 0


def test_four_threads_of_50_updates_end_at_generation_201(tmp_path: Path) -> None:
    """Threads of one process are serialised too (each call opens its own lock)."""
    pub = publisher(tmp_path)
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    got: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(50):
            generation = pub.update(CLAIM, "gpu", [pub.device("n", "d")]).metadata.generation
            with lock:
                got.append(generation)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == list(range(2, 202))
    assert dm.read_file(pub.metadata_path(CLAIM, "gpu")).metadata.generation == 201


UPDATER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    import dra_metadata as dm
    pub = dm.MetadataPublisher("gpu.example.com", plugin_data_dir=sys.argv[2], cdi_dir=sys.argv[3])
    claim = dm.ClaimRef(name="c", namespace="ns", uid="u1")
    device = pub.device("n", "d")
    done = missing = 0
    print("ready", flush=True)
    import select
    while not select.select([sys.stdin], [], [], 0)[0]:
        try:
            pub.update(claim, "gpu", [device])
            done += 1
        except dm.MetadataNotFoundError:
            missing += 1
    print(done, missing, flush=True)
    """
)


def test_an_update_racing_unprepare_fails_cleanly_and_leaves_nothing(tmp_path: Path) -> None:
    """An updating process against 100 prepare/unprepare rounds: after each unprepare, nothing."""
    pub = publisher(tmp_path)
    updater = subprocess.Popen(
        [sys.executable, "-c", UPDATER, str(REPO), pub.plugin_data_dir, pub.cdi_dir],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    dirty = 0
    pauses = random.Random(0)  # the same pauses every run
    try:
        assert updater.stdout is not None
        assert updater.stdout.readline() == "ready\n"
        for _ in range(100):
            pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
            time.sleep(pauses.uniform(0, 0.01))
            pub.unprepare(CLAIM)
            # (the lock file may be the racing update's own, for the moment it fails)
            left = [pub.claim_dir(CLAIM), pub.state_path(CLAIM)]
            if any(os.path.lexists(path) for path in left) or os.listdir(pub.cdi_dir):
                dirty += 1
        out, err = updater.communicate("stop\n", timeout=60)
    finally:
        end(updater)
    assert updater.returncode == 0, err
    done, missing = (int(x) for x in out.split())
    assert dirty == 0
    assert done + missing > 0
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])  # after unprepare: generation 1, as Go
    assert dm.read_file(pub.metadata_path(CLAIM, "gpu")).metadata.generation == 1


# --- kill -9 at random moments --------------------------------------------------------------------

VICTIM_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    import dra_metadata as dm
    pub = dm.MetadataPublisher("gpu.example.com", plugin_data_dir=sys.argv[2], cdi_dir=sys.argv[3])
    claim = dm.ClaimRef(name="c", namespace="ns", uid="u1")
    big = [pub.device("n", f"d{i}", attributes={"pad": "x" * 60}) for i in range(40)]
    print("ready", flush=True)
    while True:
        pub.update(claim, "gpu", big, mode=sys.argv[4])
        pub.prepare(claim, "gpu", big)
    """
)


def kill_runs(tmp_path: Path, mode: str, runs: int) -> tuple[int, int, int]:
    """``runs`` writers killed at random moments; after each the next call is made.

    Returns (files that did not decode after a kill, generations that went back,
    temporaries that survived the next call, or the unprepare at the end). The next
    call is an update, which writes the state and the file but not the CDI spec: the
    spec's temporary (hidden, and no ``.json``: CDI never reads it) waits for the
    next prepare or the unprepare.
    """
    pub = publisher(tmp_path)
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    path = pub.metadata_path(CLAIM, "gpu")
    undecodable = back = survived = 0
    highest = 1
    rng = random.Random(19)
    for _ in range(runs):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                VICTIM_WRITER,
                str(REPO),
                pub.plugin_data_dir,
                pub.cdi_dir,
                mode,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0.0, 0.05))
        end(proc)
        try:
            seen = dm.read_file(path).metadata.generation
            if seen < highest:
                back += 1
            highest = max(highest, seen)
        except dm.DRAMetadataError:
            undecodable += 1
        generation = pub.update(CLAIM, "gpu", [pub.device("n", "d")]).metadata.generation
        if generation <= highest:
            back += 1
        highest = generation
        survived += len(leftovers(Path(pub.plugin_data_dir)))
    pub.unprepare(CLAIM)
    survived += len(leftovers(Path(pub.plugin_data_dir), Path(pub.cdi_dir)))
    assert os.listdir(pub.cdi_dir) == []
    assert not Path(pub.claim_dir(CLAIM)).exists()
    return undecodable, back, survived


@pytest.mark.parametrize("mode", ["replace", "in-place"])
def test_kill_9_never_moves_the_generation_back(tmp_path: Path, mode: str) -> None:
    """12 kills per mode: no undecodable file in replace mode, no generation back, no temporary."""
    undecodable, back, survived = kill_runs(tmp_path, mode, 12)
    if mode == "replace":
        assert undecodable == 0
    assert back == 0
    assert survived == 0


@pytest.mark.adversarial_long
@pytest.mark.parametrize("mode", ["replace", "in-place"])
def test_300_kills_per_mode(tmp_path: Path, mode: str) -> None:
    """The issue's measure: 300 kill -9 runs per mode."""
    undecodable, back, survived = kill_runs(tmp_path, mode, 300)
    print(f"{mode}: {undecodable} undecodable after a kill, {back} back, {survived} temporaries")
    if mode == "replace":
        assert undecodable == 0
    assert back == 0
    assert survived == 0


# --- a full disk ---------------------------------------------------------------------------


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (root only)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to mount a 64 KiB tmpfs")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize("mode", ["replace", "in-place"])
def test_a_full_disk_keeps_the_old_file_whole(small_tmpfs: Path, mode: str) -> None:
    """An update that does not fit: PublishError, the old file whole, no temporary; then on."""
    pub = dm.MetadataPublisher(
        DRIVER, plugin_data_dir=small_tmpfs / DRIVER, cdi_dir=small_tmpfs / "cdi"
    )
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    path = Path(pub.metadata_path(CLAIM, "gpu"))
    before = path.read_bytes()
    big = [pub.device("n", f"d{i}", attributes={"pad": "x" * 60}) for i in range(400)]
    with pytest.raises(dm.PublishError, match="no space left on device"):
        pub.update(CLAIM, "gpu", big, mode=mode)  # type: ignore[arg-type]
    assert path.read_bytes() == before
    assert leftovers(small_tmpfs) == []
    written = pub.update(CLAIM, "gpu", [pub.device("n", "e")], mode=mode)  # type: ignore[arg-type]
    assert written.metadata.generation == 3  # the failed update's 2 was kept: never reused
    pub.unprepare(CLAIM)
    assert os.listdir(pub.cdi_dir) == []


# --- another uid ---------------------------------------------------------------------------


def test_a_publisher_without_rights_gets_a_publish_error_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """As an unprivileged uid on root's directories: each call a PublishError naming the path."""
    from tests.adversarial._asuser import CHMOD_UID, need_root, run_as

    need_root()
    pub = publisher(tmp_path)
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    os.chmod(tmp_path, 0o755)
    before = snapshot(tmp_path / "plugins")

    def child() -> int:
        other = dm.ClaimRef(name="other", namespace="ns", uid="u2")
        for call in (
            lambda: pub.prepare(other, "gpu", [pub.device("n", "d")]),
            lambda: pub.update(CLAIM, "gpu", [pub.device("n", "d")]),
            lambda: pub.unprepare(CLAIM),
        ):
            try:
                call()
            except dm.PublishError as err:
                os.write(1, f"PublishError {err.path}\n".encode())
        return 0

    result = run_as(CHMOD_UID, child)
    assert result.status == 0, result.stderr
    assert result.stderr == b""
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 3
    assert all(line.startswith(f"PublishError {pub.plugin_data_dir}") for line in lines)
    assert snapshot(tmp_path / "plugins") == before
