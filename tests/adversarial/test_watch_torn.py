"""A writer that overwrites a file in place, same length, no truncation, racing a watcher.

The writer is a real second process: each generation is written over the last
one with ``os.pwrite`` in several pieces, front to back, never truncating, so a
read between two pieces sees the first devices of the new generation and the
last ones of the old (``[44, 44, 44, 44, 43, 43, 43, 43]``), which still
decodes.

A writer that opens and closes the file for each overwrite, as every writer we
know does, is delivered on its close (``IN_CLOSE_WRITE``): no mixture at all,
even when it stalls 10 ms in the middle of every overwrite (the case a second
read 2 ms later cannot tell from a finished file). A writer that keeps the file
open across overwrites is covered by the second read alone: its stalls can
still be read as a mixture, rarely (the bounds below).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import dra_metadata as dm
from tests.conftest import REPO

DRIVER = "x.example.com"
DEVICES = 8
FIRST = 10000  # every generation has five digits: every stream has the same length

WRITER = r"""
import os, random, sys, time
import dra_metadata as dm

path, first, count, pieces = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
pause, stall, keep_open = float(sys.argv[5]), float(sys.argv[6]), sys.argv[7] == "open"

def stream(generation):
    devices = tuple(
        dm.Device("x.example.com", "p", f"dev-{i}",
                  attributes={"gen": dm.DeviceAttribute(int=generation)})
        for i in range(8)
    )
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid="u", generation=generation),
        requests=(dm.DeviceMetadataRequest("r", devices),),
    )
    return dm.encode(md)

blobs = [stream(g) for g in range(first, first + count)]
assert len({len(b) for b in blobs}) == 1, "streams of one length"
rng = random.Random(7)
fd = os.open(path, os.O_WRONLY) if keep_open else -1
print("ready", flush=True)
sys.stdin.readline()
for blob in blobs[1:]:
    if not keep_open:
        fd = os.open(path, os.O_WRONLY)
    size = -(-len(blob) // pieces)
    for index, offset in enumerate(range(0, len(blob), size)):
        os.pwrite(fd, blob[offset:offset + size], offset)
        if stall and index == pieces // 4 - 1:
            # Stalled a quarter of the way: in the middle of the stream's first object
            # (v1beta1; v1alpha1 follows), whose first devices are new, the others old.
            time.sleep(stall)
    if not keep_open:
        os.close(fd)
    time.sleep(rng.uniform(0, pause))
if keep_open:
    os.close(fd)
print("done", flush=True)
"""


def stream(generation: int) -> bytes:
    """What the writer writes for ``generation`` (eight devices carrying it)."""
    devices = tuple(
        dm.Device(DRIVER, "p", f"dev-{i}", attributes={"gen": dm.DeviceAttribute(int=generation)})
        for i in range(DEVICES)
    )
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid="u", generation=generation),
        requests=(dm.DeviceMetadataRequest("r", devices),),
    )
    return dm.encode(md)


def generations_of(md: dm.DeviceMetadata) -> list[int]:
    """The generation each device carries, in file order."""
    return [int(device.attribute("gen")) for _request, device in md.devices()]  # type: ignore[arg-type]


def race(
    root: Path,
    count: int,
    *,
    pieces: int = 16,
    pause: float = 0.004,
    stall: float = 0.0,
    keep_open: bool = False,
) -> tuple[int, int]:
    """Race the writer against ``dm.watch``: (torn objects delivered, objects delivered).

    ``stall``: seconds the writer sleeps a quarter of the way through every overwrite;
    ``keep_open``: one descriptor for every overwrite, closed at the end only.
    """
    directory = root / "resourceclaims" / "c" / "r"
    directory.mkdir(parents=True)
    path = directory / f"{DRIVER}-metadata.json"
    path.write_bytes(stream(FIRST))
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(path),
            str(FIRST),
            str(count),
            str(pieces),
            str(pause),
            str(stall),
            "open" if keep_open else "close",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    ) as writer:
        assert writer.stdin is not None
        assert writer.stdout is not None
        try:
            assert writer.stdout.readline() == "ready\n"
            torn = delivered = 0
            last_seen = None
            last = FIRST + count - 1
            budget = 60 + count * (0.01 + stall)
            events = dm.watch(claim="c", request="r", root=str(root), timeout=budget)
            started = False
            for event in events:
                if not started:
                    started = True
                    writer.stdin.write("go\n")
                    writer.stdin.flush()
                if event.kind != dm.WatchEventKind.UPDATE or event.metadata is None:
                    continue
                delivered += 1
                last_seen = event.generation
                seen = generations_of(event.metadata)
                if seen != [event.metadata.metadata.generation] * DEVICES:
                    torn += 1
                if event.generation == last:
                    break
            events.close()
            assert last_seen == last, "the last generation is delivered"
            assert writer.stdout.readline() == "done\n"
        finally:
            writer.kill()
    return torn, delivered


def test_no_torn_object_from_a_writer_that_stalls_mid_overwrite(tmp_path: Path) -> None:
    """1,000 in-place overwrites, each stalled 10 ms mid-object and then closed: none torn.

    The watch delivers on the writer's close: the stall is not a moment it reads
    in. (With the second read alone, two reads in the stall agree on the mixture:
    the watch before IN_CLOSE_WRITE delivered 199 mixtures of 200 here.)
    """
    torn, delivered = race(tmp_path, 1000, stall=0.01)
    assert delivered > 0
    assert torn == 0, f"{torn} of {delivered} delivered objects were torn"


def test_no_torn_object_from_a_same_length_in_place_writer(tmp_path: Path) -> None:
    """2,000 in-place overwrites in 16 pieces each, closed after each, back to back: none torn."""
    start = time.monotonic()
    torn, delivered = race(tmp_path, 2000)
    assert delivered > 0
    assert torn == 0, f"{torn} of {delivered} delivered objects were torn"
    assert time.monotonic() - start < 120


def test_a_writer_that_keeps_the_file_open_is_read_twice(tmp_path: Path) -> None:
    """2,000 overwrites through one descriptor: at most two mixtures delivered (one read: 4-8).

    No close is heard, so the second read 2 ms later is the only guard: zero is
    the usual answer; a writer stalled mid-overwrite past 2 ms can still be read
    as one mixture twice (about 1 delivery in 10,000 on a loaded machine).
    """
    torn, delivered = race(tmp_path, 2000, keep_open=True)
    assert delivered > 0
    assert torn <= 2, f"{torn} of {delivered} delivered objects were torn"


@pytest.mark.adversarial_long
def test_no_torn_object_over_a_long_race_with_stalls(tmp_path: Path) -> None:
    """20,000 overwrites, each stalled 10 ms mid-object and closed (about 4 minutes): none torn."""
    torn, delivered = race(tmp_path, 20000, stall=0.01)
    assert delivered > 0
    assert torn == 0, f"{torn} of {delivered} delivered objects were torn"


@pytest.mark.adversarial_long
def test_torn_objects_stay_rare_over_a_long_race_through_one_descriptor(tmp_path: Path) -> None:
    """20,000 overwrites through one descriptor: at most 1 torn delivery in 2,000.

    No reader can tell a writer stalled mid-overwrite for longer than the 2 ms
    between the two reads from one that finished, when it never closes the file:
    measured (2 CPUs, load 2.5-3), 1 torn of 8,000-11,000 deliveries in four runs
    of six (none in the other two), against 1 in 140-300 with one read.
    """
    torn, delivered = race(tmp_path, 20000, keep_open=True)
    assert delivered > 0
    assert torn <= delivered / 2000, f"{torn} of {delivered} delivered objects were torn"
