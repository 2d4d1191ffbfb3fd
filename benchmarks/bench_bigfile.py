"""Memory and time of the one-shot commands on one huge metadata file.

What is measured
================

A metadata root is built in a temporary directory with one claim
(``resourceclaims/big/gpu/x.io-metadata.json``) whose file is as
large as the default size cap allows (16 MiB, :data:`DEFAULT_MAX_SIZE`) and as
dense as a hostile node can make it: the object of :func:`big_metadata` (one
request, ``--devices`` devices with short names, nothing else), written with
:func:`dra_metadata.encode` for v1beta1 then v1alpha1 and then compacted entry
by entry (no indentation: the most objects per byte). Without ``--devices``,
the bench picks the largest count that stays under the cap (about 210,000).

A second root holds the same claim with one device: the *baseline* of each
command, the interpreter, the imports and the command's fixed cost.

Each command runs in a fresh process started by a fresh wrapper process, which
reports its one child's peak resident set size
(``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``) and wall time. The figure
checked is ``(peak on the big file - peak on the baseline) / file size``: the
memory one file costs, as a multiple of its size. Targets (``--check`` exits 1
when one is missed):

====================  ======
command               target
====================  ======
show --driver         8x
show (merged)         8x
lint                  8x
validate              8x
ls                    8x
env                   8x
====================  ======

``env`` is measured and reported like the others.

Usage::

    python benchmarks/bench_bigfile.py            # the table
    python benchmarks/bench_bigfile.py --check    # exit 1 when a target is missed
    python benchmarks/bench_bigfile.py --json     # the figures as JSON
    python benchmarks/bench_bigfile.py --devices 20000   # a smaller file, faster
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import msgspec

import dra_metadata as dm

ROOT = Path(__file__).resolve().parent.parent
CLAIM, REQUEST, DRIVER = "big", "gpu", "x.io"
#: The targets: peak RSS over the baseline, as a multiple of the file's size.
TARGETS: dict[str, float] = {
    "show --driver": 8.0,
    "show": 8.0,
    "lint": 8.0,
    "validate": 8.0,
    "ls": 8.0,
    "env": 8.0,
}

# The wrapper: runs argv once, prints its child's peak RSS (KiB) and wall seconds.
_WRAPPER = """
import json, resource, subprocess, sys, time
argv = json.loads(sys.argv[1])
start = time.perf_counter()
done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": done.returncode, "kib": peak, "seconds": seconds,
                  "stderr": done.stderr.decode("utf-8", "replace")[-500:]}))
"""


def big_metadata(devices: int) -> dm.DeviceMetadata:
    """One claim, one request, ``devices`` devices with short names and nothing else."""
    built = tuple(dm.Device(DRIVER, "p", f"d{i}") for i in range(devices))
    return dm.DeviceMetadata(
        metadata=dm.ObjectMeta(name=CLAIM, namespace="ns", uid="u-1", generation=1),
        requests=(dm.DeviceMetadataRequest(REQUEST, built),),
    )


def compact_stream(md: dm.DeviceMetadata) -> bytes:
    """The Go writer's two-entry stream, each entry compacted (one line)."""
    entries = []
    for version in (dm.V1BETA1, dm.V1ALPHA1):
        entries.append(msgspec.json.format(dm.encode(md, [version]), indent=0).strip())
    return b"\n".join(entries) + b"\n"


def devices_under_cap(cap: int) -> int:
    """The largest device count whose compact stream stays under ``cap`` bytes."""
    per_device = len(compact_stream(big_metadata(2000))) / 2000
    count = int(cap / per_device)
    while len(compact_stream(big_metadata(count))) > cap:
        count -= max(1, count // 1000)
    return count


def build_root(top: Path, data: bytes) -> Path:
    """A metadata root whose one file holds ``data``; the file's path."""
    directory = top / "resourceclaims" / CLAIM / REQUEST
    directory.mkdir(parents=True)
    path = directory / f"{DRIVER}-metadata.json"
    path.write_bytes(data)
    return path


def commands(root: Path, path: Path) -> dict[str, list[str]]:
    """Each measured command line, as a user runs it."""
    cli = [sys.executable, "-m", "dra_metadata", "--root", str(root)]
    return {
        "show --driver": [*cli, "show", "--claim", CLAIM, "--request", REQUEST, "--driver", DRIVER],
        "show": [*cli, "show", "--claim", CLAIM, "--request", REQUEST],
        "lint": [*cli, "lint", str(path)],
        "validate": [*cli, "validate", str(path)],
        "ls": [*cli, "ls"],
        "env": [*cli, "env"],
    }


def measure(argv: Sequence[str]) -> dict[str, object]:
    """Peak RSS (KiB), wall time and exit code of one fresh process of ``argv``."""
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, json.dumps(list(argv))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--devices", type=int, help="devices in the big file (default: fill 16 MiB)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--only", action="append", help="measure only this command (repeatable)")
    args = parser.parse_args(argv)
    count = args.devices or devices_under_cap(dm.DEFAULT_MAX_SIZE)
    data = compact_stream(big_metadata(count))
    small = compact_stream(big_metadata(1))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-bigfile-") as tmp:
        big_path = build_root(Path(tmp, "big"), data)
        small_path = build_root(Path(tmp, "small"), small)
        big_cmds = commands(Path(tmp, "big"), big_path)
        small_cmds = commands(Path(tmp, "small"), small_path)
        for name in big_cmds:
            if args.only and name not in args.only:
                continue
            base = measure(small_cmds[name])
            got = measure(big_cmds[name])
            extra = (int(str(got["kib"])) - int(str(base["kib"]))) * 1024
            ratio = extra / len(data)
            rows.append(
                {
                    "command": name,
                    "rc": got["rc"],
                    "peak_mib": int(str(got["kib"])) / 1024,
                    "baseline_mib": int(str(base["kib"])) / 1024,
                    "ratio": ratio,
                    "target": TARGETS[name],
                    "seconds": got["seconds"],
                    "ok": got["rc"] in (0, 1) and ratio <= TARGETS[name],
                    "stderr": got["stderr"] if got["rc"] not in (0, 1) else "",
                }
            )
    if args.json:
        print(json.dumps({"file_bytes": len(data), "devices": count, "rows": rows}, indent=2))
    else:
        print(f"file: {len(data)} bytes ({len(data) / 2**20:.1f} MiB), {count} devices")
        print(
            f"{'command':<15} {'rc':>3} {'peak MiB':>9} {'base MiB':>9} "
            f"{'x size':>7} {'target':>7} {'seconds':>8}"
        )
        for row in rows:
            mark = "" if row["ok"] else "  MISSED"
            print(
                f"{row['command']:<15} {row['rc']:>3} {row['peak_mib']:>9.1f} "
                f"{row['baseline_mib']:>9.1f} {row['ratio']:>7.2f} {row['target']:>6.0f}x "
                f"{row['seconds']:>8.2f}{mark}"
            )
            if row["stderr"]:
                print(f"    stderr: {str(row['stderr']).strip()}")
    if args.check and not all(row["ok"] for row in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
