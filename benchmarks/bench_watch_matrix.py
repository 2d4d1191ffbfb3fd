"""Whole objects, on time: every writer x every other process on the file x every API.

Each *cell* of the matrix races one writer, in its own process, against one way
of watching the file, while another process holds the file (or nothing does).
The writer writes ``--writes`` generations, one every ``--interval`` ms on
average, then one final generation. Every generation's stream has the same
length: 8 devices each carrying the attribute ``gen`` (the generation, six
digits), so a read in the middle of a write sees a *mixture* that still
decodes. A delivered object is **torn** when its devices do not all carry its
own generation.

Writers (``WRITERS``; each write's pieces are the first quarter of the stream,
which holds the new generation and the first devices, then the rest):

``close``
    open ``O_WRONLY``, one ``pwrite`` of the whole stream at offset 0, close.
``pwrite-0``, ``pwrite-3``, ``pwrite-20``, ``pwrite-200``, ``pwrite-500``
    open ``O_WRONLY``, ``pwrite`` the first quarter, sleep 0/3/20/200/500 ms,
    ``pwrite`` the rest, close.
``trunc``
    open with ``O_TRUNC``, one write, close (Go's ``os.WriteFile``, v1.36's writer).
``publisher``
    ``MetadataPublisher.update(..., mode="in-place")`` after a ``prepare`` made
    by the bench. As root where mounts work, the watch follows the container
    side: the node file bind-mounted read-only on the watched path, as a CDI
    mount does. Elsewhere there is no container side to watch (the node file
    is ``.../<ns>_<claim>/<request>/metadata.json``, not a metadata root), so the
    publisher's streams are written on the watched path by its in-place writer
    (``dra_metadata.testing.write_file``), and the cell's ``note`` says so. The
    publisher numbers generations itself (1, 2, 3 ...): each device's ``gen`` is
    ``FIRST - 1 + generation`` (six digits), so the mixture check compares
    ``gen`` with the object's generation plus that offset, and every generation
    in the figures is that six-digit label.
``rename``
    write a temporary file in the same directory (``.<name>.tmp``), close,
    ``rename`` it over the file (a plain tree: the directory is watched).
``rename-write``
    create the temporary file, ``rename`` it into place, *then* write the stream
    through the still-open descriptor (first quarter, 20 ms, the rest), close.
``truncate-path``
    once, as the writes begin, ``truncate(path, size)`` by path to the size it
    has (content unchanged: a change no open was heard for), then after 1.2 s
    writes as ``pwrite-20``.
``never-closed``
    one ``O_WRONLY`` handle, opened as the writes begin and kept for all of them
    (first quarter, 20 ms, the rest each time); closed 2 s after the final write.
``mmap``
    open ``O_RDWR``, ``mmap`` the file, store the first quarter into the map,
    sleep 500 ms, store the rest, ``munmap``, close (no ``IN_MODIFY`` at all).
``twin``
    two ``O_WRONLY`` handles opened back to back; the first quarter through the
    first, close it, 20 ms, the rest through the second, close.
``overlap-2``, ``overlap-4``
    2 or 4 writer processes, each taking the next generation from a shared
    counter and writing as ``pwrite-20``, so that their handles overlap; the
    final generation is written by one handle once they are done.

Others on the file (``OTHERS``), started after the watch has delivered its first
event and before the writes begin, stopped after the final generation was
delivered (or the cell timed out):

``none``; ``reader``
    opens the watched path ``O_RDONLY``, reads it once, holds it, never reads
    again, closes at the end;
``watcher``
    a second process running ``dra_metadata.watch`` on the same file; its
    deliveries are counted and checked like the API's (``other_watch``);
``idle-writer``
    opens the file ``O_RDWR`` (on the node side when it is mounted) and never
    writes.

APIs (``APIS``), in this process: ``watch``, ``awatch``, ``wait_for`` (called
again and again for anything newer than what it returned last: a higher
generation, or the same generation with other content) and ``cli``
(``python -m dra_metadata watch ...`` as a subprocess, its JSON lines read as
they come).

Per cell: generations written (the final one included); updates delivered (a
generation delivered twice counts twice) and the fraction of the generations
written that were delivered whole; torn deliveries (their generations); whether
the final generation was delivered whole and how long after the writer's last
write of it returned (ms); latency: median and p95 of (delivered whole - the
write's close returned; for ``rename``: the rename returned; ``publisher``:
``update`` returned; ``never-closed``: its last ``pwrite`` returned), ms, the
first whole delivery of each generation, ``time.monotonic`` in both processes.
The watch may deliver one generation twice (a torn object, then the whole one),
so a cell ends when the final generation has been delivered *whole*, or at its
final write + ``GRACE`` (3 s).

What the watch promises (``PROMISED``; ``--check`` exits 1 when a cell breaks
it):

================  ======  ===================================
writer            0 torn  final generation whole
================  ======  ===================================
close             yes     within 1,500 ms of its last write
pwrite-0          yes     within 1,500 ms
pwrite-3          yes     within 1,500 ms
pwrite-20         yes     within 1,500 ms
pwrite-200        yes     within 1,500 ms
pwrite-500        yes     within 1,500 ms
trunc             yes     within 1,500 ms
publisher         yes     within 1,500 ms
rename            yes     within 1,500 ms
rename-write      no      within 1,500 ms
truncate-path     yes     within 1,500 ms
never-closed      yes     within 1,500 ms
mmap              yes     within 1,500 ms
twin              no      within 1,500 ms
overlap-2         yes*    within 1,500 ms
overlap-4         yes*    within 1,500 ms
================  ======  ===================================

The same holds whatever the other process and the API (for the second watch of
``watcher`` too). ``*``: but for two writers that open the file at the same instant
(inotify hears one open): one torn object per run is let pass.

``--watchers`` runs another experiment: 1, 2, 4 ... watchers (``watch`` in
Python, ``cli``; several in one process or one process each) on one file while
one writer (``close`` by default) updates it every ``--interval`` ms for
``--seconds``; each must deliver the last one whole and never be more than
:data:`CROWD_BEHIND_MS` behind the writer (a write whose open inotify hears together
with another watch's read waits out the watch's quiet second, :data:`~dra_metadata.
_watch._backends.base.QUIET`, and the newest generation comes then: the generations
of that second are skipped, never delivered torn).

Usage::

    python benchmarks/bench_watch_matrix.py            # every cell, 1,000 writes, 200 ms apart
    python benchmarks/bench_watch_matrix.py --writer twin --other reader --api cli --writes 20
    python benchmarks/bench_watch_matrix.py --writes 8 --interval 50 --json --check
    python benchmarks/bench_watch_matrix.py --watchers watch:2,cli,watch --seconds 5

The whole default matrix is 256 cells of 1,000 writes: many hours. The test suite
runs a bounded selection (``tests/adversarial/test_watch_matrix.py``; every cell
with 1,000 writes under ``-m adversarial_long``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Final

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dra_metadata as dm  # noqa: E402 - after the path set-up, so the checkout is measured
from dra_metadata.testing import (  # noqa: E402
    MountUnavailableError,
    check_mounts_possible,
    write_file,
)

DRIVER: Final = "x.example.com"
CLAIM: Final = "c"
REQUEST: Final = "r"
NAMESPACE: Final = "ns"
UID: Final = "u"
DEVICES: Final = 8
#: The first generation's label; every label has six digits: every stream has one length.
FIRST: Final = 100000
#: How long after the final write a cell goes on waiting for it to be delivered whole (s).
GRACE: Final = 3.0
#: The final generation must be delivered whole within this long of its last write (ms).
FINAL_WITHIN_MS: Final = 1500.0
#: How far behind the writer each of several watchers may fall (``--watchers``, ms): a
#: count confused by a merged open is forgotten after the quiet second, and the spell
#: after it ends on the next writer's close; twice that, and a margin (measured: 1.8 s).
CROWD_BEHIND_MS: Final = 3000.0

WRITERS: Final = (
    "close",
    "pwrite-0",
    "pwrite-3",
    "pwrite-20",
    "pwrite-200",
    "pwrite-500",
    "trunc",
    "publisher",
    "rename",
    "rename-write",
    "truncate-path",
    "never-closed",
    "mmap",
    "twin",
    "overlap-2",
    "overlap-4",
)
OTHERS: Final = ("none", "reader", "watcher", "idle-writer")
APIS: Final = ("watch", "awatch", "wait_for", "cli")

#: The longest a writer sleeps inside one write (s): a cell's time budget counts it.
STALL: Final = {
    "pwrite-0": 0.0,
    "pwrite-3": 0.003,
    "pwrite-20": 0.02,
    "pwrite-200": 0.2,
    "pwrite-500": 0.5,
    "rename-write": 0.02,
    "truncate-path": 0.02,
    "never-closed": 0.02,
    "mmap": 0.5,
    "twin": 0.02,
    "overlap-2": 0.02,
    "overlap-4": 0.02,
}


@dataclass(frozen=True)
class Promise:
    """What the watch promises a writer: no torn object (or not), the final one in time."""

    no_torn: bool
    final_within_ms: float = FINAL_WITHIN_MS
    #: Torn objects let pass when no torn is promised: writers whose opens can be heard
    #: as one (two processes opening at the same instant), one per run.
    merged_opens: int = 0


#: Per writer, what the watch's rule promises in every cell (the module docstring's table).
#: Two handles (``twin``) and a file renamed into place before it is written
#: (``rename-write``) can be read mid-write: for them only the final generation is promised.
#: Overlapping writers: two that open at the same instant are heard as one open, and the
#: first one's close can be read while the other is mid-object (measured: 0 in 300 and
#: 1 in 100 stalled writes by four writers), so one torn object per run is let pass.
PROMISED: Final = {
    writer: Promise(
        writer not in ("rename-write", "twin"), merged_opens=writer.startswith("overlap")
    )
    for writer in WRITERS
}

WRITER = r"""
import json, mmap, multiprocessing, os, random, sys, time
import dra_metadata as dm

config = json.loads(sys.argv[1])
path, kind, driver = config["path"], config["writer"], config["driver"]
first, count, offset = config["first"], config["count"], config["offset"]
interval, seed = config["interval"], config["seed"]
final = first + count + 1
STALLS = {"pwrite-0": 0.0, "pwrite-3": 0.003, "pwrite-20": 0.02, "pwrite-200": 0.2,
          "pwrite-500": 0.5, "truncate-path": 0.02, "overlap-2": 0.02, "overlap-4": 0.02}
temporary = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")

def stream(label):
    devices = tuple(
        dm.Device(driver, "p", f"dev-{i}", attributes={"gen": dm.DeviceAttribute(int=label)})
        for i in range(8)
    )
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid="u", generation=label - offset),
        requests=(dm.DeviceMetadataRequest("r", devices),),
    )
    return dm.encode(md)

if kind == "publisher":
    from pathlib import Path
    from dra_metadata.testing import write_file
    pub = dm.MetadataPublisher(driver, plugin_data_dir=config["plugin_dir"],
                               cdi_dir=config["cdi_dir"])
    claim = dm.ClaimRef(name="c", namespace="ns", uid="u")

length = len(stream(first))
quarter = length // 4

def put(fd, data, at):
    while data:
        done = os.pwrite(fd, data, at)
        data, at = data[done:], at + done

def halves(head, tail, blob, stall):
    put(head, blob[:quarter], 0)
    if head != tail:
        os.close(head)
    if stall:
        time.sleep(stall)
    put(tail, blob[quarter:], quarter)
    return time.monotonic()

kept = None  # never-closed: the one handle

def write(label):
    # One generation; returns (start, last write returned, close/rename returned).
    blob = None if kind == "publisher" else stream(label)
    assert blob is None or len(blob) == length, "streams of one length"
    start = time.monotonic()
    if kind == "close":
        fd = os.open(path, os.O_WRONLY)
        put(fd, blob, 0)
        wrote = time.monotonic()
        os.close(fd)
    elif kind in STALLS:
        fd = os.open(path, os.O_WRONLY)
        wrote = halves(fd, fd, blob, STALLS[kind])
        os.close(fd)
    elif kind == "trunc":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        put(fd, blob, 0)
        wrote = time.monotonic()
        os.close(fd)
    elif kind == "publisher":
        if config["mounted"]:
            devices = [pub.device("p", f"dev-{i}", attributes={"gen": label}) for i in range(8)]
            md = pub.update(claim, "r", devices, mode="in-place")
            assert md.metadata.generation == label - offset, (md.metadata.generation, label)
        else:  # the publisher's stream, by its in-place writer, on the watched path
            devices = [pub.device("p", f"dev-{i}", attributes={"gen": label}) for i in range(8)]
            md = pub.metadata(claim, "r", devices, generation=label - offset)
            write_file(Path(path), dm.encode(md), "in-place")
        wrote = time.monotonic()
    elif kind == "rename":
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        put(fd, blob, 0)
        os.close(fd)
        os.rename(temporary, path)
        wrote = time.monotonic()
    elif kind == "rename-write":
        if os.path.lexists(temporary):
            os.unlink(temporary)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.rename(temporary, path)  # in place, empty; then written
        wrote = halves(fd, fd, blob, 0.02)
        os.close(fd)
    elif kind == "never-closed":
        wrote = halves(kept, kept, blob, 0.02)
    elif kind == "mmap":
        fd = os.open(path, os.O_RDWR)
        view = mmap.mmap(fd, length)
        view[:quarter] = blob[:quarter]
        time.sleep(0.5)
        view[quarter:length] = blob[quarter:]
        wrote = time.monotonic()
        view.close()
        os.close(fd)
    elif kind == "twin":
        head = os.open(path, os.O_WRONLY)
        tail = os.open(path, os.O_WRONLY)  # back to back: one IN_OPEN heard for two
        wrote = halves(head, tail, blob, 0.02)
        os.close(tail)
    else:
        raise SystemExit(f"unknown writer {kind!r}")
    return start, wrote, time.monotonic()

def emit(label, times, last=False):
    start, wrote, done = times
    record = {"generation": label, "start": start, "wrote": wrote, "done": done, "final": last}
    # One write(2) per line: the overlapping writers share the pipe (and, forked, the buffer).
    os.write(1, (json.dumps(record) + "\n").encode())

def overlapping(counter, index):
    rng = random.Random(seed + 1 + index)
    while True:
        with counter.get_lock():
            counter.value += 1
            label = counter.value
        if label > first + count:
            return
        emit(label, write(label))
        time.sleep(rng.uniform(0.5, 1.5) * interval)

rng = random.Random(seed)
print("ready", flush=True)
if sys.stdin.readline().strip() != "go":
    raise SystemExit(0)
if kind == "never-closed":
    kept = os.open(path, os.O_WRONLY)
if kind == "truncate-path":
    os.truncate(path, length)  # by path, the same size: content unchanged, no open heard
    time.sleep(1.2)
if kind.startswith("overlap-"):
    context = multiprocessing.get_context("fork")
    counter = context.Value("q", first)
    writers = [context.Process(target=overlapping, args=(counter, i))
               for i in range(int(kind.split("-")[1]))]
    for process in writers:
        process.start()
    for process in writers:
        process.join()
        assert process.exitcode == 0, f"an overlapping writer failed ({process.exitcode})"
else:
    for label in range(first + 1, first + count + 1):
        emit(label, write(label))
        time.sleep(rng.uniform(0.5, 1.5) * interval)
emit(final, write(final), last=True)
if kept is not None:
    time.sleep(2.0)
    os.close(kept)
print("done", flush=True)
"""

HOLDER = r"""
import os, sys
if sys.argv[2] == "reader":
    fd = os.open(sys.argv[1], os.O_RDONLY)
    os.read(fd, 1 << 20)  # read once, then hold it: never read again
else:
    fd = os.open(sys.argv[1], os.O_RDWR)  # idle-writer: never writes
print("ready", flush=True)
sys.stdin.readline()
os.close(fd)
print("done", flush=True)
"""

WATCHER = r"""
import json, sys, threading, time
import dra_metadata as dm

root, offset, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stop = threading.Event()
ready = [threading.Event() for _ in range(count)]
seen = [[] for _ in range(count)]
kinds = [{} for _ in range(count)]

def follow(index):
    events = dm.watch(claim="c", request="r", root=root, stop_event=stop)
    for number, event in enumerate(events):
        at = time.monotonic()
        if number == 0:
            ready[index].set()
        elif event.kind == dm.WatchEventKind.UPDATE and event.metadata is not None:
            md = event.metadata
            label = md.metadata.generation + offset
            whole = all(dev.attribute("gen") == label for _request, dev in md.devices())
            seen[index].append([label, whole, at])
        else:
            kinds[index][event.kind.value] = kinds[index].get(event.kind.value, 0) + 1
    events.close()

threads = [threading.Thread(target=follow, args=(i,), daemon=True) for i in range(count)]
for thread in threads:
    thread.start()
for event in ready:
    event.wait()
print("ready", flush=True)
words = sys.stdin.readline().split()  # stop FINAL DEADLINE
final, deadline = (int(words[1]), float(words[2])) if len(words) == 3 else (-1, 0.0)

def finished(found):
    return any(label == final and whole for label, whole, _at in list(found))

while time.monotonic() < deadline and not all(finished(found) for found in seen):
    time.sleep(0.01)
stop.set()
for thread in threads:
    thread.join(5)
for index in range(count):
    print(json.dumps({"seen": seen[index], "events": kinds[index]}), flush=True)
print("done", flush=True)
"""


def stream(label: int, offset: int = 0) -> bytes:
    """What the writers write for ``label``: eight devices carrying it as ``gen``."""
    devices = tuple(
        dm.Device(DRIVER, "p", f"dev-{i}", attributes={"gen": dm.DeviceAttribute(int=label)})
        for i in range(DEVICES)
    )
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name=CLAIM, namespace=NAMESPACE, uid=UID, generation=label - offset),
        requests=(dm.DeviceMetadataRequest(REQUEST, devices),),
    )
    return dm.encode(md)


@dataclass(frozen=True)
class Seen:
    """One delivered update: its generation (the six-digit label), whole or torn, when."""

    generation: int
    whole: bool
    at: float  # time.monotonic() when it was in the watcher's hands
    gens: tuple[int, ...] = ()  # the devices' ``gen`` attributes


def seen_of(md: dm.DeviceMetadata, offset: int, at: float) -> Seen:
    """``md`` as delivered: its label, and whether every device carries that label."""
    if isinstance(md, dm.MergedDeviceMetadata):
        generation = md.sources[0].generation
    else:
        generation = md.metadata.generation
    label = generation + offset
    gens = tuple(
        value if isinstance(value := device.attribute("gen"), int) else -1
        for _request, device in md.devices()
    )
    return Seen(label, all(gen == label for gen in gens), at, gens)


def seen_of_wire(body: dict[str, Any], offset: int, at: float) -> Seen:
    """The same for the wire form ``dra-metadata watch`` prints (``"metadata"``)."""
    label = int(body["metadata"]["generation"]) + offset
    gens = tuple(
        int(device["attributes"]["gen"]["int"])
        for request in body["requests"]
        for device in request["devices"]
    )
    return Seen(label, all(gen == label for gen in gens), at, gens)


@dataclass(frozen=True)
class Written:
    """One generation as the writer wrote it (its ``time.monotonic`` clock)."""

    start: float  # before its open (or update call)
    wrote: float  # its last write returned (the rename, for ``rename``)
    done: float  # its close (rename, update) returned


@dataclass
class Summary:
    """What one watcher delivered of what was written."""

    delivered: int = 0  # updates delivered (a generation delivered twice counts twice)
    generations: int = 0  # distinct generations written and delivered whole
    fraction: float = 0.0  # generations / generations written
    torn: list[int] = field(default_factory=list)  # generations delivered torn, in order
    final_whole: bool = False  # the final generation delivered whole
    final_after_ms: float | None = None  # its last write returned -> delivered whole
    latency_median_ms: float | None = None  # close returned -> first whole delivery
    latency_p95_ms: float | None = None
    #: The longest any written generation waited, from its close returning, for it or a
    #: newer one to be delivered whole (ms): how far behind the writer the watch fell.
    behind_ms: float | None = None
    events: dict[str, int] = field(default_factory=dict)  # stale, error, removed events


def percentile(values: list[float], share: float) -> float | None:
    """The ``share`` percentile of ``values`` (nearest rank), ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def summarize(
    seen: list[Seen], written: dict[int, Written], final: int, events: dict[str, int]
) -> Summary:
    """The figures of one watcher's deliveries against what was written."""
    summary = Summary(delivered=len(seen), events=dict(events))
    firsts: dict[int, float] = {}
    for item in seen:
        if not item.whole:
            summary.torn.append(item.generation)
        elif item.generation not in firsts:
            firsts[item.generation] = item.at
    summary.generations = sum(1 for generation in firsts if generation in written)
    summary.fraction = summary.generations / len(written) if written else 0.0
    if final in firsts and final in written:
        summary.final_whole = True
        summary.final_after_ms = round((firsts[final] - written[final].wrote) * 1000, 2)
    latencies = [
        (at - written[generation].done) * 1000
        for generation, at in firsts.items()
        if generation in written
    ]
    waits = [
        min(
            (at - wrote.done for generation, at in firsts.items() if generation >= label),
            default=math.inf,
        )
        * 1000
        for label, wrote in written.items()
    ]
    summary.behind_ms = round(max(waits), 2) if waits else None
    median = percentile(latencies, 0.5)
    p95 = percentile(latencies, 0.95)
    summary.latency_median_ms = None if median is None else round(median, 2)
    summary.latency_p95_ms = None if p95 is None else round(p95, 2)
    return summary


def broken_promises(summary: Summary, promise: Promise, who: str = "") -> list[str]:
    """The promises ``summary`` breaks, each as one sentence (``who`` names a second watch)."""
    broken = []
    if promise.no_torn and len(summary.torn) > promise.merged_opens:
        broken.append(f"{who}{len(summary.torn)} torn delivered: {summary.torn[:10]}")
    if not summary.final_whole:
        broken.append(f"{who}final generation never delivered whole (gave up {GRACE:g} s after)")
    elif summary.final_after_ms is not None and summary.final_after_ms > promise.final_within_ms:
        broken.append(
            f"{who}final generation whole after {summary.final_after_ms:.0f} ms "
            f"> {promise.final_within_ms:.0f} ms"
        )
    return broken


@dataclass
class Cell:
    """One cell of the matrix: a writer, another process on the file, an API."""

    writer: str
    other: str
    api: str
    interval_ms: float
    writes: int = 0  # generations written, the final one included
    summary: Summary = field(default_factory=Summary)
    other_watch: Summary | None = None  # the ``watcher`` other's second watch
    no_torn_promised: bool = True
    final_within_ms: float = FINAL_WITHIN_MS
    broken: list[str] = field(default_factory=list)  # the promises broken, or harness failures
    note: str = ""  # how the file was watched (the publisher's mount)
    seconds: float = 0.0  # the cell's wall time


class Child:
    """A helper process that speaks in lines: each line handed to ``on_line`` with its time."""

    def __init__(self, argv: list[str], on_line: Callable[[str, float], None]) -> None:
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - finish() closes it
        self._stderr_text = ""
        self.errors: list[str] = []  # lines the harness could not read
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            cwd=REPO,
        )
        self._on_line = on_line
        self.ended = threading.Event()  # its stdout reached the end
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self._on_line(line.rstrip("\n"), time.monotonic())
            except Exception as err:  # a line the harness cannot read: reported, not fatal
                self.errors.append(f"{type(err).__name__}: {err} in line {line[:200]!r}")
        self.ended.set()

    def send(self, text: str) -> None:
        """Write one line to its standard input (nothing when it is gone)."""
        assert self.process.stdin is not None
        with contextlib.suppress(OSError, ValueError):
            self.process.stdin.write(text + "\n")
            self.process.stdin.flush()

    def stderr(self) -> str:
        """What it wrote on stderr (the last 2,000 characters)."""
        if self._stderr.closed:
            return self._stderr_text
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-2000:]

    def wait(self, event: threading.Event, timeout: float) -> bool:
        """Wait for ``event``, but not beyond ``timeout`` s nor the end of its output."""
        end = time.monotonic() + timeout
        while not event.wait(0.02):
            if self.ended.is_set() or time.monotonic() > end:
                return event.is_set()
        return True

    def finish(self, timeout: float, *, interrupt: bool = False) -> int:
        """Wait for it to end, killed after ``timeout``; its stdin is closed first.

        With ``interrupt``, SIGINT first (how a ``dra-metadata watch`` ends).
        """
        if interrupt and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        with contextlib.suppress(OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()  # one waiting for a line reads the end: it ends
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.ended.wait(5)
        self._stderr_text = self.stderr()
        self._stderr.close()
        return self.process.returncode


class Setup:
    """The watched file of one cell: a plain tree, or the publisher's node file, mounted."""

    def __init__(self, scratch: Path, writer: str) -> None:
        self.scratch = scratch
        self.writer = writer
        self.root = scratch / "container"
        self.path = self.root / "resourceclaims" / CLAIM / REQUEST / f"{DRIVER}-metadata.json"
        self.node_path = self.path  # where a process on the node opens it read-write
        self.offset = 0  # label - metadata.generation
        self.note = ""
        self.config: dict[str, Any] = {"mounted": False}
        self._mounted: Path | None = None

    def __enter__(self) -> Setup:
        self.path.parent.mkdir(parents=True)
        if self.writer == "publisher":
            self._publisher()
        else:
            self.path.write_bytes(stream(FIRST))
        return self

    def _publisher(self) -> None:
        self.offset = FIRST - 1  # prepare writes generation 1: label FIRST
        node = self.scratch / "node"
        pub = dm.MetadataPublisher(DRIVER, plugin_data_dir=node / DRIVER, cdi_dir=node / "cdi")
        claim = dm.ClaimRef(name=CLAIM, namespace=NAMESPACE, uid=UID)
        devices = [pub.device("p", f"dev-{i}", attributes={"gen": FIRST}) for i in range(DEVICES)]
        pub.prepare(claim, REQUEST, devices)
        self.config = {"plugin_dir": str(node / DRIVER), "cdi_dir": str(node / "cdi")}
        host = Path(pub.metadata_path(claim, REQUEST))
        inside = Path(pub.container_path(claim, REQUEST)).relative_to(dm.CONTAINER_DIR)
        assert self.root / inside == self.path, (inside, self.path)
        try:
            check_mounts_possible(self.scratch)
        except MountUnavailableError as err:
            write_file(self.path, host.read_bytes(), "in-place")
            self.config["mounted"] = False
            self.note = (
                f"publisher NOT mounted ({err.reason}): its in-place writer on the watched "
                "file, not MetadataPublisher.update on a node file"
            )
            return
        self.path.touch()
        _run("mount", "--bind", str(host), str(self.path))
        self._mounted = self.path
        _run("mount", "-o", "remount,ro,bind", str(self.path))
        self.node_path = host
        self.config["mounted"] = True
        self.note = "publisher: node file through a read-only bind mount (container side watched)"

    def __exit__(self, *exc: object) -> None:
        if self._mounted is not None:
            if subprocess.run(["umount", str(self._mounted)], check=False).returncode != 0:
                subprocess.run(["umount", "-l", str(self._mounted)], check=False)
            self._mounted = None


def _run(*command: str) -> None:
    done = subprocess.run(list(command), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise MountUnavailableError(f"{' '.join(command)}: {done.stderr.strip()}")


class Writes:
    """The writer process of a cell and what it reports, line by line."""

    def __init__(self, setup: Setup, writer: str, count: int, interval: float, seed: int) -> None:
        self.written: dict[int, Written] = {}
        self.final_wrote: float | None = None
        self.ready = threading.Event()
        self.done = threading.Event()
        self.went = False  # told to go
        self.on_final: Callable[[float], None] = lambda _wrote: None
        config = {
            "path": str(setup.node_path),  # the publisher's own choice when it is mounted
            "writer": writer,
            "driver": DRIVER,
            "first": FIRST,
            "count": count,
            "offset": setup.offset,
            "interval": interval,
            "seed": seed,
            **setup.config,
        }
        self.child = Child([sys.executable, "-c", WRITER, json.dumps(config)], self._line)

    def _line(self, line: str, _at: float) -> None:
        if line == "ready":
            self.ready.set()
        elif line == "done":
            self.done.set()
        elif line.startswith("{"):
            record = json.loads(line)
            self.written[record["generation"]] = Written(
                record["start"], record["wrote"], record["done"]
            )
            if record["final"]:
                self.final_wrote = record["wrote"]
                self.on_final(record["wrote"])

    def go(self) -> None:
        """Let the writes begin."""
        self.went = True
        self.child.send("go")


@dataclass
class Watching:
    """What an API needs to watch one cell, and what it found."""

    root: Path
    offset: int
    final: int  # the final generation's label
    go: Callable[[], None]  # call once the first event is in
    budget_end: float  # time.monotonic() past which the cell gives up
    stop: threading.Event = field(default_factory=threading.Event)
    deadline: float | None = None  # the final write + GRACE, once written
    seen: list[Seen] = field(default_factory=list)
    events: dict[str, int] = field(default_factory=dict)
    _timers: list[threading.Timer] = field(default_factory=list)

    def arm(self, wrote: float) -> None:
        """The final generation was written at ``wrote``: stop at most ``GRACE`` s later."""
        self.deadline = wrote + GRACE
        timer = threading.Timer(max(0.0, self.deadline - time.monotonic()), self.stop.set)
        timer.daemon = True
        timer.start()
        self._timers.append(timer)

    def left(self) -> float:
        """Seconds the watching may go on (until the deadline, else the budget)."""
        end = self.budget_end if self.deadline is None else min(self.deadline, self.budget_end)
        return end - time.monotonic()

    def add(self, item: Seen) -> bool:
        """Note a delivery; whether the cell is over (the final generation, whole)."""
        self.seen.append(item)
        return item.generation == self.final and item.whole

    def count(self, kind: str) -> None:
        """Note an event that is not an update (stale, error, removed)."""
        self.events[kind] = self.events.get(kind, 0) + 1

    def cancel(self) -> None:
        """Stop the timers."""
        for timer in self._timers:
            timer.cancel()


def _watch(w: Watching) -> None:
    events = dm.watch(
        claim=CLAIM, request=REQUEST, root=w.root, stop_event=w.stop, timeout=w.left()
    )
    try:
        for index, event in enumerate(events):
            if _heard(w, index, event):
                break
    finally:
        events.close()


def _heard(w: Watching, index: int, event: dm.WatchEvent) -> bool:
    """One event of ``watch`` or ``awatch`` (``index`` from 0); True when the cell is done."""
    at = time.monotonic()
    if index == 0:
        w.go()  # the initial object is in: the others and the writer may start
    elif event.kind == dm.WatchEventKind.UPDATE and event.metadata is not None:
        return w.add(seen_of(event.metadata, w.offset, at))
    else:
        w.count(event.kind.value)
    return False


def _awatch(w: Watching) -> None:
    async def main() -> None:
        events = dm.awatch(
            claim=CLAIM, request=REQUEST, root=w.root, stop_event=w.stop, timeout=w.left()
        )
        index = 0
        try:
            async for event in events:
                if _heard(w, index, event):
                    break
                index += 1
        finally:
            await events.aclose()

    asyncio.run(main())


def _wait_for(w: Watching) -> None:
    """``wait_for()`` again and again, each time for anything newer than it returned last.

    Newer: a higher generation, or the same generation with other devices (a torn
    object re-delivered whole). Until the final write is known each call waits at
    most 5 s (then it is called again), after that until the deadline.
    """
    started = False
    last = Seen(FIRST, True, 0.0, (FIRST,) * DEVICES)

    def newer(md: dm.DeviceMetadata) -> bool:
        nonlocal started
        if not started:
            started = True
            w.go()
        now = seen_of(md, w.offset, 0.0)
        return now.generation > last.generation or (
            now.generation == last.generation and now.gens != last.gens
        )

    while True:
        left = w.left()
        if w.deadline is None:
            left = min(left, 5.0)
        if left <= 0:
            return
        try:
            md = dm.wait_for(claim=CLAIM, request=REQUEST, root=w.root, until=newer, timeout=left)
        except dm.WaitTimeoutError:
            continue
        last = seen_of(md, w.offset, time.monotonic())
        if w.add(last):
            return


def _cli(w: Watching) -> None:
    first = threading.Event()
    over = threading.Event()

    def line(text: str, at: float) -> None:
        if not text.startswith("{"):
            return
        record = json.loads(text)
        if not first.is_set():
            first.set()
        elif record["event"] == "update" and record["metadata"] is not None:
            if w.add(seen_of_wire(record["metadata"], w.offset, at)):
                over.set()
        else:
            w.count(record["event"])

    command = [sys.executable, "-m", "dra_metadata", "watch", "--claim", CLAIM]
    child = Child([*command, "--request", REQUEST, "--root", str(w.root)], line)
    try:
        while not first.wait(0.05):
            if child.ended.is_set() or w.left() <= 0:
                raise RuntimeError(f"dra-metadata watch printed no first event: {child.stderr()}")
        w.go()
        while not over.is_set() and not w.stop.is_set() and w.left() > 0:
            if child.ended.is_set():
                raise RuntimeError(f"dra-metadata watch ended early: {child.stderr()}")
            over.wait(0.05)
    finally:
        child.finish(10, interrupt=True)
    if child.errors:
        raise RuntimeError(f"unreadable lines of dra-metadata watch: {child.errors[:3]}")


API_FUNCTIONS: Final[dict[str, Callable[[Watching], None]]] = {
    "watch": _watch,
    "awatch": _awatch,
    "wait_for": _wait_for,
    "cli": _cli,
}


class WatchGroup:
    """A process running ``count`` Python watches of the file in threads (``WATCHER``)."""

    def __init__(self, root: Path, offset: int, count: int) -> None:
        self.count = count
        self.ready = threading.Event()
        self.lines: list[str] = []
        self.child = Child(
            [sys.executable, "-c", WATCHER, str(root), str(offset), str(count)], self._line
        )

    def _line(self, line: str, _at: float) -> None:
        if line == "ready":
            self.ready.set()
        elif line.startswith("{"):
            self.lines.append(line)

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until every watch has delivered its first event."""
        if not self.child.wait(self.ready, timeout):
            raise RuntimeError(f"the watcher process never got ready: {self.child.stderr()}")

    def stop(self, final: int, deadline: float) -> None:
        """Ask it to stop once each watch has ``final`` whole, or at ``deadline``."""
        self.child.send(f"stop {final} {deadline!r}")

    def results(self, timeout: float) -> list[tuple[list[Seen], dict[str, int]]]:
        """Each watch's deliveries and other events, once it has ended."""
        code = self.child.finish(timeout)
        if code != 0 or len(self.lines) != self.count:
            raise RuntimeError(f"the watcher process failed ({code}): {self.child.stderr()}")
        found = []
        for line in self.lines:
            record = json.loads(line)
            seen = [Seen(int(label), bool(whole), float(at)) for label, whole, at in record["seen"]]
            found.append((seen, dict(record["events"])))
        return found


class Holder:
    """A process holding the file open: ``reader`` (O_RDONLY) or ``idle-writer`` (O_RDWR)."""

    def __init__(self, path: Path, kind: str) -> None:
        self.ready = threading.Event()
        self.child = Child([sys.executable, "-c", HOLDER, str(path), kind], self._line)

    def _line(self, line: str, _at: float) -> None:
        if line == "ready":
            self.ready.set()

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until it holds the file."""
        if not self.child.wait(self.ready, timeout):
            raise RuntimeError(f"the holder never got ready: {self.child.stderr()}")

    def stop(self) -> None:
        """Let it close the file and end."""
        self.child.send("stop")
        self.child.finish(10)


def budget(writer: str, writes: int, interval: float) -> float:
    """The most seconds a cell may take before it gives up, whatever happens."""
    per_write = 1.5 * interval + STALL.get(writer, 0.0) + 0.05
    return 60 + writes * per_write * 1.5


def run_cell(
    writer: str, other: str, api: str, *, writes: int, interval_ms: float, seed: int = 1
) -> Cell:
    """Race ``writes`` generations (then the final one) of ``writer`` against ``api``."""
    started = time.monotonic()
    promise = PROMISED[writer]
    cell = Cell(
        writer,
        other,
        api,
        interval_ms,
        no_torn_promised=promise.no_torn,
        final_within_ms=promise.final_within_ms,
    )
    interval = interval_ms / 1000
    final = FIRST + writes + 1
    with (
        tempfile.TemporaryDirectory(prefix="bench-watch-matrix-") as scratch,
        Setup(Path(scratch), writer) as setup,
    ):
        cell.note = setup.note
        writing = Writes(setup, writer, writes, interval, seed)
        holder: Holder | None = None
        group: WatchGroup | None = None

        def go() -> None:
            nonlocal holder, group
            if other in ("reader", "idle-writer"):
                holder = Holder(setup.path if other == "reader" else setup.node_path, other)
                holder.wait_ready()
            elif other == "watcher":
                group = WatchGroup(setup.root, setup.offset, 1)
                group.wait_ready()
            writing.go()

        watching = Watching(
            setup.root, setup.offset, final, go, time.monotonic() + budget(writer, writes, interval)
        )
        writing.on_final = watching.arm
        try:
            if not writing.child.wait(writing.ready, 60):
                raise RuntimeError(f"the writer never got ready: {writing.child.stderr()}")
            API_FUNCTIONS[api](watching)
        except Exception as err:  # the harness's failure: reported in the cell
            cell.broken.append(f"harness: {type(err).__name__}: {err}")
        finally:
            watching.cancel()
            deadline = watching.deadline if watching.deadline is not None else time.monotonic()
            if group is not None:
                group.stop(final, deadline)
            if holder is not None:
                holder.stop()
            if writing.went and not writing.child.wait(
                writing.done, budget(writer, writes, interval) / 4
            ):
                cell.broken.append("harness: the writer did not finish")
            code = writing.child.finish(10)
            if code != 0:
                cell.broken.append(f"harness: the writer failed ({code}): {writing.child.stderr()}")
            cell.broken += [f"harness: writer line: {error}" for error in writing.child.errors]
            if group is not None:
                try:
                    ((seen, events),) = group.results(GRACE + 15)
                    cell.other_watch = summarize(seen, writing.written, final, events)
                except RuntimeError as err:
                    cell.broken.append(f"harness: {err}")
    cell.writes = len(writing.written)
    cell.summary = summarize(watching.seen, writing.written, final, watching.events)
    cell.broken += broken_promises(cell.summary, promise)
    if cell.other_watch is not None:
        cell.broken += broken_promises(cell.other_watch, promise, "second watch: ")
    cell.seconds = round(time.monotonic() - started, 2)
    return cell


# --- several watchers on one file ----------------------------------------------------------


@dataclass
class Watcher:
    """One watcher of ``--watchers``: where it ran, and what it delivered."""

    name: str  # "p1 watch 1/2", "p2 cli"
    summary: Summary


@dataclass
class Crowd:
    """Several watchers on one file while one writer updates it."""

    layout: list[str]
    writer: str
    interval_ms: float
    seconds: float
    writes: int = 0
    watchers: list[Watcher] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    note: str = ""
    wall_seconds: float = 0.0


def parse_layout(text: str) -> list[tuple[str, int]]:
    """``watch:2,cli,watch`` -> one process with two Python watches, a CLI, one with one.

    >>> parse_layout("watch:2,cli,watch")
    [('watch', 2), ('cli', 1), ('watch', 1)]
    """
    layout = []
    for part in text.split(","):
        kind, _, number = part.strip().partition(":")
        count = int(number) if number else 1
        if kind not in ("watch", "cli") or count < 1 or (kind == "cli" and count != 1):
            raise ValueError(f"bad watcher {part!r}: expected watch, watch:N or cli")
        layout.append((kind, count))
    return layout


class CliWatch:
    """A ``dra-metadata watch`` process whose updates are noted as they are printed."""

    def __init__(self, root: Path, offset: int) -> None:
        self.offset = offset
        self.first = threading.Event()
        self.seen: list[Seen] = []
        self.events: dict[str, int] = {}
        command = [sys.executable, "-m", "dra_metadata", "watch", "--claim", CLAIM]
        self.child = Child([*command, "--request", REQUEST, "--root", str(root)], self._line)

    def _line(self, text: str, at: float) -> None:
        if not text.startswith("{"):
            return
        record = json.loads(text)
        if not self.first.is_set():
            self.first.set()
        elif record["event"] == "update" and record["metadata"] is not None:
            self.seen.append(seen_of_wire(record["metadata"], self.offset, at))
        else:
            self.events[record["event"]] = self.events.get(record["event"], 0) + 1

    def has(self, final: int) -> bool:
        """Whether ``final`` was delivered whole."""
        return any(item.generation == final and item.whole for item in list(self.seen))


def run_crowd(
    layout_text: str, *, writer: str, seconds: float, interval_ms: float, seed: int = 1
) -> Crowd:
    """Watchers laid out as ``layout_text`` on one file while ``writer`` updates it."""
    started = time.monotonic()
    layout = parse_layout(layout_text)
    interval = interval_ms / 1000
    writes = max(1, round(seconds / interval) - 1)
    final = FIRST + writes + 1
    crowd = Crowd([f"{kind}:{count}" for kind, count in layout], writer, interval_ms, seconds)
    groups: list[tuple[str, WatchGroup | CliWatch]] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-watch-crowd-") as scratch,
        Setup(Path(scratch), writer) as setup,
    ):
        crowd.note = setup.note
        writing = Writes(setup, writer, writes, interval, seed)
        try:
            for number, (kind, count) in enumerate(layout, 1):
                if kind == "cli":
                    groups.append((f"p{number} cli", CliWatch(setup.root, setup.offset)))
                else:
                    group = WatchGroup(setup.root, setup.offset, count)
                    groups.append((f"p{number} watch", group))
            for _name, member in groups:
                if isinstance(member, CliWatch):
                    if not member.child.wait(member.first, 60):
                        raise RuntimeError(f"a CLI watch never started: {member.child.stderr()}")
                else:
                    member.wait_ready()
            if not writing.child.wait(writing.ready, 60):
                raise RuntimeError(f"the writer never got ready: {writing.child.stderr()}")
            writing.go()
            if not writing.child.wait(writing.done, budget(writer, writes, interval)):
                raise RuntimeError("the writer did not finish")
            assert writing.final_wrote is not None
            deadline = writing.final_wrote + GRACE
            for _name, member in groups:
                if isinstance(member, WatchGroup):
                    member.stop(final, deadline)
            clis = [member for _name, member in groups if isinstance(member, CliWatch)]
            while time.monotonic() < deadline and not all(cli.has(final) for cli in clis):
                time.sleep(0.01)
        except Exception as err:
            crowd.broken.append(f"harness: {type(err).__name__}: {err}")
        finally:
            writing.child.finish(10)
            crowd.broken += [f"harness: writer line: {error}" for error in writing.child.errors]
            for name, member in groups:
                if isinstance(member, CliWatch):
                    member.child.finish(10, interrupt=True)
                    crowd.broken += [f"harness: {name}: {error}" for error in member.child.errors]
                    summary = summarize(member.seen, writing.written, final, member.events)
                    crowd.watchers.append(Watcher(name, summary))
                    continue
                member.stop(final, time.monotonic())  # a no-op when already asked
                try:
                    results = member.results(GRACE + 15)
                except RuntimeError as err:
                    crowd.broken.append(f"harness: {name}: {err}")
                    continue
                for index, (seen, events) in enumerate(results, 1):
                    summary = summarize(seen, writing.written, final, events)
                    crowd.watchers.append(Watcher(f"{name} {index}/{member.count}", summary))
    crowd.writes = len(writing.written)
    for watcher in crowd.watchers:
        s = watcher.summary
        if s.behind_ms is None or s.behind_ms > CROWD_BEHIND_MS:
            crowd.broken.append(
                f"{watcher.name}: fell {s.behind_ms} ms behind the writer "
                f"(> {CROWD_BEHIND_MS:g} ms)"
            )
        crowd.broken += broken_promises(s, PROMISED[writer], f"{watcher.name}: ")
    crowd.wall_seconds = round(time.monotonic() - started, 2)
    return crowd


# --- output -------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if abs(value) < 10 else f"{value:.0f}"


def _torn(torn: list[int]) -> str:
    if not torn:
        return "0"
    shown = ", ".join(str(generation) for generation in torn[:5])
    return f"{len(torn)}: {shown}{', ...' if len(torn) > 5 else ''}"


def _delivered(s: Summary) -> str:
    return f"{s.delivered} ({s.fraction:.0%} whole)"


def render(cells: list[Cell]) -> str:
    """The cells as a Markdown table, then the promises broken and the notes."""
    lines = [
        f"dra_metadata {dm.__version__}: whole objects, on time "
        f"(generations labelled from {FIRST}; torn: generations delivered as a mixture)",
        "",
        "| writer | other | api | writes | delivered | torn | final whole | final after (ms) "
        "| latency median/p95 (ms) |",
        "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for cell in cells:
        s = cell.summary
        delivered = _delivered(s)
        if cell.other_watch is not None:
            o = cell.other_watch
            delivered += (
                f"; 2nd watch {_delivered(o)}, {len(o.torn)} torn, "
                f"final {'yes' if o.final_whole else 'NO'} {_ms(o.final_after_ms)} ms"
            )
        lines.append(
            f"| {cell.writer} | {cell.other} | {cell.api} | {cell.writes} | {delivered} "
            f"| {_torn(s.torn)} | {'yes' if s.final_whole else 'NO'} | {_ms(s.final_after_ms)} "
            f"| {_ms(s.latency_median_ms)} / {_ms(s.latency_p95_ms)} |"
        )
    broken = [cell for cell in cells if cell.broken]
    lines += ["", f"Promises broken: {len(broken)} of {len(cells)} cells."]
    for cell in broken:
        lines.append(f"- {cell.writer} / {cell.other} / {cell.api}: " + "; ".join(cell.broken))
    notes = sorted({cell.note for cell in cells if cell.note})
    lines += [f"Note: {note}" for note in notes]
    return "\n".join(lines)


def render_crowd(crowds: list[Crowd]) -> str:
    """Each ``--watchers`` run as a Markdown table of its watchers."""
    lines = []
    for crowd in crowds:
        lines += [
            f"{len(crowd.watchers)} watchers ({','.join(crowd.layout)}), writer {crowd.writer}, "
            f"{crowd.writes} writes ~{crowd.interval_ms:g} ms apart",
            "",
            "| watcher | delivered | torn | final whole | final after (ms) "
            "| latency median/p95 (ms) | most behind (ms) |",
            "| --- | ---: | ---: | --- | ---: | ---: | ---: |",
        ]
        for watcher in crowd.watchers:
            s = watcher.summary
            lines.append(
                f"| {watcher.name} | {_delivered(s)} | {_torn(s.torn)} "
                f"| {'yes' if s.final_whole else 'NO'} | {_ms(s.final_after_ms)} "
                f"| {_ms(s.latency_median_ms)} / {_ms(s.latency_p95_ms)} | {_ms(s.behind_ms)} |"
            )
        lines += [f"- broken: {problem}" for problem in crowd.broken]
        lines += [f"Note: {crowd.note}"] if crowd.note else []
        lines.append("")
    return "\n".join(lines)


def cells_of(writers: list[str], others: list[str], apis: list[str]) -> Iterator[tuple[str, ...]]:
    """Every (writer, other, api) of the selection, writers varying slowest."""
    for writer in writers:
        for other in others:
            for api in apis:
                yield writer, other, api


def main(argv: list[str] | None = None) -> int:
    """Run the selected cells (or ``--watchers``) and print them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writer", action="append", choices=WRITERS, help="(all)")
    parser.add_argument("--other", action="append", choices=OTHERS, help="(all)")
    parser.add_argument("--api", action="append", choices=APIS, help="(all)")
    parser.add_argument("--writes", type=int, default=1000, help="generations before the final")
    parser.add_argument(
        "--interval", type=float, default=200, help="ms between writes, on average (200)"
    )
    parser.add_argument("--seed", type=int, default=1, help="of the writers' random waits")
    parser.add_argument("--json", action="store_true", help="one JSON list of cells on stdout")
    parser.add_argument("--check", action="store_true", help="exit 1 when a promise is broken")
    parser.add_argument(
        "--watchers",
        action="append",
        metavar="LAYOUT",
        help="instead of the matrix: watchers on one file, e.g. watch:2,cli,watch (repeatable)",
    )
    parser.add_argument("--seconds", type=float, default=5, help="--watchers: how long (5)")
    args = parser.parse_args(argv)
    if args.watchers:
        crowds = []
        for layout in args.watchers:
            crowd = run_crowd(
                layout,
                writer=(args.writer or ["close"])[0],
                seconds=args.seconds,
                interval_ms=args.interval,
                seed=args.seed,
            )
            print(f"{layout}: {crowd.wall_seconds} s", file=sys.stderr)
            crowds.append(crowd)
        print(
            json.dumps([asdict(c) for c in crowds], indent=1) if args.json else render_crowd(crowds)
        )
        return 1 if args.check and any(crowd.broken for crowd in crowds) else 0
    cells = []
    for writer, other, api in cells_of(
        args.writer or list(WRITERS), args.other or list(OTHERS), args.api or list(APIS)
    ):
        cell = run_cell(
            writer, other, api, writes=args.writes, interval_ms=args.interval, seed=args.seed
        )
        state = "ok" if not cell.broken else "BROKEN: " + "; ".join(cell.broken)
        print(f"{writer} / {other} / {api}: {cell.seconds} s, {state}", file=sys.stderr)
        cells.append(cell)
    print(json.dumps([asdict(cell) for cell in cells], indent=1) if args.json else render(cells))
    return 1 if args.check and any(cell.broken for cell in cells) else 0


if __name__ == "__main__":
    sys.exit(main())
