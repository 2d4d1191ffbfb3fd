"""The publisher's own files under faults: a bad state, a lock held elsewhere, forks, a rival.

Nothing wedges: whatever the state file holds, three calls in a row of each kind
end in success or in a :class:`~dra_metadata.PublishError` that says what to do,
and ``unprepare()`` always removes the claim. A lock held by another process
ends in an error naming it within ``lock_timeout``; a child forked or a program
executed while a call holds the lock never keeps the claim locked. Two
publishers of one driver with their own plugin data directories on one CDI
directory never overwrite or remove each other's specs. Every holder, child and
rival is a real process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import dra_metadata as dm
from tests.conftest import REPO
from tests.test_lockfile import LIST_FDS, can_lock, held_elsewhere

DRIVER = "gpu.example.com"
CLAIM = dm.ClaimRef(name="c", namespace="ns", uid="u1")


def publisher(tmp: Path, lock_timeout: float = 30.0) -> dm.MetadataPublisher:
    """A publisher writing under tmp/plugins/<driver> and tmp/cdi."""
    return dm.MetadataPublisher(
        DRIVER,
        plugin_data_dir=tmp / "plugins" / DRIVER,
        cdi_dir=tmp / "cdi",
        lock_timeout=lock_timeout,
    )


def generation_on_disk(pub: dm.MetadataPublisher) -> int:
    """The generation of the claim's gpu file."""
    return dm.read_file(pub.metadata_path(CLAIM, "gpu")).metadata.generation


# --- whatever the state holds ---------------------------------------------------------------


def _write(data: bytes) -> Callable[[Path, Path], None]:
    def put(state: Path, _outside: Path) -> None:
        state.write_bytes(data)

    return put


def _directory(state: Path, _outside: Path) -> None:
    state.mkdir()
    (state / "inside").write_bytes(b"")


def _link(state: Path, outside: Path) -> None:
    state.symlink_to(outside)


def _fifo(state: Path, _outside: Path) -> None:
    os.mkfifo(state)


def _hard_link(state: Path, outside: Path) -> None:
    os.link(outside, state)


def _entry(generation: str) -> bytes:
    return b'{"requests": {"gpu": {"generation": %s, "podClaimName": null}}}' % generation.encode()


#: What a state file can be, and how to make it so.
STATES: dict[str, Callable[[Path, Path], None]] = {
    "empty": _write(b""),
    "torn": _write(_entry("2")[:30]),
    "garbage": _write(b"\x00\xff\xfe not json at all \x80\n"),
    "other schema": _write(b'{"version": 2, "claims": ["ns/c"]}'),
    "other schema entry": _write(b'{"requests": {"gpu": {"gen": 9}}}'),
    "not an object": _write(b"[1, 2, 3]"),
    "huge": _write(b'{"requests": {}}' + b" " * (2 << 20)),
    "huge generation": _write(_entry(str(10**30))),
    "many digits": _write(_entry("1" + "0" * 5000)),
    "negative": _write(_entry("-5")),
    "zero": _write(_entry("0")),
    "1e400": _write(_entry("1e400")),
    "float": _write(_entry("2.5")),
    "bool": _write(_entry("true")),
    "deep nesting": _write(b"[" * 200_000 + b"]" * 200_000),
    "deep nesting in an entry": _write(b'{"requests": {"gpu": ' + b"[" * 200_000),
    "a directory": _directory,
    "a link": _link,
    "a fifo": _fifo,
    "a hard link": _hard_link,
}


#: How a directory at the state's name is refused: named, with the command that removes it.
FIX_STATE_DIR = re.compile(r"\.state: a directory where the claim's state belongs, .*\(rm -r .*\)")


def run_three(call: Callable[[], object]) -> list[str]:
    """Three calls in a row: "ok" or the PublishError's message each; anything else fails."""
    outcomes = []
    for _ in range(3):
        try:
            call()
        except dm.PublishError as err:
            outcomes.append(str(err))
        else:
            outcomes.append("ok")
    return outcomes


@pytest.fixture
def spoiled(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[dm.MetadataPublisher, Path]:
    """A claim prepared and updated once (generation 2), then its state made ``request.param``.

    Returns the publisher and a file outside its trees (holding a state at
    generation 50) that a link or hard link in the state's place points to.
    """
    pub = publisher(tmp_path)
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    pub.update(CLAIM, "gpu", [pub.device("n", "d")])
    outside = tmp_path / "outside.state"
    outside.write_bytes(_entry("50"))
    state = Path(pub.state_path(CLAIM))
    state.unlink()
    STATES[request.param](state, outside)
    return pub, outside


@pytest.mark.parametrize("spoiled", STATES, indirect=True)
def test_prepare_falls_back_to_the_files_generation_or_says_how_to_recover(
    spoiled: tuple[dm.MetadataPublisher, Path],
) -> None:
    """prepare x3 over a bad state: generations 3, 4, 5 from the file, or a PublishError."""
    pub, outside = spoiled
    device = pub.device("n", "d")
    generations: list[int] = []

    def prepare() -> None:
        pub.prepare(CLAIM, "gpu", [device])
        generations.append(generation_on_disk(pub))

    outcomes = run_three(prepare)
    if Path(pub.state_path(CLAIM)).is_dir():
        assert all(FIX_STATE_DIR.search(o) for o in outcomes), outcomes
        assert generation_on_disk(pub) == 2  # nothing written
    else:
        assert outcomes == ["ok"] * 3
        assert generations == [3, 4, 5]
    assert outside.read_bytes() == _entry("50")  # never read or written through a link


@pytest.mark.parametrize("spoiled", STATES, indirect=True)
def test_update_falls_back_to_the_files_generation_or_says_how_to_recover(
    spoiled: tuple[dm.MetadataPublisher, Path],
) -> None:
    """update x3 over a bad state: generations 3, 4, 5 from the file, or a PublishError."""
    pub, outside = spoiled
    device = pub.device("n", "d")
    generations: list[int] = []
    outcomes = run_three(
        lambda: generations.append(pub.update(CLAIM, "gpu", [device]).metadata.generation)
    )
    if Path(pub.state_path(CLAIM)).is_dir():
        assert all(FIX_STATE_DIR.search(o) for o in outcomes), outcomes
        assert generation_on_disk(pub) == 2
    else:
        assert outcomes == ["ok"] * 3
        assert generations == [3, 4, 5]
        assert generation_on_disk(pub) == 5
    assert outside.read_bytes() == _entry("50")


@pytest.mark.parametrize("spoiled", STATES, indirect=True)
def test_unprepare_removes_the_claim_whatever_the_state_holds(
    spoiled: tuple[dm.MetadataPublisher, Path],
) -> None:
    """unprepare x3 over a bad state: the files, spec and state are gone.

    Every call succeeds, but where a directory holds the state's place: each names it
    with the command that removes it, and removes the rest.
    """
    pub, outside = spoiled
    outcomes = run_three(lambda: pub.unprepare(CLAIM))
    if Path(pub.state_path(CLAIM)).is_dir():
        assert all(FIX_STATE_DIR.search(o) for o in outcomes), outcomes
    else:
        assert outcomes == ["ok"] * 3
    assert not os.path.exists(pub.claim_dir(CLAIM))
    assert os.listdir(pub.cdi_dir) == []  # the spec and the CDI lock
    state = Path(pub.state_path(CLAIM))
    assert state.is_dir() or not os.path.lexists(state)  # a directory is not the publisher's
    assert outside.read_bytes() == _entry("50")
    if not state.is_dir():
        pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
        assert generation_on_disk(pub) == 1  # unprepared: a new start


def test_a_bad_state_and_a_torn_file_refuse_with_the_way_out(tmp_path: Path) -> None:
    """No generation anywhere: prepare and update refuse, naming unprepare; after it, 1."""
    pub = publisher(tmp_path)
    device = pub.device("n", "d")
    pub.prepare(CLAIM, "gpu", [device])
    Path(pub.state_path(CLAIM)).write_bytes(b"{torn")
    Path(pub.metadata_path(CLAIM, "gpu")).write_bytes(b"{torn")
    for call in (
        lambda: pub.prepare(CLAIM, "gpu", [device]),
        lambda: pub.update(CLAIM, "gpu", [device]),
    ):
        with pytest.raises(dm.PublishError, match="unprepare the claim") as err:
            call()
        assert isinstance(err.value, dm.DecodeError)
        assert err.value.path == pub.metadata_path(CLAIM, "gpu")
        assert "the publisher's state is not one it wrote" in str(err.value)
    assert Path(pub.metadata_path(CLAIM, "gpu")).read_bytes() == b"{torn"
    pub.unprepare(CLAIM)
    pub.prepare(CLAIM, "gpu", [device])
    assert generation_on_disk(pub) == 1


# --- locks held elsewhere ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("which", "call"),
    # An update writes no CDI spec: it takes the claim's lock only.
    [("claim", call) for call in ("prepare", "update", "unprepare")]
    + [("cdi", call) for call in ("prepare", "unprepare")],
)
def test_a_lock_held_by_another_process_ends_in_an_error_naming_it(
    tmp_path: Path, which: str, call: str
) -> None:
    """lock_timeout bounds the wait; the PublishError names the lock file and the holder."""
    pub = publisher(tmp_path, lock_timeout=0.5)
    device = pub.device("n", "d")
    pub.prepare(CLAIM, "gpu", [device])
    path = pub.lock_path(CLAIM) if which == "claim" else pub.cdi_lock_path(CLAIM)
    calls: dict[str, Callable[[], object]] = {
        "prepare": lambda: pub.prepare(CLAIM, "gpu", [device]),
        "update": lambda: pub.update(CLAIM, "gpu", [device]),
        "unprepare": lambda: pub.unprepare(CLAIM),
    }
    with held_elsewhere(path) as holder:
        started = time.monotonic()
        with pytest.raises(dm.PublishError) as err:
            calls[call]()
        waited = time.monotonic() - started
    assert 0.5 <= waited < 10
    assert f"{path}: still locked after 0.5 s, held by process {holder.pid} (" in str(err.value)
    assert err.value.path == path
    assert generation_on_disk(pub) == 1  # nothing was written
    calls[call]()  # the holder gone, the same call goes through


def test_the_default_lock_timeout_is_30_seconds(tmp_path: Path) -> None:
    """The documented default; a timeout that is not a number of seconds is refused."""
    assert dm.MetadataPublisher(DRIVER).lock_timeout == 30.0
    bad: object
    for bad in (-1, float("nan"), float("inf"), "5", True):
        with pytest.raises(dm.PublishError, match="lock_timeout must be a number of seconds"):
            dm.MetadataPublisher(DRIVER, lock_timeout=bad)  # type: ignore[arg-type]  # refused


# --- children of a call that holds the lock -----------------------------------------------------


@contextmanager
def a_call_holding_the_lock(pub: dm.MetadataPublisher) -> Iterator[None]:
    """A prepare in another thread that holds the claim's lock for the block, then ends.

    It holds it because it waits for the claim's CDI lock, which another process
    holds until the block ends.
    """
    with held_elsewhere(pub.cdi_lock_path(CLAIM)):
        thread = threading.Thread(target=pub.prepare, args=(CLAIM, "gpu", [pub.device("n", "d")]))
        thread.start()
        deadline = time.monotonic() + 20
        while can_lock(pub.lock_path(CLAIM)):
            assert time.monotonic() < deadline, "the call never took the claim's lock"
            time.sleep(0.01)
        yield
    thread.join(30)
    assert not thread.is_alive()


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_child_forked_while_a_call_holds_the_lock_does_not_keep_it(tmp_path: Path) -> None:
    """os.fork() mid-call (a threaded driver's multiprocessing): after it, the lock is free."""
    pub = publisher(tmp_path)
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    pid = 0
    try:
        with a_call_holding_the_lock(pub):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child only sleeps
                time.sleep(60)
                os._exit(0)
        assert generation_on_disk(pub) == 2  # the call went through
        assert can_lock(pub.lock_path(CLAIM))  # while the child, with its copy, sleeps
        pub.update(CLAIM, "gpu", [pub.device("n", "d")])
    finally:
        if pid:
            os.kill(pid, 9)
            os.waitpid(pid, 0)


def test_a_program_started_while_a_call_holds_the_lock_inherits_none(tmp_path: Path) -> None:
    """A subprocess started mid-call without closing fds gets no lock or directory of ours."""
    pub = publisher(tmp_path)
    pub.prepare(CLAIM, "gpu", [pub.device("n", "d")])
    child: subprocess.Popen[str] | None = None
    try:
        with a_call_holding_the_lock(pub):
            child = subprocess.Popen(
                [sys.executable, "-c", LIST_FDS + "\nimport sys; sys.stdin.readline()"],
                close_fds=False,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert child.stdout is not None
            targets = json.loads(child.stdout.readline())
        assert generation_on_disk(pub) == 2
        assert can_lock(pub.lock_path(CLAIM))  # while the child runs
    finally:
        if child is not None:
            child.communicate("\n", timeout=30)
    assert any(target.startswith("pipe:") for target in targets)
    assert [t for t in targets if t.startswith(str(tmp_path))] == []


# --- two publishers of one driver on one CDI directory ----------------------------------------

RIVAL = textwrap.dedent(
    """
    import json, random, sys, time
    sys.path.insert(0, sys.argv[1])
    import dra_metadata as dm
    pub = dm.MetadataPublisher("gpu.example.com", plugin_data_dir=sys.argv[2], cdi_dir=sys.argv[3])
    rounds = int(sys.argv[4])
    rng = random.Random(sys.argv[5])  # the same choices and pauses every run
    device = pub.device("n", "d")
    claims = [dm.ClaimRef(name=f"c{i}", namespace="ns", uid=f"u{i}") for i in range(3)]
    counts = {"prepared": 0, "refused": 0, "lost": 0, "other": []}
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(rounds):
        claim = rng.choice(claims)
        try:
            pub.prepare(claim, "gpu", [device])
        except dm.PublishError as err:
            if "written by another publisher" in str(err):
                counts["refused"] += 1
            else:
                counts["other"].append(str(err))
            continue
        counts["prepared"] += 1
        time.sleep(rng.random() / 500)
        try:  # prepared: the spec must be this publisher's until it unprepares
            with open(pub.cdi_spec_path(claim, "gpu"), encoding="utf-8") as spec:
                mount = json.load(spec)["devices"][0]["containerEdits"]["mounts"][0]
            if mount["hostPath"] != pub.metadata_path(claim, "gpu"):
                counts["lost"] += 1
        except (OSError, ValueError):
            counts["lost"] += 1
        try:
            pub.unprepare(claim)
        except dm.PublishError as err:
            counts["other"].append(str(err))
    print(json.dumps(counts), flush=True)
    """
)


def test_two_publishers_on_one_cdi_dir_never_take_each_others_specs(tmp_path: Path) -> None:
    """Two processes, own plugin dirs, one CDI dir, same claims: refusals, never a lost spec."""
    rivals = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                RIVAL,
                str(REPO),
                str(tmp_path / f"plugins-{side}"),
                str(tmp_path / "cdi"),
                "300",
                side,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for side in "ab"
    ]
    results = []
    try:
        for rival in rivals:
            assert rival.stdout is not None
            assert rival.stdout.readline() == "ready\n"
        for rival in rivals:
            assert rival.stdin is not None
            rival.stdin.write("go\n")
            rival.stdin.flush()
        for rival in rivals:
            out, _ = rival.communicate(timeout=600)
            assert rival.returncode == 0
            results.append(json.loads(out))
    finally:
        for rival in rivals:
            rival.kill()
            rival.wait()
    assert [r["other"] for r in results] == [[], []]
    assert [r["lost"] for r in results] == [0, 0]
    assert all(r["prepared"] > 0 for r in results)
    assert sum(r["refused"] for r in results) > 0  # they did meet on a claim
    assert os.listdir(tmp_path / "cdi") == []  # every spec and lock went with its unprepare
