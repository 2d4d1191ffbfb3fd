"""Torn objects from in-place writers whose handles a watch cannot count, and what it costs.

A watch on inotify reads a changed file on the close that ends a spell of one
writer, else once no write has been heard for 1 s (``QUIET``; docs/watching.md,
the rule for writers without the fence). This script races
``dra_metadata.watch`` (or ``awatch``, ``wait_for``) against writers that make
that rule work, each doing *stalled* in-place writes: the next generation's stream,
of the same length as the last, written over it in two ``pwrite`` calls, the
first quarter (the object's metadata and its first devices), a stall, the rest.
Read in the stall, the file holds a mixture that decodes (``[g+1, g+1, g, g, ...]``).

Scenarios:

``twin``
    Two handles opened back to back (inotify merges the two identical ``IN_OPEN``
    events into one, so the count is one short); the first quarter through one
    handle, which is then closed, the stall, the rest through the other.
``overlap``
    Four writer processes, each taking the next generation from a shared counter
    and writing it with a stall, so that their writes overlap.
``idle``
    Another process opens the file read-write while it is watched and holds the
    handle, idle, for over 1 s before the writes begin and until they end; the
    writer opens, writes with a stall and closes, again and again.

Every scenario ends with one more write of the highest generation, by a single
handle (the twin writer: by its two handles). Checked per scenario: the objects
delivered whose devices do not all carry the object's generation (torn), whether
the final generation was delivered, and its latency (its last ``pwrite``
returned -> delivered). A write's *span* is from its first ``pwrite`` call to
its last one's return. The promise: no mixture with overlapping writers or an idle
handle; with two handles opened back to back, a watch's first write can be read at
the first handle's close (inotify hears the two opens as one), later ones not.

Usage::

    python benchmarks/bench_watch_handles.py                 # 1,000 writes per scenario
    python benchmarks/bench_watch_handles.py --writes 100    # quicker
    python benchmarks/bench_watch_handles.py --json

The test suite runs :func:`race` with 100 writes per scenario
(``tests/adversarial/test_watch_handles.py``; 1,000 with ``-m adversarial_long``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dra_metadata as dm  # noqa: E402 - after the path set-up, so the checkout is measured

DRIVER = "x.example.com"
DEVICES = 8
#: The first generation (every generation has six digits: every stream has one length).
FIRST = 100000
SCENARIOS = ("twin", "overlap", "idle")

WRITER = r"""
import json, multiprocessing, os, random, sys, time
import dra_metadata as dm

path, scenario = sys.argv[1], sys.argv[2]
first, count = int(sys.argv[3]), int(sys.argv[4])
stall, pause, seed = float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
last = first + count  # generations first+1 .. last, then the final one, last + 1

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

length = len(stream(first))
quarter = length // 4

def write(generation, twin):
    # One stalled in-place write; returns (generation, first pwrite called, last returned).
    blob = stream(generation)
    assert len(blob) == length, "streams of one length"
    if twin:
        head = os.open(path, os.O_WRONLY)
        tail = os.open(path, os.O_WRONLY)  # back to back: one IN_OPEN heard for two
    else:
        head = tail = os.open(path, os.O_WRONLY)
    start = time.monotonic()
    os.pwrite(head, blob[:quarter], 0)
    if twin:
        os.close(head)
    time.sleep(stall)
    os.pwrite(tail, blob[quarter:], quarter)
    end = time.monotonic()
    os.close(tail)
    return generation, start, end

def lines(records):
    for record in records:
        print(json.dumps(record), flush=True)

def overlapping(counter, out, index):
    rng = random.Random(seed + index)
    records = []
    while True:
        with counter.get_lock():
            counter.value += 1
            generation = counter.value
        if generation > last:
            break
        records.append(write(generation, False))
        time.sleep(rng.uniform(0, pause))
    out.put(records)

def hold(ready, done):
    fd = os.open(path, os.O_RDWR)  # idle: never written through
    ready.set()
    done.wait()
    os.close(fd)

rng = random.Random(seed)
context = multiprocessing.get_context("fork")
print("ready", flush=True)
sys.stdin.readline()
holder = None
if scenario == "idle":  # opened while watched, idle for over 1 s before the writes begin
    ready, done = context.Event(), context.Event()
    holder = context.Process(target=hold, args=(ready, done))
    holder.start()
    ready.wait()
    time.sleep(1.1)
records = []
if scenario == "overlap":
    counter, out = context.Value("q", first), context.Queue()
    writers = [context.Process(target=overlapping, args=(counter, out, i)) for i in range(4)]
    for writer in writers:
        writer.start()
    for _ in writers:
        records += out.get()
    for writer in writers:
        writer.join()
else:
    for generation in range(first + 1, last + 1):
        records.append(write(generation, scenario == "twin"))
        time.sleep(rng.uniform(0, pause))
records.append(write(last + 1, scenario == "twin"))
if holder is not None:
    done.set()
    holder.join()
lines(sorted(records))
print("done", flush=True)
"""


def stream(generation: int) -> bytes:
    """What the writers write for ``generation``: eight devices carrying it."""
    devices = tuple(
        dm.Device(DRIVER, "p", f"dev-{i}", attributes={"gen": dm.DeviceAttribute(int=generation)})
        for i in range(DEVICES)
    )
    md = dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name="c", namespace="ns", uid="u", generation=generation),
        requests=(dm.DeviceMetadataRequest("r", devices),),
    )
    return dm.encode(md)


def generation_of(md: dm.DeviceMetadata) -> int:
    """The object's generation (a merged object's: its one file's)."""
    if isinstance(md, dm.MergedDeviceMetadata):
        return md.sources[0].generation
    return md.metadata.generation


def whole(md: dm.DeviceMetadata) -> bool:
    """Whether every device of ``md`` carries the object's own generation (not a mixture)."""
    generation = generation_of(md)
    return all(device.attribute("gen") == generation for _request, device in md.devices())


@dataclass
class Result:
    """One scenario's run: what was written, what was delivered, what was torn."""

    scenario: str
    api: str
    writes: int
    delivered: int = 0
    torn: list[int] = field(default_factory=list)  # generations delivered as a mixture
    torn_spans_ms: list[float] = field(default_factory=list)  # those writes' spans
    final_delivered: bool = False  # the final generation delivered whole
    final_latency_ms: float = float("nan")  # the final write's last pwrite -> delivered
    median_span_ms: float = float("nan")  # a write's first pwrite call -> last return
    longest_span_ms: float = float("nan")
    spans: dict[int, float] = field(default_factory=dict, repr=False)  # generation -> seconds


def _prepare(root: Path) -> Path:
    directory = root / "resourceclaims" / "c" / "r"
    directory.mkdir(parents=True)
    path = directory / f"{DRIVER}-metadata.json"
    path.write_bytes(stream(FIRST))
    return path


def _writer(
    path: Path, scenario: str, count: int, stall: float, pause: float, seed: int
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(path),
            scenario,
            str(FIRST),
            str(count),
            str(stall),
            str(pause),
            str(seed),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


Delivery = tuple[dm.DeviceMetadata, float]  # an object delivered, and when (monotonic)


def _watch(root: Path, budget: float, go: Callable[[], None], final: int) -> list[Delivery]:
    found: list[Delivery] = []
    events = dm.watch(claim="c", request="r", root=root, timeout=budget)
    for index, event in enumerate(events):
        if index == 0:
            go()  # the initial object is in: the writer may start
            continue
        if event.kind == dm.WatchEventKind.UPDATE and event.metadata is not None:
            found.append((event.metadata, time.monotonic()))
            if event.metadata.metadata.generation == final:
                break
    events.close()
    return found


def _awatch(root: Path, budget: float, go: Callable[[], None], final: int) -> list[Delivery]:
    async def main() -> list[Delivery]:
        found: list[Delivery] = []
        events = dm.awatch(claim="c", request="r", root=root, timeout=budget)
        index = 0
        async for event in events:
            index += 1
            if index == 1:
                go()
                continue
            if event.kind == dm.WatchEventKind.UPDATE and event.metadata is not None:
                found.append((event.metadata, time.monotonic()))
                if event.metadata.metadata.generation == final:
                    break
        await events.aclose()
        return found

    return asyncio.run(main())


def _wait_for(root: Path, budget: float, go: Callable[[], None], final: int) -> list[Delivery]:
    """``wait_for()`` called again and again, each time for a generation past the last."""
    found: list[Delivery] = []
    started = False
    target = FIRST + 1
    deadline = time.monotonic() + budget

    def until(md: dm.DeviceMetadata) -> bool:
        nonlocal started
        if not started:
            started = True
            go()
        return dm.has_generation(target)(md)

    while True:
        md = dm.wait_for(
            claim="c", request="r", root=root, until=until, timeout=deadline - time.monotonic()
        )
        found.append((md, time.monotonic()))
        if generation_of(md) >= final:
            return found
        target = generation_of(md) + 1


APIS: dict[str, Callable[[Path, float, Callable[[], None], int], list[Delivery]]] = {
    "watch": _watch,
    "awatch": _awatch,
    "wait_for": _wait_for,
}


def race(
    root: Path,
    scenario: str,
    count: int,
    *,
    stall: float = 0.01,
    pause: float = 0.004,
    seed: int = 1,
    api: str = "watch",
) -> Result:
    """Race ``count`` stalled writes of ``scenario`` (then the final one) against ``api``."""
    path = _prepare(root)
    final = FIRST + count + 1
    budget = 60 + count * (0.05 + stall)
    result = Result(scenario, api, count + 1)
    with _writer(path, scenario, count, stall, pause, seed) as writer:
        assert writer.stdin is not None
        assert writer.stdout is not None
        stdin = writer.stdin
        try:
            assert writer.stdout.readline() == "ready\n"

            def go() -> None:
                stdin.write("go\n")
                stdin.flush()

            found = APIS[api](root, budget, go, final)
            out, _ = writer.communicate(timeout=120)
        finally:
            if writer.poll() is None:
                writer.kill()
    assert writer.returncode == 0, f"the writer failed ({writer.returncode})"
    lines = out.splitlines()
    assert lines[-1] == "done", lines[-3:]
    records = [json.loads(line) for line in lines[:-1]]
    ended = {generation: end for generation, _start, end in records}
    result.spans = {generation: end - start for generation, start, end in records}
    spans = sorted(result.spans.values())
    result.median_span_ms = spans[len(spans) // 2] * 1000
    result.longest_span_ms = spans[-1] * 1000
    for md, at in found:
        result.delivered += 1
        generation = generation_of(md)
        if not whole(md):
            result.torn.append(generation)
            result.torn_spans_ms.append(result.spans.get(generation, float("nan")) * 1000)
        if generation == final and whole(md):
            result.final_delivered = True
            result.final_latency_ms = (at - ended[final]) * 1000
    return result


def measure(
    writes: int, apis: list[str], scenarios: list[str], stall: float, pause: float
) -> list[Result]:
    results = []
    for api in apis:
        for scenario in scenarios:
            with tempfile.TemporaryDirectory(prefix="bench-watch-handles-") as scratch:
                results.append(
                    race(Path(scratch), scenario, writes, stall=stall, pause=pause, api=api)
                )
    return results


def render(results: list[Result]) -> str:
    lines = [
        f"dra_metadata {dm.__version__}: stalled in-place writes against writers whose handles "
        "inotify cannot count",
        f"{'scenario':<9} {'api':<9} {'writes':>6} {'delivered':>9} {'torn':>5} "
        f"{'final':>6} {'final latency':>14} {'span median':>12} {'span max':>9}",
    ]
    for r in results:
        lines.append(
            f"{r.scenario:<9} {r.api:<9} {r.writes:>6} {r.delivered:>9} {len(r.torn):>5} "
            f"{'yes' if r.final_delivered else 'NO':>6} {r.final_latency_ms:>11.1f} ms "
            f"{r.median_span_ms:>9.1f} ms {r.longest_span_ms:>6.0f} ms"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=1000, help="stalled writes per scenario")
    parser.add_argument("--stall", type=float, default=0.01, help="seconds each write stalls")
    parser.add_argument("--pause", type=float, default=0.004, help="most seconds between writes")
    parser.add_argument(
        "--api", action="append", choices=sorted(APIS), help="watch (default), awatch, wait_for"
    )
    parser.add_argument(
        "--scenario", action="append", choices=SCENARIOS, help="twin, overlap, idle (all)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    scenarios = args.scenario or list(SCENARIOS)
    results = measure(args.writes, args.api or ["watch"], scenarios, args.stall, args.pause)
    if args.json:
        print(
            json.dumps(
                [{k: v for k, v in asdict(r).items() if k != "spans"} for r in results], indent=2
            )
        )
    else:
        print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
