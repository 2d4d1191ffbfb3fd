"""Relative benchmarks of ``dra_metadata.validate``: per-call cost and a one-shot process.

Every figure is a ratio against a baseline measured in the same run, on the same
machine, interleaved with the code under test; nothing is compared with an
absolute number. The timing helpers and the test data come from ``bench.py``.
The package measured is the checkout's (``dra_metadata/`` beside ``benchmarks/``),
in this process and in the child processes alike, whatever is installed.

What is measured
================

``validate vs decode``
    ``dra_metadata.validate(md)`` against ``dra_metadata.decode(stream)``, where
    ``stream`` is ``bench.py``'s stream for one claim with 1, 8 and 64 devices
    (``make_metadata``, written with ``dra_metadata.encode``) and ``md`` is what
    ``decode(stream)`` returned. Both must succeed (``validate`` with no error)
    before timing. Ratio = validate / decode; target <= 3 at every size. An
    information row times the same for an 8-device claim with one bad device
    name, which the pydantic models report (the path of every invalid object).

``read + validate one file vs import msgspec.json, pydantic``
    Total wall time of a fresh
    ``python -c "import dra_metadata as dm; dm.validate(dm.read_file(PATH))"``
    process, ``PATH`` being a sample file of ``examples/dra-device-attributes``
    (two GPUs with attributes and network data), against a fresh
    ``python -c "import msgspec.json, pydantic"`` process: the imports alone, the
    least a pydantic-validating reader pays (pydantic imports its model machinery
    lazily, so this loads little beyond pydantic_core). Target <= 1.5. A valid
    file is judged by validation's compiled acceptor, which needs pydantic_core
    only; the pydantic models load only for an object with an error. An
    information row divides by the same imports plus one small pydantic model
    (two fields, camelCase aliases) defined and used; ``python -c pass`` is in
    ``--json``. Medians over many runs, interleaved.

    The child processes run without ``PYTHONDONTWRITEBYTECODE`` (``bench.py``'s
    ``child_env``) and each command runs once before timing, so the checkout's
    modules run from their ``.pyc`` files, as an installed package's do.

How it is measured
==================

As in ``bench.py``: contenders of a case run in alternating batches whose order
rotates each round; a contender's time is its best batch (per call), and the
ratio is the median over the rounds of the ratio within the round (minima and
medians are in ``--json``). Process timings are medians of fresh processes, and
their ratio the median of the per-round ratios too.

Usage
=====

::

    python benchmarks/bench_validate.py               # full run (~30 s), prints a table
    python benchmarks/bench_validate.py --quick       # smoke test, a few seconds
    python benchmarks/bench_validate.py --json        # the figures as JSON
    python benchmarks/bench_validate.py --check       # exit 1 when a target is missed
    python benchmarks/bench_validate.py --breakdown   # also: modules beyond the bare imports

Without ``--check`` the script always exits 0: it is a measuring tool.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

# The checkout's package first (as the process rows get it, running in the checkout),
# then bench.py beside this script.
sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]

from bench import (  # noqa: E402  (bench.py is a script beside this one, not a package)
    DEVICE_COUNTS,
    ROOT,
    Row,
    imported_modules,
    interleaved,
    make_metadata,
    paired_ratio_median,
    python_c,
    report,
    round_ratio,
    run_child,
    wall_times,
)

import dra_metadata as dm  # noqa: E402  (after the path set-up above, like bench's import)

VALIDATE_TARGET: Final = 3.0
PROCESS_TARGET: Final = 1.5
SAMPLE_FILE: Final = (
    ROOT
    / "examples"
    / "dra-device-attributes"
    / "resourceclaims"
    / "train"
    / "accel"
    / "gpu.example.com-metadata.json"
)

#: The one-shot process under test: read one file and validate it.
OURS_CODE: Final = (
    "import dra_metadata as dm\n"
    f"errors = dm.validate(dm.read_file({str(SAMPLE_FILE)!r}))\n"
    "assert errors == [], errors\n"
)
#: The baseline: import msgspec.json and pydantic, nothing else.
IMPORTS_CODE: Final = "import msgspec.json, pydantic"
#: Information: the same imports, and one small model defined and used.
MODEL_CODE: Final = (
    "import msgspec.json, pydantic\n"
    "from pydantic.alias_generators import to_camel\n"
    "class Small(pydantic.BaseModel):\n"
    "    model_config = pydantic.ConfigDict(alias_generator=to_camel)\n"
    "    name: str = ''\n"
    "    pod_claim_name: str | None = None\n"
    "Small.model_validate({'name': 'x', 'podClaimName': 'y'})\n"
)


def validate_rows(devices: int, rounds: int, batch: float) -> list[Row]:
    """``validate(md)`` against ``decode(stream)`` for one claim of ``devices`` devices."""
    stream = dm.encode(make_metadata(devices))
    md = dm.decode(stream)
    errors = dm.validate(md)
    if errors:
        raise SystemExit(f"bench: the {devices}-device claim does not validate: {errors}")
    calls: dict[str, tuple[Callable[[Any], object], object]] = {
        "validate": (dm.validate, md),
        "decode": (dm.decode, stream),
    }
    s = interleaved(calls, rounds, batch)
    val, dec = s["validate"], s["decode"]
    ratio = paired_ratio_median(val, dec)
    plural = "device" if devices == 1 else "devices"
    return [
        Row(
            f"validate vs decode, {devices} {plural}",
            val.best,
            dec.best,
            "s",
            ratio,
            VALIDATE_TARGET,
            "<=",
            ratio <= VALIDATE_TARGET,
            {
                "devices": devices,
                "stream_bytes": len(stream),
                "rounds": rounds,
                "ours_median": val.median,
                "baseline_median": dec.median,
                "median_ratio": val.median / dec.median,
                "best_ratio": val.best / dec.best,
                "calls_per_batch": [val.number, dec.number],
            },
        )
    ]


def invalid_rows(rounds: int, batch: float) -> list[Row]:
    """Information: ``validate(md)`` of an object with one error (the models' path)."""
    good = make_metadata(8)
    request = good.requests[0]
    bad_device = msgspec.structs.replace(request.devices[0], name="GPU-0")
    bad = msgspec.structs.replace(
        good,
        requests=(msgspec.structs.replace(request, devices=(bad_device, *request.devices[1:])),),
    )
    stream = dm.encode(bad)
    md = dm.decode(stream)
    if len(dm.validate(md)) != 1:
        raise SystemExit("bench: the invalid claim does not give its one error")
    calls: dict[str, tuple[Callable[[Any], object], object]] = {
        "validate": (dm.validate, md),
        "decode": (dm.decode, stream),
    }
    s = interleaved(calls, rounds, batch)
    val, dec = s["validate"], s["decode"]
    return [
        Row(
            "  validate vs decode, 8 devices, one error (models)",
            val.best,
            dec.best,
            "s",
            paired_ratio_median(val, dec),
            None,
            "info",
            None,
            {"ours_median": val.median, "baseline_median": dec.median},
        )
    ]


def process_rows(runs: int, breakdown: bool) -> list[Row]:
    """A fresh process that reads and validates one file against the bare imports."""
    ours_argv = python_c(OURS_CODE)
    imports_argv = python_c(IMPORTS_CODE)
    model_argv = python_c(MODEL_CODE)
    times = wall_times(
        {
            "pass": python_c("pass"),
            "imports": imports_argv,
            "imports_and_model": model_argv,
            "ours": ours_argv,
        },
        runs,
    )
    ours = statistics.median(times["ours"])
    imports = statistics.median(times["imports"])
    base = statistics.median(times["pass"])
    ratio = round_ratio(times, "ours", "imports")
    rows = [
        Row(
            "read + validate one file vs import msgspec.json, pydantic",
            ours,
            imports,
            "s",
            ratio,
            PROCESS_TARGET,
            "<=",
            ratio <= PROCESS_TARGET,
            {
                "runs": runs,
                "file": str(SAMPLE_FILE.relative_to(ROOT)),
                "python_c_pass_median": base,
                "ours_min": min(times["ours"]),
                "baseline_min": min(times["imports"]),
                "net_of_startup_ratio": (ours - base) / (imports - base)
                if imports > base
                else float("nan"),
            },
        )
    ]
    with_model = statistics.median(times["imports_and_model"])
    rows.append(
        Row(
            "  the same vs the imports + one small model",
            ours,
            with_model,
            "s",
            round_ratio(times, "ours", "imports_and_model"),
            None,
            "info",
            None,
            {"runs": runs, "baseline_min": min(times["imports_and_model"])},
        )
    )
    if breakdown:
        baseline_modules = set(imported_modules(imports_argv))
        # Modules a lazy importlib.import_module loads (dra_metadata._validate) are not
        # in the -X importtime profile; what they import with ``import`` statements is.
        extra = [name for name in imported_modules(ours_argv) if name not in baseline_modules]
        foreign = [name for name in extra if not name.startswith("dra_metadata")]
        rows.append(
            Row(
                "  modules beyond the bare imports, not ours",
                float(len(foreign)),
                0.0,
                "modules",
                None,
                None,
                "info",
                None,
                {"loaded": foreign, "modules": extra},
            )
        )
        loaded = run_child(
            OURS_CODE + "import sys\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'pydantic_core'}))"
        ).stdout.strip()
        rows.append(
            Row(
                f"  pydantic packages the one-shot process loads: {loaded}",
                0.0,
                0.0,
                "s",
                None,
                None,
                "info",
                None,
            )
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Relative benchmarks of dra_metadata.validate (per call and one-shot)."
    )
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke test")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--breakdown", action="store_true", help="also list the modules beyond the bare imports"
    )
    parser.add_argument("--rounds", type=int, help="timing batches per contender")
    parser.add_argument("--batch", type=float, help="seconds per timing batch")
    parser.add_argument("--runs", type=int, help="processes per process contender")
    args = parser.parse_args(argv)

    rounds = args.rounds or (5 if args.quick else 41)
    batch = args.batch or (0.002 if args.quick else 0.01)
    runs = args.runs or (7 if args.quick else 41)

    rows: list[Row] = []
    for devices in DEVICE_COUNTS:
        rows.extend(validate_rows(devices, rounds, batch))
    rows.extend(invalid_rows(rounds, batch))
    rows.extend(process_rows(runs, args.breakdown))
    return report(
        rows,
        quick=args.quick,
        rounds=rounds,
        batch=batch,
        runs=("runs", runs, "process runs"),
        legend="times: best batch per call (validate, decode) or median process wall time; "
        "ratio: ours/baseline",
        as_json=args.json,
        check=args.check,
    )


if __name__ == "__main__":
    sys.exit(main())
