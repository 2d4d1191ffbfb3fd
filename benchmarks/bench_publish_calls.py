"""What one ``prepare`` of a one-device request costs: system calls and time, before and after.

What is measured
================

A child Python process makes a publisher (plugin data and CDI directories on
``/dev/shm`` where there is one) and prepares ``N`` fresh claims, one request of
one GPU-like device each. ``strace -f -c`` counts its system calls; the same
child with ``N = 0`` (imports, the publisher, the directories) is counted too, and
the figure is ``(calls with N - calls with 0) / N``, by system call.

The same child runs the package of this checkout and the package of a baseline
commit (``--baseline``, default the last commit before the publisher was split
into layers), extracted with ``git archive``: both are counted and timed in the
same run, in interleaved rounds whose order alternates, and the time figure is
the median over the rounds of the ratio, within the round, of this checkout's
time per prepare to the baseline's. Without git (an sdist) the baseline's
figures are the ones recorded when the target was set: 89 system calls.

Targets (issue 35, "Check once, open once")
==========================================

* at most 60 system calls per prepare of a one-device request;
* time per prepare not above the baseline's (ratio at most 1.0; ``--check``
  allows 1.1 for the noise of a loaded machine).

Usage
=====

::

    python benchmarks/bench_publish_calls.py            # 200 prepares a side, 9 timed rounds
    python benchmarks/bench_publish_calls.py --quick    # 50 prepares, 3 rounds
    python benchmarks/bench_publish_calls.py --json     # the figures as JSON
    python benchmarks/bench_publish_calls.py --check    # exit 1 when a target is missed
    python benchmarks/bench_publish_calls.py --baseline HEAD~3   # another baseline

Needs ``strace`` for the counts (without it only the times are measured, and
``--check`` says so and fails).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

REPO = Path(__file__).resolve().parent.parent
#: The last commit of the publisher as one 1,290-line module (issue 35's "today").
BASELINE = "b1c3bbd"
#: The figure measured at BASELINE when the target was set (strace -c, 20 prepares minus 0).
RECORDED_BASELINE_CALLS = 89
TARGET_CALLS = 60
TARGET_RATIO = 1.0
CHECK_RATIO = 1.1
SHM = "/dev/shm"

CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import dra_metadata as dm
root, count = sys.argv[2], int(sys.argv[3])
pub = dm.MetadataPublisher("gpu.example.com", plugin_data_dir=root + "/plugin",
                           cdi_dir=root + "/cdi")
gpu = pub.device("worker-1", "gpu-0", attributes={
    "uuid": "GPU-00000000-0b1d-4c55-9a1e-3d2b7c9e0f11", "index": 0,
    "model": "H100-SXM5-80GB", "driverVersion": dm.DeviceAttribute(version="570.124.6"),
    "resource.kubernetes.io/pciBusID": "0000:03:00.0"})
claims = [dm.ClaimRef(name=f"claim-{i}", namespace="ml", uid=f"uid-{i}") for i in range(count)]
# The first prepare makes the node directories, as a driver's first claim does: not counted.
pub.prepare(dm.ClaimRef(name="first", namespace="ml", uid="first"), "gpu", [gpu])
start = time.perf_counter()
for claim in claims:
    pub.prepare(claim, "gpu", [gpu])
print(time.perf_counter() - start)
"""


class Side(TypedDict):
    """One package's figures."""

    calls: float | None
    by_call: dict[str, float]
    ms: float


class Figures(TypedDict):
    """A run's figures: each side's, and the time ratio."""

    prepares: int
    rounds: int
    baseline: str
    current: Side
    before: Side
    ratio: float | None
    target_calls: int
    target_ratio: float


def extract(revision: str, into: Path) -> Path | None:
    """The package at ``revision``, extracted under ``into`` (None: no git or no such commit)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return None
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", revision, "dra_metadata"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        return None
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def run_child(package: Path, scratch: Path, count: int, strace: Path | None) -> float:
    """Run the child on a fresh scratch directory; its seconds of prepares."""
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    command = [sys.executable, "-c", CHILD, str(package), str(scratch), str(count)]
    if strace is not None:
        command = ["strace", "-f", "-c", "-U", "name,calls", "-o", str(strace), *command]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def parse_strace(path: Path) -> dict[str, int]:
    """The calls per system call of an ``strace -c -U name,calls`` summary."""
    counts: dict[str, int] = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit() and fields[0] != "total":
            counts[fields[0]] = int(fields[1])
    return counts


def count_calls(package: Path, scratch: Path, prepares: int) -> dict[str, float]:
    """System calls per prepare, by name: ``N`` prepares minus 0, over ``N``."""
    with tempfile.TemporaryDirectory() as tmp:
        many, none = Path(tmp) / "many", Path(tmp) / "none"
        run_child(package, scratch, prepares, many)
        run_child(package, scratch, 0, none)
        with_n, with_0 = parse_strace(many), parse_strace(none)
    per = {
        name: (with_n.get(name, 0) - with_0.get(name, 0)) / prepares
        for name in set(with_n) | set(with_0)
    }
    return {name: round(value, 2) for name, value in sorted(per.items()) if abs(value) >= 0.05}


def measure(prepares: int, rounds: int, baseline: str, base_dir: str) -> Figures:
    """Count and time both packages."""
    have_strace = shutil.which("strace") is not None
    with tempfile.TemporaryDirectory(dir=base_dir) as tmp:
        work = Path(tmp)
        before_package = extract(baseline, work / "baseline")
        packages = {"current": REPO}
        if before_package is not None:
            packages["before"] = before_package
        by_call: dict[str, dict[str, float]] = {}
        for name, package in packages.items():
            by_call[name] = count_calls(package, work / "node", prepares) if have_strace else {}
        times: dict[str, list[float]] = {side: [] for side in packages}
        ratios: list[float] = []
        for round_ in range(rounds):
            order = list(packages.items())
            if round_ % 2:
                order.reverse()
            got = {
                name: run_child(package, work / "node", prepares, None) / prepares
                for name, package in order
            }
            for name, seconds in got.items():
                times[name].append(seconds)
            if "before" in got:
                ratios.append(got["current"] / got["before"])

    def side(name: str) -> Side:
        counted = by_call.get(name, {})
        calls: float | None = round(sum(counted.values()), 1) if counted else None
        if name == "before" and calls is None:
            calls = float(RECORDED_BASELINE_CALLS)
        ms = round(statistics.median(times[name]) * 1000, 3) if times.get(name) else 0.0
        return {"calls": calls, "by_call": counted, "ms": ms}

    return {
        "prepares": prepares,
        "rounds": rounds,
        "baseline": baseline if before_package is not None else "recorded",
        "current": side("current"),
        "before": side("before"),
        "ratio": round(statistics.median(ratios), 3) if ratios else None,
        "target_calls": TARGET_CALLS,
        "target_ratio": TARGET_RATIO,
    }


def report(figures: Figures) -> str:
    """The figures as a table, then the calls by name."""
    now, before = figures["current"], figures["before"]
    ratio = figures["ratio"]
    lines = [
        f"prepare of a one-device request: {figures['prepares']} prepares a side, "
        f"{figures['rounds']} timed rounds, baseline {figures['baseline']}",
        "",
        "| figure | baseline | this checkout | target |",
        "| --- | --- | --- | --- |",
        f"| system calls per prepare | {before['calls']} | {now['calls']} "
        f"| <= {figures['target_calls']} |",
        f"| ms per prepare (median) | {before['ms'] or '-'} | {now['ms']} | - |",
        f"| time ratio, this / baseline (median per round) | - | "
        f"{'-' if ratio is None else ratio} | <= {figures['target_ratio']} |",
        "",
        "| system call | baseline | this checkout |",
        "| --- | --- | --- |",
    ]
    names = sorted(
        set(now["by_call"]) | set(before["by_call"]),
        key=lambda name: -max(now["by_call"].get(name, 0), before["by_call"].get(name, 0)),
    )
    for name in names:
        lines.append(
            f"| {name} | {before['by_call'].get(name, 0):g} | {now['by_call'].get(name, 0):g} |"
        )
    return "\n".join(lines)


def missed(figures: Figures) -> list[str]:
    """The targets missed (``--check``)."""
    out = []
    calls = figures["current"]["calls"]
    if calls is None:
        out.append("system calls not counted: install strace")
    elif calls > TARGET_CALLS:
        out.append(f"system calls per prepare: {calls} > {TARGET_CALLS}")
    ratio = figures["ratio"]
    if ratio is not None and ratio > CHECK_RATIO:
        out.append(f"time per prepare: {ratio} x the baseline's > {CHECK_RATIO}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0, or 1 with ``--check`` when a target is missed."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 prepares a side, 3 rounds")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--baseline", default=BASELINE, help=f"baseline commit ({BASELINE})")
    parser.add_argument("--dir", help="where to write the nodes (default: /dev/shm)")
    args = parser.parse_args(argv)
    base_dir = args.dir or (SHM if os.path.isdir(SHM) else tempfile.gettempdir())
    prepares, rounds = (50, 3) if args.quick else (200, 9)
    started = time.perf_counter()
    figures = measure(prepares, rounds, args.baseline, base_dir)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(report(figures))
        print(f"\n({time.perf_counter() - started:.1f} s)")
    problems = missed(figures)
    if args.check and problems:
        for problem in problems:
            print(f"MISSED: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
