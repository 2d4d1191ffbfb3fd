"""How ``dra-metadata topology --json`` and ``--matrix`` scale with the number of devices.

What is measured
================

A tree of N devices (a quarter GPUs, a quarter NICs, half CPUs, spread over
four NUMA nodes and sixteen PCIe roots, with the attribute names the real
drivers publish) is written for N = 300, 1,000 and 10,000. For each, the
wall time of ``python -m dra_metadata topology`` (the tree), ``topology
--json`` and ``topology --matrix`` is taken in fresh processes, output to
``/dev/null``, in interleaved rounds (``--rounds``: 9, ``--quick``: 5; one
at 10,000 devices): each round runs the three in an order that rotates, and a
ratio is the median over the rounds of the ratio within the round, so that a
busy spell of the machine hits both sides of it. A row prints the median times
and the two ratios to the tree's time.

Targets (issue 18: at most O(n²))
=================================

* 1,000 devices: ``--json`` and ``--matrix`` each under 2x the tree's time;
* 10,000 devices: ``--json`` and ``--matrix`` each under 60 s.

Before the change, ``--json`` and ``--matrix`` were O(n³): 19-25 s at 300
devices and over 120 s at 1,000.

Usage
=====

::

    python benchmarks/bench_topology.py            # the table (a minute or two)
    python benchmarks/bench_topology.py --quick    # 300 and 1,000 devices only
    python benchmarks/bench_topology.py --json     # the figures as JSON
    python benchmarks/bench_topology.py --check    # exit 1 when a target is missed
    python benchmarks/bench_topology.py --rounds 15 # more rounds
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the checkout's package, whatever copy is installed

import dra_metadata as dm  # noqa: E402 - after the path is set

SIZES = (300, 1000, 10000)
QUICK_SIZES = (300, 1000)
RATIO_TARGET = 2.0  # at 1,000 devices
SECONDS_TARGET = 60.0  # at 10,000 devices
MEMORY_DEVICES = 2000  # every one on its own PCIe root: as many placement classes as devices
MEMORY_TARGET = 2.0  # peak RSS of --json and --matrix over the tree's
A = dm.DeviceAttribute
STD = dm.STANDARD_DOMAIN + "/"


def devices(count: int) -> dict[str, list[dm.Device]]:
    """Driver -> its devices: GPUs, NICs and CPUs placed over 4 NUMA nodes and 16 roots."""
    found: dict[str, list[dm.Device]] = {"gpu.nvidia.com": [], "dra.net": [], "dra.cpu": []}
    for index in range(count):
        numa = index % 4
        root = f"pci0000:{(index % 16) * 16:02x}"
        bus = f"00000000:{index % 256:02x}:{index // 256 % 32:02x}.0"
        if index % 4 == 0:
            found["gpu.nvidia.com"].append(
                dm.Device(
                    "gpu.nvidia.com",
                    "node",
                    f"gpu-{index}",
                    {
                        "uuid": A(string=f"GPU-{index:08x}-0000-4000-8000-000000000000"),
                        "productName": A(string="NVIDIA H100 80GB HBM3"),
                        "pcieBusID": A(string=bus),
                        STD + "pcieRoot": A(string=root),
                    },
                )
            )
        elif index % 4 == 1:
            found["dra.net"].append(
                dm.Device(
                    "dra.net",
                    "node",
                    f"eth{index}",
                    {
                        "ifName": A(string=f"eth{index}"),
                        "numaNode": A(int=numa),
                        STD + "pcieRoot": A(string=root),
                    },
                )
            )
        else:
            roots = tuple(f"pci0000:{(numa * 4 + k) * 16:02x}" for k in range(4))
            found["dra.cpu"].append(
                dm.Device(
                    "dra.cpu",
                    "node",
                    f"cpu-{index}",
                    {
                        "cpuID": A(int=index),
                        "numaNodeID": A(int=numa),
                        "socketID": A(int=numa // 2),
                        STD + "numaNode": A(int=numa),
                        STD + "pcieRoot": A(strings=roots),
                    },
                )
            )
    return found


def distinct_devices(count: int) -> dict[str, list[dm.Device]]:
    """``count`` GPUs, each on a PCIe root and NUMA node of its own: no two share a row."""
    return {
        "gpu.example.com": [
            dm.Device(
                "gpu.example.com",
                "node",
                f"gpu-{index}",
                {
                    "uuid": A(string=f"GPU-{index:08x}"),
                    STD + "pcieRoot": A(string=f"pci{index:04x}:00"),
                    STD + "numaNode": A(int=index % 1024),
                },
            )
            for index in range(count)
        ]
    }


def write_tree(
    root: Path, count: int, made: Callable[[int], dict[str, list[dm.Device]]] | None = None
) -> None:
    """One claim, one request per driver (the devices of ``made``, :func:`devices` by default)."""
    for driver, devs in (made or devices)(count).items():
        md = dm.DeviceMetadata(
            metadata=dm.ObjectMeta(name="pod", namespace="ns", uid="u", generation=1),
            requests=(dm.DeviceMetadataRequest(driver.replace(".", "-"), tuple(devs)),),
        )
        where = root / "resourceclaims" / "pod" / driver.replace(".", "-")
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{driver}-metadata.json").write_bytes(dm.encode(md))


def timed(root: Path, *args: str) -> float:
    """Wall time of one ``python -m dra_metadata topology`` run, output to /dev/null."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"}
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        done = subprocess.run(
            [sys.executable, "-m", "dra_metadata", "topology", "--root", str(root), *args],
            stdout=sink,
            stderr=subprocess.PIPE,
            env=env,
            cwd=REPO,
            timeout=600,
        )
    if done.returncode != 0:
        raise SystemExit(f"topology {' '.join(args)} failed: {done.stderr.decode()}")
    return time.perf_counter() - start


#: The contenders of a round: the tree, then the two outputs, as topology options.
MODES: dict[str, tuple[str, ...]] = {"tree": (), "json": ("--json",), "matrix": ("--matrix",)}


def peak_rss(root: Path, *args: str) -> int:
    """Peak resident memory, in KiB, of one ``topology`` run (output to /dev/null)."""
    code = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    command = [sys.executable, "-m", "dra_metadata", "topology", "--root", str(root), *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code, *command], capture_output=True, text=True, env=env, cwd=REPO
    )
    status, kib = done.stdout.split()
    if status != "0":
        raise SystemExit(f"topology {' '.join(args)} failed: exit {status}")
    return int(kib)


def memory_row(tmp: Path) -> dict[str, float]:
    """Peak RSS of the tree, --json and --matrix at MEMORY_DEVICES devices on distinct roots."""
    root = tmp / "distinct"
    write_tree(root, MEMORY_DEVICES, distinct_devices)
    peaks = {name: peak_rss(root, *options) for name, options in MODES.items()}
    return {
        "devices": MEMORY_DEVICES,
        **{f"{name}_mib": kib / 1024 for name, kib in peaks.items()},
        "json_ratio": peaks["json"] / peaks["tree"],
        "matrix_ratio": peaks["matrix"] / peaks["tree"],
    }


def interleaved(root: Path, rounds: int) -> dict[str, list[float]]:
    """Each mode's wall times over ``rounds`` rounds, the order rotating every round."""
    names = list(MODES)
    times: dict[str, list[float]] = {name: [] for name in names}
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(timed(root, *MODES[name]))
    return times


def round_ratio(ours: list[float], theirs: list[float]) -> float:
    """The median over the rounds of the ratio within each round."""
    return statistics.median(a / b for a, b in zip(ours, theirs, strict=True))


def main(argv: Sequence[str] | None = None) -> int:
    """Print (or check) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 and 1,000 devices only")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--rounds", type=int, help="interleaved rounds below 10,000 devices")
    args = parser.parse_args(argv)
    rows: list[dict[str, float]] = []
    misses: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-topology-") as tmp:
        for count in QUICK_SIZES if args.quick else SIZES:
            root = Path(tmp) / str(count)
            write_tree(root, count)
            rounds = 1 if count >= 10000 else args.rounds or (5 if args.quick else 9)
            times = interleaved(root, rounds)
            row = {
                "devices": count,
                "rounds": rounds,
                "tree_s": statistics.median(times["tree"]),
                "json_s": statistics.median(times["json"]),
                "matrix_s": statistics.median(times["matrix"]),
                "json_ratio": round_ratio(times["json"], times["tree"]),
                "matrix_ratio": round_ratio(times["matrix"], times["tree"]),
            }
            rows.append(row)
            if count == 1000:
                for name in ("json", "matrix"):
                    if row[f"{name}_ratio"] >= RATIO_TARGET:
                        misses.append(f"--{name} at 1,000 devices: {row[f'{name}_ratio']:.2f}x")
            if count == 10000:
                for name in ("json", "matrix"):
                    if row[f"{name}_s"] >= SECONDS_TARGET:
                        misses.append(f"--{name} at 10,000 devices: {row[f'{name}_s']:.1f} s")
        memory = memory_row(Path(tmp))
        for name in ("json", "matrix"):
            if memory[f"{name}_ratio"] > MEMORY_TARGET:
                misses.append(
                    f"--{name} peak RSS at {MEMORY_DEVICES:,} distinct roots: "
                    f"{memory[f'{name}_ratio']:.2f}x the tree's"
                )
    if args.json:
        print(json.dumps({"rows": rows, "memory": memory, "misses": misses}, indent=2))
    else:
        print("| devices | rounds | tree s | --json s | ratio | --matrix s | ratio |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for row in rows:
            print(
                f"| {row['devices']:,} | {row['rounds']:.0f} | {row['tree_s']:.2f} | "
                f"{row['json_s']:.2f} | {row['json_ratio']:.2f}x | {row['matrix_s']:.2f} | "
                f"{row['matrix_ratio']:.2f}x |"
            )
        print("times: medians over the rounds; ratios: medians of the per-round ratios")
        print(
            f"peak RSS at {MEMORY_DEVICES:,} devices on distinct roots: tree "
            f"{memory['tree_mib']:.0f} MiB, --json {memory['json_mib']:.0f} MiB "
            f"({memory['json_ratio']:.2f}x), --matrix {memory['matrix_mib']:.0f} MiB "
            f"({memory['matrix_ratio']:.2f}x)"
        )
        print(
            f"targets: at 1,000 devices each ratio < {RATIO_TARGET:g}x; "
            f"at 10,000 each time < {SECONDS_TARGET:g} s; "
            f"peak RSS <= {MEMORY_TARGET:g}x the tree's"
        )
        for miss in misses:
            print(f"MISSED: {miss}")
    return 1 if args.check and misses else 0


if __name__ == "__main__":
    sys.exit(main())
