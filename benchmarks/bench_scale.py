"""How ``ls``, ``env`` and ``inventory()`` scale with the number of metadata files.

What is measured
================

Trees of 10, 100, 1,000 and 10,000 metadata files are written (with
``dra_metadata.encode``, one GPU-like device with five attributes per file, as
``bench.py`` writes them) in three layouts a pod can have:

``claims``
    N claims with one request each, one driver per request;
``requests``
    one claim with N requests, one driver each;
``drivers``
    one claim, one request, served by N drivers (N files merged into one request:
    every attribute name is shared by N drivers, so every variable is qualified).

For each tree:

* **per-file cost** of ``dra-metadata ls``, ``dra-metadata env`` (the command's
  own ``main()``, in this process, output to ``/dev/null``) and
  ``dm.inventory()``: the best of several runs divided by N;
* for ``env``, the split of that cost into the **scan** (finding, reading and
  decoding the files: ``_select.scan``) and the **rest** (building the inventory,
  the variables and the text), per file;
* **peak RSS** of a fresh process running the command line's ``main()`` for
  ``env`` / ``ls`` on the tree (its own ``VmHWM`` at the end), next to that of ``python -c "import
  dra_metadata"`` (the interpreter and the package, for reference).

Everything runs the checkout's package (it is put first on the path), whatever
copy is installed.

Targets (the issue "Speed at every size")
=========================================

* ``env`` on one request served by N drivers is linear: the per-file cost at
  N = 1,000 is within 1.5x of that at N = 10 (``drivers`` layout);
* ``env``'s own work per file (the rest) is at most the scan's per-file cost
  (``claims`` layout, N = 1,000);
* ``env`` peak RSS at 10,000 files is at most 64 MiB, in every layout.

The two ratio targets are measured apart from the table, on their own trees, in
interleaved rounds (``--rounds``, 41; ``--quick``: 9): each round runs ``env`` on
10 and on 1,000 drivers, the scan and the rest on 1,000 claims, in an order that
rotates, and a target's figure is the median over the rounds of the ratio within
the round, so that a busy spell of the machine hits both sides of a ratio. Where
valgrind is installed, the same two ratios are also counted in instructions
(callgrind, fresh processes: the imports and a warm-up, the scan, the scan and the
rest, ``env``'s ``main()`` on each tree), which a busy machine does not move. The
linearity check gates on its count (both sides are ``env``); the rest/scan check
gates on wall time, its count printed beside it: the scan is mostly the kernel's
work (opening and reading the files), which callgrind does not count.

Usage
=====

::

    python benchmarks/bench_scale.py            # the table (about a minute)
    python benchmarks/bench_scale.py --quick    # up to 1,000 files, fewer runs
    python benchmarks/bench_scale.py --json     # the figures as JSON
    python benchmarks/bench_scale.py --check    # exit 1 when a target is missed
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the checkout's package, whatever copy is installed

import dra_metadata as dm  # noqa: E402 - after the path is set
from dra_metadata import _cli, _env, _envtext, _inventory, _select  # noqa: E402

SIZES = (10, 100, 1000, 10000)
QUICK_SIZES = (10, 100, 1000)
LAYOUTS = ("claims", "requests", "drivers")
LINEAR_TARGET = 1.5
REST_TARGET = 1.0
RSS_TARGET_MIB = 64.0
#: The layouts the RSS target holds for: all (env holds one request's variables,
#: and within a request one device's, at a time).
RSS_LAYOUTS = LAYOUTS


def device(index: int, driver: str) -> dm.Device:
    """A GPU-like device with five attributes."""
    attributes = {
        "uuid": dm.DeviceAttribute(string=f"GPU-{index:08x}-0b1d-4c55-9a1e-3d2b7c9e0f11"),
        "index": dm.DeviceAttribute(int=index),
        "model": dm.DeviceAttribute(string="H100-SXM5-80GB"),
        "driverVersion": dm.DeviceAttribute(version="570.124.6"),
        f"{dm.STANDARD_DOMAIN}/pciBusID": dm.DeviceAttribute(
            string=f"0000:{index % 256:02x}:{index // 256 % 256:02x}.0"
        ),
    }
    return dm.Device(driver, "worker-1", f"gpu-{index}", attributes=attributes)


def write_tree(root: Path, layout: str, files: int) -> None:
    """``files`` metadata files under ``root`` in ``layout``."""
    for i in range(files):
        claim, request, driver = "train", "gpu", "gpu.example.com"
        if layout == "claims":
            claim = f"claim-{i}"
        elif layout == "requests":
            request = f"req-{i}"
        else:
            driver = f"d{i}.example.com"
        md = dm.DeviceMetadata(
            metadata=dm.ObjectMeta(name=claim, namespace="ml", uid=f"uid-{claim}", generation=1),
            requests=(dm.DeviceMetadataRequest(request, (device(i, driver),)),),
        )
        directory = root / "resourceclaims" / claim / request
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{driver}-metadata.json").write_bytes(dm.encode(md))


@contextlib.contextmanager
def stdout_to_devnull() -> Iterator[None]:
    """Descriptor 1 on ``/dev/null`` while the block runs."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def best_of(call: Callable[[], object], runs: int) -> float:
    """The shortest of ``runs`` wall times of ``call()``, in seconds."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def run_cli(argv: list[str]) -> None:
    with stdout_to_devnull():
        code = _cli.main(argv)
    if code != 0:
        raise SystemExit(f"dra-metadata {' '.join(argv)} exited {code}")


def env_rest(root: str, entries: list[_select.MountedFile]) -> None:
    """What env does after the scan: the inventory, the variables and their text."""
    variables, problems = _env.collect(_inventory.from_entries(root, entries))
    assert not problems, problems
    _envtext.render(variables)


#: Runs the command line's main() and then reports the process's own peak RSS
#: (``VmHWM``, KiB) on stderr. ``wait4``'s ``ru_maxrss`` cannot be used: Linux
#: counts the parent's resident set at fork in the child's maximum.
_REPORT_PEAK = """
import sys
{body}
sys.stdout.flush()
with open("/proc/self/status") as status:
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
sys.stderr.write("VmHWM " + peak + "\\n")
sys.exit(code)
"""
#: As the console script runs a one-shot command: with the garbage collector off.
CLI_PEAK = _REPORT_PEAK.format(
    body="import gc\ngc.disable()\nfrom dra_metadata._cli import main\ncode = main(sys.argv[1:])"
)
IMPORT_PEAK = _REPORT_PEAK.format(body="import dra_metadata\ncode = 0")


def peak_rss_mib(code: str, *args: str) -> float:
    """Peak resident set size of a fresh ``python -c code args...``, in MiB."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        check=False,
    )
    lines = done.stderr.decode().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].startswith("VmHWM "):
        raise SystemExit(f"{args} exited {done.returncode}: {done.stderr.decode()}")
    return int(lines[-1].split()[1]) / 1024


def interleaved(calls: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Wall seconds of each call, one per round, the calls alternating (the order rotates)."""
    for call in calls.values():
        call()  # warm up: caches, first-use imports
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - start)
    return times


def round_ratio(ours: list[float], theirs: list[float], scale: float = 1.0) -> float:
    """The median over the rounds of ``ours / theirs * scale`` in the same round."""
    return statistics.median(a / b * scale for a, b in zip(ours, theirs, strict=True))


def ratio_checks(tmp: Path, rounds: int) -> dict[str, float]:
    """The two ratio targets, each measured on its own trees in interleaved rounds."""
    trees = {}
    for layout, files in (("drivers", 10), ("drivers", 1000), ("claims", 1000), ("claims", 10)):
        root = tmp / f"ratio-{layout}-{files}"
        write_tree(root, layout, files)
        trees[layout, files] = str(root)
    small, large = trees["drivers", 10], trees["drivers", 1000]
    claims = trees["claims", 1000]
    entries = _select.scan(claims)
    times = interleaved(
        {
            "env 10 drivers": lambda: run_cli(["env", "--root", small]),
            "env 1,000 drivers": lambda: run_cli(["env", "--root", large]),
            "scan 1,000 claims": lambda: _select.scan(claims),
            "rest 1,000 claims": lambda: env_rest(claims, entries),
        },
        rounds,
    )
    return {
        "linear": round_ratio(times["env 1,000 drivers"], times["env 10 drivers"], 10 / 1000),
        "rest": round_ratio(times["rest 1,000 claims"], times["scan 1,000 claims"]),
        "rounds": rounds,
    }


#: The child processes whose instructions are counted: the imports and a warm-up (the
#: scan and the rest once on argv[2], a 10-claim tree, so that first-use costs are
#: paid there, as the wall-time rounds pay them before timing), then the scan of
#: argv[1], then the scan and the rest; and env's main() on argv[1].
_IMPORTS = (
    "import sys\n"
    f"sys.path.insert(0, {str(REPO)!r})\n"
    "from dra_metadata import _cli, _env, _envtext, _inventory, _select\n"
    "root = sys.argv[1] if len(sys.argv) > 1 else ''\n"
)
_REST = "_envtext.render(_env.collect(_inventory.from_entries(root, entries))[0])\n"
_WARM = (
    _IMPORTS
    + "warm = sys.argv[2]\n"
    + "_envtext.render(_env.collect(_inventory.from_entries(warm, _select.scan(warm)))[0])\n"
)
COUNTED = {
    "imports": _IMPORTS,
    "warm": _WARM,
    "scan": _WARM + "entries = _select.scan(root)\n",
    "scan+rest": _WARM + "entries = _select.scan(root)\n" + _REST,
    "env": _IMPORTS + "import os\nos.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
    "sys.exit(_cli.main(['env', '--root', root]))\n",
}


def instructions(code: str, *args: str) -> int | None:
    """Instructions a fresh ``python -c code args`` executes (callgrind), or ``None``.

    Hash randomisation is off (``PYTHONHASHSEED=0``): the count then repeats exactly.
    """
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    argv = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    argv += [sys.executable, "-c", code, *args]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_scale: a counted child failed:\n{done.stderr}")
    found = [line for line in done.stderr.splitlines() if "Collected :" in line]
    return int(found[-1].rsplit(":", 1)[1]) if found else None


def instruction_checks(tmp: Path) -> dict[str, float] | None:
    """The two ratio targets in instructions (valgrind), or ``None`` without valgrind."""
    small, large = tmp / "ratio-drivers-10", tmp / "ratio-drivers-1000"
    claims, warm_tree = tmp / "ratio-claims-1000", tmp / "ratio-claims-10"
    if shutil.which("valgrind") is None:
        return None
    # Each program once, uncounted: a source changed since the last run is compiled
    # (and its .pyc written) here, not in whichever count comes first.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for code, args in (
        (COUNTED["scan+rest"], (str(claims), str(warm_tree))),
        (COUNTED["env"], (str(small),)),
    ):
        subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, env=env, check=False
        )
    base = instructions(COUNTED["imports"])
    if base is None:
        return None
    warm = instructions(COUNTED["warm"], str(claims), str(warm_tree))
    scan = instructions(COUNTED["scan"], str(claims), str(warm_tree))
    rest = instructions(COUNTED["scan+rest"], str(claims), str(warm_tree))
    env_small = instructions(COUNTED["env"], str(small))
    env_large = instructions(COUNTED["env"], str(large))
    if warm is None or scan is None or rest is None or env_small is None or env_large is None:
        return None
    return {
        "linear": ((env_large - base) / 1000) / ((env_small - base) / 10),
        "rest": (rest - scan) / (scan - warm),
    }


def measure(root: Path, files: int, runs: int) -> dict[str, float]:
    """The figures of one tree."""
    text = str(root)
    entries = _select.scan(text)
    assert len(entries) == files
    scan_s = best_of(lambda: _select.scan(text), runs)
    rest_s = best_of(lambda: env_rest(text, entries), runs)
    env_s = best_of(lambda: run_cli(["env", "--root", text]), runs)
    ls_s = best_of(lambda: run_cli(["ls", "--root", text]), runs)
    inv_s = best_of(lambda: dm.inventory(text), runs)
    return {
        "files": files,
        "env_us": env_s / files * 1e6,
        "ls_us": ls_s / files * 1e6,
        "inventory_us": inv_s / files * 1e6,
        "scan_us": scan_s / files * 1e6,
        "rest_us": rest_s / files * 1e6,
        "env_rss_mib": peak_rss_mib(CLI_PEAK, "env", "--root", text),
        "ls_rss_mib": peak_rss_mib(CLI_PEAK, "ls", "--root", text),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="up to 1,000 files, fewer runs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--tmp", default=None, help="where to build the trees")
    parser.add_argument("--rounds", type=int, help="interleaved rounds of the ratio rows")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    results: dict[str, list[dict[str, float]]] = {layout: [] for layout in LAYOUTS}
    base_rss = peak_rss_mib(IMPORT_PEAK)
    with tempfile.TemporaryDirectory(prefix="bench-scale-", dir=args.tmp) as tmp:
        ratios = ratio_checks(Path(tmp), args.rounds or (9 if args.quick else 41))
        counted = instruction_checks(Path(tmp))
        for layout in LAYOUTS:
            for files in sizes:
                root = Path(tmp) / f"{layout}-{files}"
                write_tree(root, layout, files)
                runs = max(3, min(25, 3000 // files)) if not args.quick else 3
                results[layout].append(measure(root, files, runs))
                shutil.rmtree(root)

    checks: list[tuple[str, float, str, bool]] = []

    def at_most(case: str, value: float, target: float) -> None:
        checks.append((case, value, f"<= {target:g}", value <= target))

    linear = "env per file, 1,000 drivers / 10 drivers"
    if counted is None:
        at_most(linear, ratios["linear"], LINEAR_TARGET)
    else:  # both sides do the same kind of work: the instruction count gates
        checks.append((linear + " (wall)", ratios["linear"], f"<= {LINEAR_TARGET:g}", True))
        at_most(linear + " (instructions)", counted["linear"], LINEAR_TARGET)
    # The scan is mostly the kernel's work (opening and reading files), which
    # callgrind does not count: its instruction ratio is shown, the wall time gates.
    rest = "env's own work / scan, per file, 1,000 claims"
    at_most(rest, ratios["rest"], REST_TARGET)
    if counted is not None:
        checks.append((rest + " (instructions)", counted["rest"], f"<= {REST_TARGET:g}", True))
    if max(sizes) == 10000:
        for layout in RSS_LAYOUTS:
            rss = results[layout][-1]["env_rss_mib"]
            at_most(f"env peak RSS MiB, 10,000 files, {layout}", rss, RSS_TARGET_MIB)

    if args.json:
        print(
            json.dumps(
                {
                    "import_rss_mib": base_rss,
                    "ratio_rounds": ratios["rounds"],
                    "ratio_instructions": counted,
                    "layouts": results,
                    "checks": [
                        {"case": case, "value": value, "target": target, "ok": ok}
                        for case, value, target, ok in checks
                    ],
                },
                indent=2,
            )
        )
    else:
        print(
            f"dra_metadata {dm.__version__} | Python {sys.version.split()[0]} | "
            f"python -c 'import dra_metadata' peak RSS {base_rss:.1f} MiB"
        )
        header = (
            "layout",
            "files",
            "env us/f",
            "scan us/f",
            "rest us/f",
            "ls us/f",
            "inv us/f",
            "env MiB",
            "ls MiB",
        )
        print("  ".join(f"{h:>9}" for h in header))
        for layout in LAYOUTS:
            for row in results[layout]:
                cells = [layout, f"{row['files']:.0f}"] + [
                    f"{row[key]:.1f}"
                    for key in (
                        "env_us",
                        "scan_us",
                        "rest_us",
                        "ls_us",
                        "inventory_us",
                        "env_rss_mib",
                        "ls_rss_mib",
                    )
                ]
                print("  ".join(f"{c:>9}" for c in cells))
        print()
        for case, value, target, ok in checks:
            shown = "yes" if ok else "MISS"
            if case.endswith(("(wall)", "claims (instructions)")):
                shown = "-"  # shown beside the figure that gates
            print(f"{case:62}  {value:7.2f}  {target:>8}  {shown}")
    missed = [case for case, _, _, ok in checks if not ok]
    if args.check and missed:
        for case in missed:
            print(f"MISSED: {case}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
