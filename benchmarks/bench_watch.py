"""How fast and how completely ``dra_metadata.watch`` sees updates of metadata files.

Every figure is measured in one run on one machine, next to baselines measured
the same way and interleaved with them; the ratios are what to compare, not the
absolute times.

What is measured
================

``latency``
    A writer process rewrites one metadata file on the "node"; the watcher notes
    ``CLOCK_MONOTONIC`` when the complete new object is in its hands (read and
    decoded), the writer when its last ``write()`` returned (before its ``close()``),
    or just before its ``rename()``.
    Latency = the difference, per update. Three writers:

    * ``truncate``: open with ``O_TRUNC``, the stream in two ``write()`` calls
      (half-written files really occur), close (Go v1.36's in-place write);
    * ``pwrite``: open, overwrite the old bytes in place in 16 ``pwrite()``
      pieces, front to back, every stream of the same length (a read between two
      pieces is a mixture of two generations that still decodes), close;
    * ``rename``: a temporary file in the same directory, written and closed, then
      renamed over the metadata file (Go v1.37).

    ``truncate`` and ``pwrite`` write a file the container sees through a real
    read-only single-file bind mount (``dra_metadata.testing.MountedMetadataTree``;
    without root a plain file, and the output says so); ``rename`` writes into a
    directory the watcher sees whole (a renamed file never shows through a
    single-file bind mount: that is the stale case). Contenders:

    * ``dra_metadata.watch``: the library, defaults (inotify on Linux);
    * ``raw inotify, every event``: watches on the file and its directory,
      ``poll()``, read and decode on every event (the floor; it delivers torn
      objects);
    * ``raw inotify, on close``: the same, reading only on ``IN_CLOSE_WRITE`` of
      the file or a rename into the directory (the floor of a reader that waits
      for the writer's close, as ``dra_metadata.watch`` does);
    * ``watchfiles default``: ``watchfiles.watch(file)`` with its defaults (step 50
      ms, debounce 1600 ms), then read and decode (truncating writer only, 60
      updates 150-250 ms apart, ``--quick``: 6, not interleaved: its latency is
      longer than the others' spacing).

    Rounds alternate the contenders (the order rotates every round); each
    contender watches ``--updates`` updates per round (default 40, ``--quick``:
    10) spaced 20-40 ms apart. A ratio row is the median, over the rounds, of
    the per-round ratio of the medians, so that machine noise in one round hits
    both sides of that round's ratio.

    Every delivered object is checked against what the writer wrote for that
    generation (device count and an attribute carrying the generation): a
    mismatch is a torn object delivered. ``missed``: generations never
    delivered (a watcher kept off the CPU longer than the spacing finds the file
    moved on; that is allowed; missing the *last* generation is not).

``bursts``
    The writer writes 10 generations back to back, then pauses 50 ms; 20 bursts
    (``--quick``: 5). Intermediate generations may be skipped; the last one of
    each burst must be delivered, and generations must never go backwards.

``idle CPU``
    A watcher on one request directory holding 100 metadata files, in its own
    process, doing nothing for 10 s (``--quick``: 1 s) after it has delivered the
    initial state; its CPU time is read from the kernel's per-process CPU clock.
    ``dra_metadata.watch`` (including its safety-net re-read of all 100 files every
    2 s) against ``watchfiles.watch`` on the same 100 paths at step 50 and step 5.

Targets: ``dra_metadata.watch`` median <= 1.2x ``raw inotify, on close`` for each
writer (the per-round ratio's median), median <= 10 ms and p99 <= 50 ms, zero
torn objects, zero final generations missed, idle below 1 % of one core.

Usage
=====

::

    python benchmarks/bench_watch.py            # full run (~2 min), prints a table
    python benchmarks/bench_watch.py --quick    # smoke run, ~20 s (noisy figures)
    python benchmarks/bench_watch.py --json     # the figures as JSON
    python benchmarks/bench_watch.py --check    # exit 1 when a target is missed

Without ``--check`` the script always exits 0: it is a measuring tool.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dra_metadata as dm  # noqa: E402 - after the path set-up, so the checkout is measured
from dra_metadata.testing import (  # noqa: E402
    MetadataTree,
    MountedMetadataTree,
    MountUnavailableError,
)

# The writer: payloads are encoded before it says "ready"; each update truncates the
# file and writes the stream in two halves (so readers can meet a half-written file),
# or (``pwrite``) overwrites it in place in 16 pieces, front to back, without truncating,
# every stream of the same length (so a read between two pieces is a mixture of two
# generations that still decodes), or (``rename``) writes and closes a temporary file
# and renames it over the file; the time is taken when the last write returns (before
# the close), or just before the rename (the readers hear of it during the call).
WRITER = r"""
import json, os, random, sys, time
import dra_metadata as dm

path, uid, first, count, mode, seed = sys.argv[1:7]
low, high = float(sys.argv[7]), float(sys.argv[8])
how = sys.argv[9]
first, count = int(first), int(count)
rng = random.Random(int(seed))

def payload(generation):
    devices = tuple(
        dm.Device("net.example.com", "node", f"dev-{i}",
                  attributes={"gen": dm.DeviceAttribute(int=generation)})
        for i in range(8 if how == "pwrite" else generation % 7 + 1)
    )
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="bench", namespace="ns", uid=uid, generation=generation),
        requests=(dm.DeviceMetadataRequest("net", devices),),
    )
    return dm.encode(md)

generations = list(range(first, first + count))
data = {g: payload(g) for g in generations}
if how == "pwrite":
    assert len({len(blob) for blob in data.values()}) == 1, "pwrite needs one stream length"
temporary = os.path.join(os.path.dirname(path), ".bench-writer.tmp")
print("ready", flush=True)
sys.stdin.readline()
time.sleep(0.2)
done = []
for index, generation in enumerate(generations):
    blob = data[generation]
    if how == "rename":
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, blob)
        os.close(fd)
        done.append((generation, time.monotonic_ns()))
        os.rename(temporary, path)
    else:
        if how == "pwrite":
            fd = os.open(path, os.O_WRONLY)
            size = -(-len(blob) // 16)
            for offset in range(0, len(blob), size):
                os.pwrite(fd, blob[offset:offset + size], offset)
        else:
            half = len(blob) // 2
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
            os.write(fd, blob[:half])
            os.write(fd, blob[half:])
        done.append((generation, time.monotonic_ns()))
        os.close(fd)
    if mode == "paced":
        time.sleep(rng.uniform(low, high))
    elif (index + 1) % 10 == 0:
        time.sleep(0.05)
print(json.dumps(done), flush=True)
"""

#: Devices per object of the ``pwrite`` writer (the others write ``generation % 7 + 1``).
PWRITE_DEVICES = 8


def complete(md: dm.DeviceMetadata, how: str = "truncate") -> bool:
    """Whether ``md`` is exactly what the writer (``how`` it writes) wrote for its generation."""
    generation = md.metadata.generation
    devices = [device for _request, device in md.devices()]
    expected = PWRITE_DEVICES if how == "pwrite" else generation % 7 + 1
    return len(devices) == expected and all(
        device.attribute("gen") == generation for device in devices
    )


@dataclass
class Setup:
    """The watched file: the container path, the node path, and how it is exposed."""

    root: Path
    container: Path
    host: Path
    uid: str
    generation: int
    mounted: bool
    note: str


def make_setup(scratch: Path, *, mounted: bool = True) -> tuple[Setup, MetadataTree]:
    """The watched file: bind-mounted (``mounted``, when the machine allows it) or plain."""
    note = "a directory watched whole (renames show)"
    tree: MetadataTree | None = None
    if mounted:
        try:
            tree = MountedMetadataTree(scratch / "node", scratch / "container", mode="in-place")
            note = "read-only single-file bind mount"
        except MountUnavailableError as err:
            note = f"plain file, not bind-mounted ({err.reason})"
    if tree is None:
        tree = MetadataTree(scratch / "container", mode="in-place")
        mounted = False
    device = tree.claim("bench").request("net").device("net.example.com", "node", "dev-0")
    tree.write()
    md = dm.read_file(device.path)
    setup = Setup(tree.root, device.path, device.host_path, md.metadata.uid, 1, mounted, note)
    return setup, tree


@dataclass
class Run:
    """One contender's deliveries: generation -> (delivery time, complete?)."""

    delivered: dict[int, int] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    torn: int = 0


Deliveries = Iterator[tuple[dm.DeviceMetadata, int]]
Contender = Callable[[Setup, Callable[[], None], float], Deliveries]


def dm_watch(setup: Setup, go: Callable[[], None], timeout: float) -> Deliveries:
    started = False
    for event in dm.watch(claim="bench", request="net", root=setup.root, timeout=timeout):
        now = time.monotonic_ns()
        if not started:
            started = True
            go()
            continue
        if event.kind == dm.WatchEventKind.UPDATE and event.metadata is not None:
            yield event.metadata, now


class RawInotify:
    """Plain inotify through ctypes, nothing of ``dra_metadata._watch``: the floor."""

    IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO = 0x2, 0x8, 0x80

    def __init__(self) -> None:
        import ctypes

        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")

    def add(self, path: Path, mask: int) -> None:
        if self.libc.inotify_add_watch(self.fd, os.fsencode(path), mask) < 0:
            raise OSError(f"inotify_add_watch {path}")

    def events(self, timeout: float) -> list[tuple[int, bytes]]:
        """(mask, name) of the events queued within ``timeout`` seconds."""
        import select
        import struct

        if not select.select([self.fd], [], [], max(0.0, timeout))[0]:
            return []
        data = os.read(self.fd, 65536)
        found, offset = [], 0
        while offset + 16 <= len(data):
            _wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
            found.append((mask, data[offset + 16 : offset + 16 + length].rstrip(b"\x00")))
            offset += 16 + length
        return found

    def close(self) -> None:
        os.close(self.fd)


def raw_inotify(on_close: bool) -> Contender:
    """Read and decode on every event, or (``on_close``) on a close after writing or a rename."""

    def contender(setup: Setup, go: Callable[[], None], timeout: float) -> Deliveries:
        raw = RawInotify()
        name = os.fsencode(setup.container.name)
        try:
            file_mask = raw.IN_CLOSE_WRITE if on_close else raw.IN_MODIFY | raw.IN_CLOSE_WRITE
            raw.add(setup.container, file_mask)
            raw.add(setup.container.parent, raw.IN_MOVED_TO)
            go()
            end = time.monotonic() + timeout
            while (left := end - time.monotonic()) > 0:
                events = raw.events(left)
                if not any(not entry or entry == name for _mask, entry in events):
                    continue
                try:
                    md = dm.read_file(setup.container)
                except dm.DRAMetadataError:
                    continue  # torn: the next event brings the rest
                yield md, time.monotonic_ns()
        finally:
            raw.close()

    return contender


def watchfiles_with(step: int) -> Contender:
    def contender(setup: Setup, go: Callable[[], None], timeout: float) -> Deliveries:
        import watchfiles

        go()
        end = time.monotonic() + timeout
        for changes in watchfiles.watch(
            setup.container,
            step=step,
            watch_filter=None,
            rust_timeout=200,
            yield_on_timeout=True,
        ):
            if time.monotonic() > end:
                return
            if not changes:
                continue
            try:
                md = dm.read_file(setup.container)
            except dm.DRAMetadataError:
                continue
            yield md, time.monotonic_ns()

    return contender


def run_writer(
    setup: Setup,
    contender: Contender,
    *,
    count: int,
    mode: str,
    spacing: tuple[float, float],
    seed: int,
    how: str = "truncate",
) -> tuple[Run, list[tuple[int, int]]]:
    """Start the writer, let ``contender`` watch until the last generation arrives."""
    first = setup.generation + 1
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(setup.host),
            setup.uid,
            str(first),
            str(count),
            mode,
            str(seed),
            str(spacing[0]),
            str(spacing[1]),
            how,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert writer.stdin is not None
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready"

    def go() -> None:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()

    last = first + count - 1
    budget = 5.0 + count * (spacing[1] + 0.05)
    run = Run()
    try:
        for md, at in contender(setup, go, budget):
            generation = md.metadata.generation
            if not complete(md, how):
                run.torn += 1
                continue
            run.order.append(generation)
            run.delivered.setdefault(generation, at)
            if generation >= last:
                break
        out, _ = writer.communicate(timeout=60)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    setup.generation = last
    done = [(int(g), int(t)) for g, t in json.loads(out.strip().splitlines()[-1])]
    return run, done


def pwrite_payload(generation: int, uid: str) -> bytes:
    """What the ``pwrite`` writer writes for ``generation`` (the stream it overwrites)."""
    devices = tuple(
        dm.Device(
            "net.example.com",
            "node",
            f"dev-{i}",
            attributes={"gen": dm.DeviceAttribute(int=generation)},
        )
        for i in range(PWRITE_DEVICES)
    )
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="bench", namespace="ns", uid=uid, generation=generation),
        requests=(dm.DeviceMetadataRequest("net", devices),),
    )
    return dm.encode(md)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class Latency:
    """Latency figures of one contender with one writer, in milliseconds, over every round."""

    name: str
    writer: str
    n: int
    median_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    torn_delivered: int
    missed: int
    backwards: int
    missed_generations: list[int]
    last_missed: bool
    round_medians_ms: list[float] = field(default_factory=list)


@dataclass
class Sample:
    """One round of one contender: the latencies and what went wrong."""

    latencies: list[float]
    torn: int
    missed: list[int]
    backwards: int
    last_missed: bool


def latency_round(
    setup: Setup,
    contender: Contender,
    *,
    count: int,
    spacing: tuple[float, float],
    seed: int,
    how: str,
) -> Sample:
    run, done = run_writer(
        setup, contender, count=count, mode="paced", spacing=spacing, seed=seed, how=how
    )
    latencies = [max(0.0, (run.delivered[g] - t) / 1e6) for g, t in done if g in run.delivered]
    missed = [g for g, _t in done if g not in run.delivered]
    backwards = sum(1 for a, b in zip(run.order, run.order[1:], strict=False) if b <= a)
    return Sample(latencies, run.torn, missed, backwards, bool(done) and done[-1][0] in missed)


def summarize(name: str, writer: str, samples: list[Sample]) -> Latency:
    """One contender's rounds, pooled (the per-round medians kept for the ratios)."""
    latencies = [value for sample in samples for value in sample.latencies] or [float("nan")]
    missed = [g for sample in samples for g in sample.missed]
    return Latency(
        name,
        writer,
        sum(len(sample.latencies) for sample in samples),
        statistics.median(latencies),
        percentile(latencies, 0.90),
        percentile(latencies, 0.99),
        max(latencies),
        sum(sample.torn for sample in samples),
        len(missed),
        sum(sample.backwards for sample in samples),
        missed[:20],
        any(sample.last_missed for sample in samples),
        [statistics.median(sample.latencies or [float("nan")]) for sample in samples],
    )


def paired_ratio(ours: Latency, theirs: Latency) -> float:
    """The median over the rounds of ours' round median / theirs' round median."""
    return statistics.median(
        a / b for a, b in zip(ours.round_medians_ms, theirs.round_medians_ms, strict=True)
    )


@dataclass
class Bursts:
    """Back-to-back writes: was the last generation of every burst delivered?"""

    bursts: int
    writes: int
    delivered: int
    final_missed: int
    torn_delivered: int
    backwards: int


def burst_case(setup: Setup, *, bursts: int, seed: int) -> Bursts:
    run, done = run_writer(
        setup, dm_watch, count=bursts * 10, mode="burst", spacing=(0.0, 0.0), seed=seed
    )
    finals = [done[i][0] for i in range(9, len(done), 10)]
    return Bursts(
        bursts,
        len(done),
        len(run.delivered),
        sum(1 for g in finals if g not in run.delivered),
        run.torn,
        sum(1 for a, b in zip(run.order, run.order[1:], strict=False) if b <= a),
    )


IDLE_DM = r"""
import sys
import dra_metadata as dm
seen = 0
for event in dm.watch(claim="idle", request="r", root=sys.argv[1]):
    seen += 1
    if seen == int(sys.argv[2]):
        print("ready", flush=True)
"""

IDLE_WATCHFILES = r"""
import sys
import watchfiles
step, paths = int(sys.argv[1]), sys.argv[2:]
watcher = watchfiles.watch(*paths, step=step, watch_filter=None)
print("ready", flush=True)
for _ in watcher:
    pass
"""


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far, from the kernel's per-process CPU clock."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, SCHED)
    except OSError:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_case(argv: list[str], window: float) -> float:
    """Percent of one core a process spends while idle for ``window`` seconds."""
    child = subprocess.Popen(
        [sys.executable, "-c", *argv], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"idle watcher did not start: {line!r}")
        time.sleep(0.5)
        start_cpu, start = cpu_seconds(child.pid), time.monotonic()
        time.sleep(window)
        end_cpu, end = cpu_seconds(child.pid), time.monotonic()
    finally:
        child.kill()
        child.wait()
    return 100.0 * (end_cpu - start_cpu) / (end - start)


def idle_figures(scratch: Path, window: float, files: int = 100) -> dict[str, float]:
    tree = MetadataTree(scratch / "idle")
    request = tree.claim("idle").request("r")
    for index in range(files):
        request.device(f"d{index:03}.example.com", "node", f"dev-{index}")
    paths = [str(p) for p in tree.write()]
    return {
        "dra_metadata.watch": idle_case([IDLE_DM, str(tree.root), str(files)], window),
        "watchfiles default": idle_case([IDLE_WATCHFILES, "50", *paths], window),
        "watchfiles step=5": idle_case([IDLE_WATCHFILES, "5", *paths], window),
    }


@dataclass
class Target:
    name: str
    value: float
    limit: str
    ok: bool


@dataclass
class Report:
    environment: dict[str, Any]
    latency: list[Latency]
    bursts: Bursts
    idle_cpu_percent: dict[str, float]
    ratios: dict[str, float]
    targets: list[Target]


#: The contenders of the interleaved rounds, in their first round's order.
CONTENDERS: dict[str, Contender] = {
    "dra_metadata.watch": dm_watch,
    "raw inotify, every event": raw_inotify(on_close=False),
    "raw inotify, on close": raw_inotify(on_close=True),
}
#: The writers, in the order they run.
WRITERS = ("truncate", "pwrite", "rename")
#: dra_metadata.watch's median over the floor's (raw inotify, on close), per writer.
RAW_TARGET = 1.2


def interleaved(setup: Setup, how: str, rounds: int, updates: int, seed: int) -> list[Latency]:
    """Every contender over ``rounds`` rounds of ``updates`` updates, the order rotating."""
    names = list(CONTENDERS)
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(
                latency_round(
                    setup,
                    CONTENDERS[name],
                    count=updates,
                    spacing=(0.02, 0.04),
                    seed=seed + index,
                    how=how,
                )
            )
    return [summarize(name, how, samples[name]) for name in names]


def measure(quick: bool, rounds: int | None = None, updates: int | None = None) -> Report:
    import watchfiles

    rounds = rounds or (3 if quick else 7)
    updates = updates or (10 if quick else 40)
    slow_updates, bursts, window = (6, 5, 1.0) if quick else (60, 20, 10.0)
    latency: list[Latency] = []
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as scratch_name:
        scratch = Path(scratch_name)
        setup, tree = make_setup(scratch / "mounted")
        try:
            latency += interleaved(setup, "truncate", rounds, updates, seed=1)
            slow = latency_round(
                setup,
                watchfiles_with(50),
                count=slow_updates,
                spacing=(0.15, 0.25),
                seed=3,
                how="truncate",
            )
            latency.append(summarize("watchfiles default", "truncate", [slow]))
            burst = burst_case(setup, bursts=bursts, seed=5)
            # Same-length in-place overwrites: every stream of one length from here on.
            setup.generation = 10**6
            setup.host.write_bytes(pwrite_payload(setup.generation, setup.uid))
            latency += interleaved(setup, "pwrite", rounds, updates, seed=100)
        finally:
            tree.close()
        plain, plain_tree = make_setup(scratch / "plain", mounted=False)
        try:
            latency += interleaved(plain, "rename", rounds, updates, seed=200)
        finally:
            plain_tree.close()
        idle = idle_figures(scratch, window)
    by_key = {(case.name, case.writer): case for case in latency}
    ratios: dict[str, float] = {}
    targets: list[Target] = []
    ours_cases = [case for case in latency if case.name == "dra_metadata.watch"]
    for how in WRITERS:
        ours = by_key["dra_metadata.watch", how]
        floor = by_key["raw inotify, on close", how]
        every = by_key["raw inotify, every event", how]
        on_close = paired_ratio(ours, floor)
        ratios[f"{how}: dra_metadata.watch / raw inotify, on close (median)"] = on_close
        ratios[f"{how}: dra_metadata.watch / raw inotify, every event (median)"] = paired_ratio(
            ours, every
        )
        targets.append(
            Target(
                f"{how} writer: median / raw inotify on close (per-round ratio, median)",
                on_close,
                f"<= {RAW_TARGET}",
                on_close <= RAW_TARGET,
            )
        )
    truncating = by_key["dra_metadata.watch", "truncate"]
    ratios["watchfiles default / dra_metadata.watch (median)"] = (
        by_key["watchfiles default", "truncate"].median_ms / truncating.median_ms
    )
    worst_median = max(case.median_ms for case in ours_cases)
    worst_p99 = max(case.p99_ms for case in ours_cases)
    torn = sum(case.torn_delivered for case in ours_cases) + burst.torn_delivered
    final_missed = sum(int(case.last_missed) for case in ours_cases) + burst.final_missed
    backwards = sum(case.backwards for case in ours_cases) + burst.backwards
    targets += [
        Target("median latency, slowest writer (ms)", worst_median, "<= 10", worst_median <= 10),
        Target("p99 latency, slowest writer (ms)", worst_p99, "<= 50", worst_p99 <= 50),
        Target("torn objects delivered (every writer, bursts)", torn, "== 0", torn == 0),
        Target(
            "torn objects delivered, same-length in-place (pwrite) writer",
            by_key["dra_metadata.watch", "pwrite"].torn_delivered,
            "== 0",
            by_key["dra_metadata.watch", "pwrite"].torn_delivered == 0,
        ),
        Target(
            "final generations missed (each burst's last, each round's last)",
            final_missed,
            "== 0",
            final_missed == 0,
        ),
        Target("generations delivered backwards", backwards, "== 0", backwards == 0),
        Target(
            "idle CPU, 100 files (% of one core)",
            idle["dra_metadata.watch"],
            "< 1",
            idle["dra_metadata.watch"] < 1,
        ),
    ]
    environment = {
        "dra_metadata": dm.__version__,
        "python": platform.python_version(),
        "watchfiles": watchfiles.__version__,
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "quick": quick,
        "rounds": rounds,
        "updates_per_round": updates,
        "bind_mounted": setup.mounted,
        "file": setup.note,
        "rename_file": plain.note,
    }
    return Report(environment, latency, burst, idle, ratios, targets)


def render(report: Report) -> str:
    env = report.environment
    lines = [
        f"dra_metadata {env['dra_metadata']} | Python {env['python']} | watchfiles "
        f"{env['watchfiles']} | kernel {env['kernel']} | {env['cpus']} CPUs"
        + (" | quick" if env["quick"] else "")
        + f" | {env['rounds']} interleaved rounds x {env['updates_per_round']} updates",
        f"watched file: {env['file']} (truncate, pwrite); {env['rename_file']} (rename)",
        "",
        "latency: write (or rename) done -> complete new object delivered (ms)",
        f"{'writer':<9} {'contender':<25} {'n':>4} {'median':>8} {'p90':>8} {'p99':>8}"
        f" {'max':>8} {'torn':>5} {'missed':>6}",
    ]
    for case in report.latency:
        lines.append(
            f"{case.writer:<9} {case.name:<25} {case.n:>4} {case.median_ms:>8.2f}"
            f" {case.p90_ms:>8.2f} {case.p99_ms:>8.2f} {case.max_ms:>8.2f}"
            f" {case.torn_delivered:>5} {case.missed:>6}"
        )
    burst = report.bursts
    lines += [
        "",
        f"bursts (dra_metadata.watch): {burst.bursts} bursts of 10 back-to-back writes, "
        f"{burst.delivered}/{burst.writes} generations delivered, final generations "
        f"missed {burst.final_missed}, torn {burst.torn_delivered}, backwards {burst.backwards}",
        "",
        "idle CPU with 100 files (% of one core): "
        + ", ".join(f"{name} {value:.3f}" for name, value in report.idle_cpu_percent.items()),
        "",
        "ratios (measured in this run):",
    ]
    lines += [f"  {name}: {value:.2f}x" for name, value in report.ratios.items()]
    lines += ["", f"{'target':<72} {'value':>8} {'limit':>7}  ok"]
    for target in report.targets:
        lines.append(
            f"{target.name:<72} {target.value:>8.3f} {target.limit:>7}  "
            + ("yes" if target.ok else "MISS")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (noisy figures)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per writer")
    parser.add_argument("--updates", type=int, help="updates per contender and round")
    args = parser.parse_args(argv)
    report = measure(args.quick, args.rounds, args.updates)
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(render(report))
    if args.check and not all(target.ok for target in report.targets):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
