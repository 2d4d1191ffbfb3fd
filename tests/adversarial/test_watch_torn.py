"""A writer that overwrites a file in place, same length, no truncation, racing a watcher.

The writer is a real second process: each generation is written over the last
one with ``os.pwrite`` in several pieces, front to back, never truncating, so a
read between two pieces sees the first devices of the new generation and the
last ones of the old (``[44, 44, 44, 44, 43, 43, 43, 43]``), which still
decodes. The watcher must deliver no such mixture (the stable-read rule), and
still the last generation. The long version (``-m adversarial_long``) measures
the one case the rule cannot cover: a writer stalled mid-overwrite for longer
than the rule's 2 ms.
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
pause = float(sys.argv[5])

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
fd = os.open(path, os.O_WRONLY)
print("ready", flush=True)
sys.stdin.readline()
for blob in blobs[1:]:
    size = -(-len(blob) // pieces)
    for offset in range(0, len(blob), size):
        os.pwrite(fd, blob[offset:offset + size], offset)
    time.sleep(rng.uniform(0, pause))
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


def race(root: Path, count: int, *, pieces: int = 16, pause: float = 0.004) -> tuple[int, int]:
    """Race the writer against ``dm.watch``: (torn objects delivered, objects delivered)."""
    directory = root / "resourceclaims" / "c" / "r"
    directory.mkdir(parents=True)
    path = directory / f"{DRIVER}-metadata.json"
    path.write_bytes(stream(FIRST))
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(FIRST), str(count), str(pieces), str(pause)],
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
            events = dm.watch(claim="c", request="r", root=str(root), timeout=60 + count * 0.01)
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


def test_no_torn_object_from_a_same_length_in_place_writer(tmp_path: Path) -> None:
    """2,000 in-place overwrites in 16 pieces each: at most two mixtures delivered (one read: 4-8).

    Zero is the usual answer; a writer stalled mid-overwrite past the rule's 2 ms
    can still be read as one mixture twice (about 1 delivery in 10,000 on a loaded
    machine, see the long test), so the bound leaves room for that and still
    fails the one-read watcher, which delivers 4-8 here.
    """
    start = time.monotonic()
    torn, delivered = race(tmp_path, 2000)
    assert delivered > 0
    assert torn <= 2, f"{torn} of {delivered} delivered objects were torn"
    assert time.monotonic() - start < 120


@pytest.mark.adversarial_long
def test_torn_objects_stay_rare_over_a_long_race(tmp_path: Path) -> None:
    """20,000 overwrites (about a minute): at most 1 torn delivery in 2,000, by a stalled writer.

    No reader can tell a writer stalled mid-overwrite for longer than the 2 ms
    between the two reads from one that finished, so the rule does not make
    this zero on a loaded machine: measured here (2 CPUs, load 2.5-3), 1 torn of
    8,000-11,000 deliveries in four runs of six (none in the other two), against
    1 in 140-300 with one read. The bound holds the measured, documented rate.
    """
    torn, delivered = race(tmp_path, 20000)
    assert delivered > 0
    assert torn <= delivered / 2000, f"{torn} of {delivered} delivered objects were torn"
