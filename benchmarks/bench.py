"""Relative benchmarks of ``dra_metadata``: decoding speed and import cost.

Every figure is a ratio against a baseline measured in the same run, on the same
machine, interleaved with the code under test; nothing is compared with an
absolute number.

What is measured
================

Streams are written with ``dra_metadata.encode(md)`` (v1beta1 then v1alpha1, the
Go writer's format) for one claim with 1, 8 and 64 devices. Each device has driver
``gpu.example.com``, a pool, a name and five attributes (string ``uuid``, int
``index``, string ``model``, version ``driverVersion``, string
``resource.kubernetes.io/pciBusID``); every fourth device (device 0 included) also
has ``networkData``.

``decode vs msgspec floor``
    ``dra_metadata.decode(stream)`` against ``msgspec.json.Decoder().decode(first)``,
    where ``first`` is the first object's bytes, sliced out before timing: msgspec
    decoding the same object into plain dicts, the least work any reader can do.
    Ratio = decode / floor; target <= 1.45 / 1.22 / 1.08 for 1 / 8 / 64 devices
    (the sound floor: what remains is the proof that no duplicate key was dropped).

``decode vs pydantic``
    "The obvious alternative" against ``decode``: split the stream into objects
    with ``json.JSONDecoder().raw_decode`` in a loop (as a user would; this parses
    the whole stream), then ``model_validate_json`` the first object with a faithful
    pydantic v2 model of ``DeviceMetadata`` (defined below: strict, extra keys
    forbidden, frozen, camelCase aliases). Ratio = pydantic / decode (a speed-up);
    target >= 3.

``import dra_metadata vs import msgspec.json``
    Total wall time of a fresh ``python -c "import dra_metadata"`` process against
    ``python -c "import msgspec.json"`` (medians over many runs, interleaved;
    ``python -c pass`` is measured too and shown for reference). Target <= 1.2.

``modules loaded by import dra_metadata``
    ``sys.modules`` of a fresh process after ``import dra_metadata`` must hold none
    of ``pydantic``, ``pydantic_core``, ``watchfiles`` and ``semver``.

``dra-metadata env vs import msgspec.json``
    Total wall time of ``dra-metadata env --root examples/dra-device-attributes``
    (a whole init-container call: start, parse, read and decode the seven sample
    files, print every variable) against ``python -c "import msgspec.json"``
    (medians over many runs, interleaved). It runs through the installed console
    script, as a user would: the one in the scripts directory of the interpreter
    running the bench (``sysconfig``), else the first ``dra-metadata`` on
    ``PATH`` (``shutil.which``; a wrapper there, such as a pyenv shim, would be
    timed too). Target <= 0.9. With valgrind there, the instruction counts of
    the two processes gate, not their wall times (see ``startup_rows``).

``dra-metadata get vs import msgspec.json``
    The same for ``get --template-claim gpu --request gpu uuid`` (one attribute
    of one request). Target <= 0.9. Beside it, informational: ``get`` and ``env``
    against ``jq`` answering ``get``'s question on the same file.

``dra-metadata topology`` / ``doctor vs import msgspec.json``
    The same, for ``topology`` and ``doctor`` on ``examples/topology-tree`` (a
    GPU+NIC+CPU pod). ``doctor`` runs against this machine's sysfs, cgroup files
    and ``ip -json address`` (the sample's devices are not here, so it exits 1:
    every check runs all the same). Target <= 1.3.

``modules loaded by dra-metadata env/ls/get/show``
    The modules the console script imports for each of these commands
    (``-X importtime``) must hold none of the four above.

How it is measured
==================

The contenders of a case run in alternating batches (the order rotates each
round) so machine noise hits all of them alike. A batch repeats one call enough
times to last ``--batch`` seconds (``timeit``, garbage collector off); a
contender's time is the minimum per-call time over ``--rounds`` batches and the
ratios divide those minima (medians are reported too, in ``--json``). Before
timing, every contender's result is checked against the object the stream was
written from. Subprocess timings use medians.

Usage
=====

::

    python benchmarks/bench.py               # full run (~15 s), prints a table
    python benchmarks/bench.py --quick       # smoke test, a few seconds
    python benchmarks/bench.py --json        # the figures as JSON
    python benchmarks/bench.py --check       # exit 1 when a target is missed
    python benchmarks/bench.py --breakdown   # also: typed msgspec decode, import profile

Without ``--check`` the script always exits 0: it is a measuring tool.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import timeit
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import msgspec
import pydantic
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

ROOT: Final = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's package, whatever copy is installed

import dra_metadata as dm  # noqa: E402 - after the path is set

DEVICE_COUNTS: Final = (1, 8, 64)
FORBIDDEN_MODULES: Final = ("pydantic", "pydantic_core", "watchfiles", "semver")

#: decode() / the msgspec floor, per device count: the sound floor in pure Python
#: (the duplicate-key proof costs a scan of the entry; see _read's docstring).
DECODE_FLOOR_TARGETS: Final = {1: 1.45, 8: 1.22, 64: 1.08}
PYDANTIC_SPEEDUP_TARGET: Final = 3.0
IMPORT_TARGET: Final = 1.2
ENV_TARGET: Final = 0.9
GET_TARGET: Final = 0.9
SAMPLE_ROOT: Final = ROOT / "examples" / "dra-device-attributes"
TOPOLOGY_ROOT: Final = ROOT / "examples" / "topology-tree"
TOPOLOGY_TARGET: Final = 1.3

# Environment variables that would distort a child interpreter's start-up.
_CHILD_ENV_DROP: Final = frozenset(
    {
        "PYTHONPROFILEIMPORTTIME",
        "PYTHONDEVMODE",
        "PYTHONTRACEMALLOC",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONMALLOC",
        "PYTHONINSPECT",
        "PYTHONWARNINGS",
    }
)


# --------------------------------------------------------------------------- #
# The pydantic alternative: a faithful model of the wire form.
# --------------------------------------------------------------------------- #

_Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        strict=True,
    )


class PydDeviceAttribute(_Wire):
    int_: _Int64 | None = Field(default=None, alias="int")
    bool_: bool | None = Field(default=None, alias="bool")
    string: str | None = None
    version: str | None = None
    ints: tuple[_Int64, ...] | None = None
    bools: tuple[bool, ...] | None = None
    strings: tuple[str, ...] | None = None
    versions: tuple[str, ...] | None = None


class PydNetworkDeviceData(_Wire):
    interface_name: str = ""
    ips: tuple[str, ...] = ()
    hardware_address: str = ""


class PydOwnerReference(_Wire):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class PydManagedFieldsEntry(_Wire):
    manager: str = ""
    operation: str = ""
    api_version: str = ""
    time: str | None = None
    fields_type: str = ""
    fields_v1: dict[str, Any] | None = None
    subresource: str = ""


class PydObjectMeta(_Wire):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    self_link: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: _Int64 = 0
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: _Int64 | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: tuple[PydOwnerReference, ...] = ()
    finalizers: tuple[str, ...] = ()
    managed_fields: tuple[PydManagedFieldsEntry, ...] = ()


class PydDevice(_Wire):
    driver: str
    pool: str
    name: str
    attributes: dict[str, PydDeviceAttribute] = Field(default_factory=dict)
    network_data: PydNetworkDeviceData | None = None


class PydDeviceMetadataRequest(_Wire):
    name: str
    devices: tuple[PydDevice, ...] = ()


class PydDeviceMetadata(_Wire):
    kind: Literal["DeviceMetadata"]
    api_version: str
    metadata: PydObjectMeta = Field(default_factory=PydObjectMeta)
    pod_claim_name: str | None = None
    requests: tuple[PydDeviceMetadataRequest, ...] = ()


def split_objects(text: str) -> list[str]:
    """The JSON texts of a stream's objects, split the way a user would."""
    decoder = json.JSONDecoder()
    objects: list[str] = []
    pos, size = 0, len(text)
    while True:
        while pos < size and text[pos] in " \t\r\n":
            pos += 1
        if pos >= size:
            return objects
        _, end = decoder.raw_decode(text, pos)
        objects.append(text[pos:end])
        pos = end


def pydantic_alternative(data: bytes) -> PydDeviceMetadata:
    """Split the stream, validate its first object with pydantic."""
    objects = split_objects(data.decode("utf-8"))
    return PydDeviceMetadata.model_validate_json(objects[0])


# --------------------------------------------------------------------------- #
# Test data
# --------------------------------------------------------------------------- #


def make_metadata(devices: int) -> dm.DeviceMetadata:
    """A realistic claim with ``devices`` GPUs, deterministic."""
    rng = random.Random(devices)
    built = []
    for i in range(devices):
        attributes = {
            "uuid": dm.DeviceAttribute(
                string=f"GPU-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
            ),
            "index": dm.DeviceAttribute(int=i),
            "model": dm.DeviceAttribute(string="H100-SXM5-80GB"),
            "driverVersion": dm.DeviceAttribute(version="570.124.6"),
            f"{dm.STANDARD_DOMAIN}/pciBusID": dm.DeviceAttribute(
                string=f"0000:{0x18 + 0x10 * (i % 8):02x}:{i // 8:02x}.0"
            ),
        }
        network = None
        if i % 4 == 0:
            network = dm.NetworkDeviceData(
                interface_name=f"rdma{i}",
                ips=(f"10.{i // 250}.{i % 250}.5/24", f"fd00::{i:x}:5/64"),
                hardware_address=f"b8:3f:d2:{i // 256:02x}:{i % 256:02x}:5e",
            )
        built.append(
            dm.Device(
                "gpu.example.com",
                f"worker-{1 + i // 8}",
                f"gpu-{i}",
                attributes=attributes,
                network_data=network,
            )
        )
    return dm.DeviceMetadata(
        metadata=dm.ObjectMeta(
            name="trainer-0-gpu-x7k2p",
            namespace="ml-team",
            uid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            generation=1,
        ),
        pod_claim_name="gpu",
        requests=(dm.DeviceMetadataRequest("gpu", tuple(built)),),
    )


def first_object(stream: bytes) -> bytes:
    text = stream.decode("utf-8")
    _, end = json.JSONDecoder().raw_decode(text)
    return text[:end].encode("utf-8")


# --------------------------------------------------------------------------- #
# Timing
# --------------------------------------------------------------------------- #


@dataclass
class Samples:
    """Per-call seconds of one contender, one entry per batch."""

    per_call: list[float] = field(default_factory=list)
    number: int = 0

    @property
    def best(self) -> float:
        return min(self.per_call)

    @property
    def median(self) -> float:
        return statistics.median(self.per_call)


def calibrate(timer: timeit.Timer, batch: float) -> int:
    """How many calls make one batch last about ``batch`` seconds."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= batch:
            return number
        if elapsed <= 0:
            number *= 10
        else:
            number = max(number * 2, int(number * batch * 1.2 / elapsed))


def interleaved(
    calls: dict[str, tuple[Callable[[Any], object], object]], rounds: int, batch: float
) -> dict[str, Samples]:
    """Time each ``fn(arg)`` in alternating batches; the order rotates every round."""
    timers = {
        name: timeit.Timer("fn(arg)", globals={"fn": fn, "arg": arg})
        for name, (fn, arg) in calls.items()
    }
    samples = {name: Samples(number=calibrate(timer, batch)) for name, timer in timers.items()}
    names = list(timers)
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            s = samples[name]
            s.per_call.append(timers[name].timeit(s.number) / s.number)
    return samples


def paired_ratio_median(num: Samples, den: Samples) -> float:
    return statistics.median(a / b for a, b in zip(num.per_call, den.per_call, strict=True))


def child_env() -> dict[str, str]:
    """The children's environment: this checkout first on the path (``PYTHONPATH``).

    So the console script runs the checkout's package whatever copy is installed
    (an editable install of another tree, for one); every contender gets the same.
    """
    env = {k: v for k, v in os.environ.items() if k not in _CHILD_ENV_DROP}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    return env


def round_ratio(times: dict[str, list[float]], ours: str, theirs: str) -> float:
    """The median over the rounds of ``ours``' time / ``theirs``' time in the same round."""
    return statistics.median(a / b for a, b in zip(times[ours], times[theirs], strict=True))


def instructions(argv: Sequence[str], ok: Sequence[int] = (0,)) -> int | None:
    """Instructions a fresh process of ``argv`` executes (valgrind's callgrind), or ``None``.

    ``argv[0]`` is this interpreter (valgrind runs a binary, not a script). The
    count does not depend on what else the machine does; with hash randomisation
    off (``PYTHONHASHSEED=0``, for every contender alike) it repeats exactly, run
    after run: a random seed moves it by up to 0.3 % (dicts probe differently),
    as much as some of these rows' margins.
    """
    import shutil

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    done = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        cwd=ROOT,
        env={**child_env(), "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in ok:
        raise SystemExit(f"bench: valgrind {list(argv)!r} failed:\n{done.stderr}")
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    return None


def startup_rows(
    case: str,
    times: dict[str, list[float]],
    commands: dict[str, list[str]],
    ours: str,
    theirs: str,
    target: float | None,
    ok_codes: Sequence[int] = (0,),
) -> list[Row]:
    """A start-up row (wall time, interleaved) and its instruction-count twin.

    Wall time of a 20-40 ms process on a shared machine moves by more than
    these margins from run to run; the instruction count does not. So when
    valgrind is there, the instruction row gates and the wall row is shown for
    reference; without it, the wall row gates.
    """
    wall = round_ratio(times, ours, theirs)
    counts = {name: instructions(commands[name], ok_codes) for name in (ours, theirs)}
    have_counts = all(counts.values())
    detail = {
        "runs": len(times[ours]),
        "ours_median": statistics.median(times[ours]),
        "baseline_median": statistics.median(times[theirs]),
        "ours_min": min(times[ours]),
        "baseline_min": min(times[theirs]),
        "gated_by": "instructions" if have_counts else "wall time",
    }
    rows = [
        Row(
            case,
            statistics.median(times[ours]),
            statistics.median(times[theirs]),
            "s",
            wall,
            target,
            "<=" if target is not None else "info",
            None if target is None or have_counts else wall <= target,
            detail,
        )
    ]
    mine, base = counts[ours], counts[theirs]
    if mine and base:
        ratio = mine / base
        rows.append(
            Row(
                "  instructions: " + case,
                float(mine),
                float(base),
                "instructions",
                ratio,
                target,
                "<=" if target is not None else "info",
                None if target is None else ratio <= target,
                {"ours": mine, "baseline": base},
            )
        )
    return rows


def python_c(code: str, *flags: str) -> list[str]:
    """The command line of ``python FLAGS -c CODE`` with this interpreter."""
    return [sys.executable, *flags, "-c", code]


def run_argv(
    argv: Sequence[str], extra_env: dict[str, str] | None = None, ok: Sequence[int] = (0,)
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        list(argv),
        cwd=ROOT,
        env={**child_env(), **(extra_env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in ok:
        raise SystemExit(f"bench: child {list(argv)!r} failed:\n{done.stderr}")
    return done


def run_child(code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return run_argv(python_c(code, *flags))


def wall_times(
    commands: dict[str, list[str]], runs: int, ok: dict[str, Sequence[int]] | None = None
) -> dict[str, list[float]]:
    """Wall seconds of fresh processes, one per command line, interleaved, rotating.

    ``ok`` gives the exit codes that count as success per command (default 0).
    """
    codes = ok or {}
    for name, argv in commands.items():  # warm the page cache and write the .pyc files
        run_argv(argv, ok=codes.get(name, (0,)))
    times: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for r in range(runs):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            run_argv(commands[name], ok=codes.get(name, (0,)))
            times[name].append(time.perf_counter() - start)
    return times


def console_script() -> str:
    """The installed ``dra-metadata`` script: beside this interpreter, else on PATH."""
    import shutil
    import sysconfig

    found = shutil.which("dra-metadata", path=sysconfig.get_path("scripts")) or shutil.which(
        "dra-metadata"
    )
    if found is None:
        raise SystemExit("bench: no dra-metadata console script; pip install the package first")
    return found


def script_argv(script: str) -> list[str]:
    """How to run ``script``: with this interpreter when it is a Python script.

    Run by the interpreter, not through its ``#!`` line, so that valgrind (which
    runs binaries) counts the same process the wall time measures.
    """
    with open(script, "rb") as head:
        first = head.readline()
    return [sys.executable, script] if first.startswith(b"#!") and b"python" in first else [script]


def imported_modules(argv: Sequence[str]) -> list[str]:
    """Every module a fresh process of ``argv`` imports (``PYTHONPROFILEIMPORTTIME``)."""
    err = run_argv(argv, {"PYTHONPROFILEIMPORTTIME": "1"}).stderr
    names = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.append(name)
    return names


def importtime_profile(module: str, runs: int) -> dict[str, tuple[int, int]]:
    """``-X importtime`` of ``import module``: minimum (self, cumulative) µs per module."""
    best: dict[str, tuple[int, int]] = {}
    for _ in range(runs):
        err = run_child(f"import {module}", "-X", "importtime").stderr
        for line in err.splitlines():
            if not line.startswith("import time:") or "|" not in line:
                continue
            parts = line[len("import time:") :].split("|")
            try:
                own, cumulative = int(parts[0]), int(parts[1])
            except ValueError:  # the header line
                continue
            name = parts[2].strip()
            old = best.get(name)
            best[name] = (
                (own, cumulative)
                if old is None
                else (
                    min(old[0], own),
                    min(old[1], cumulative),
                )
            )
    return best


# --------------------------------------------------------------------------- #
# Results
# --------------------------------------------------------------------------- #


@dataclass
class Row:
    case: str
    ours: float
    baseline: float
    unit: Literal["s", "modules", "instructions"]
    ratio: float | None
    target: float | None
    op: Literal["<=", ">=", "none", "info"]
    ok: bool | None
    detail: dict[str, Any] = field(default_factory=dict)

    def target_text(self) -> str:
        if self.op == "none":
            return "none loaded"
        if self.target is None:
            return "-"
        return f"{self.op} {self.target:g}"


def check_equal(what: str, got: object, want: object) -> None:
    if got != want:
        raise SystemExit(f"bench: {what} does not give the expected object:\n{got!r}\n!=\n{want!r}")


def decode_rows(devices: int, rounds: int, batch: float, breakdown: bool) -> list[Row]:
    md = make_metadata(devices)
    stream = dm.encode(md)
    first = first_object(stream)
    floor = msgspec.json.Decoder()
    typed = msgspec.json.Decoder(dm.DeviceMetadata)

    # Every contender must produce the object the stream was written from.
    expected = msgspec.structs.replace(md, api_version=dm.V1BETA1)
    wire = json.loads(first)
    check_equal("decode()", dm.decode(stream), expected)
    check_equal("the msgspec floor", floor.decode(first), wire)
    check_equal("msgspec typed decode", typed.decode(first), expected)
    check_equal(
        "the pydantic alternative",
        pydantic_alternative(stream).model_dump(mode="json", by_alias=True, exclude_defaults=True),
        wire,
    )

    calls: dict[str, tuple[Callable[[Any], object], object]] = {
        "decode": (dm.decode, stream),
        "floor": (floor.decode, first),
        "pydantic": (pydantic_alternative, stream),
    }
    if breakdown:
        calls["typed"] = (typed.decode, first)
    s = interleaved(calls, rounds, batch)
    dec, flo, pyd = s["decode"], s["floor"], s["pydantic"]
    plural = "device" if devices == 1 else "devices"
    common = {
        "devices": devices,
        "stream_bytes": len(stream),
        "first_object_bytes": len(first),
        "rounds": rounds,
    }
    floor_ratio = paired_ratio_median(dec, flo)
    speedup = paired_ratio_median(pyd, dec)
    rows = [
        Row(
            f"decode vs msgspec floor, {devices} {plural}",
            dec.best,
            flo.best,
            "s",
            floor_ratio,
            DECODE_FLOOR_TARGETS[devices],
            "<=",
            floor_ratio <= DECODE_FLOOR_TARGETS[devices],
            {
                **common,
                "ours_median": dec.median,
                "baseline_median": flo.median,
                "median_ratio": dec.median / flo.median,
                "best_ratio": dec.best / flo.best,
                "calls_per_batch": [dec.number, flo.number],
            },
        ),
        Row(
            f"pydantic / decode, {devices} {plural}",
            dec.best,
            pyd.best,
            "s",
            speedup,
            PYDANTIC_SPEEDUP_TARGET,
            ">=",
            speedup >= PYDANTIC_SPEEDUP_TARGET,
            {
                **common,
                "ours_median": dec.median,
                "baseline_median": pyd.median,
                "median_ratio": pyd.median / dec.median,
                "best_ratio": pyd.best / dec.best,
                "calls_per_batch": [dec.number, pyd.number],
            },
        ),
    ]
    if breakdown:
        typ = s["typed"]
        rows.append(
            Row(
                f"  typed msgspec decode vs floor, {devices}",
                typ.best,
                flo.best,
                "s",
                typ.best / flo.best,
                None,
                "info",
                None,
                {**common, "ours_median": typ.median, "baseline_median": flo.median},
            )
        )
        rows.append(
            Row(
                f"  decode vs typed msgspec decode, {devices}",
                dec.best,
                typ.best,
                "s",
                dec.best / typ.best,
                None,
                "info",
                None,
                {**common, "overhead_s": dec.best - typ.best},
            )
        )
    return rows


def import_rows(runs: int, breakdown: bool) -> list[Row]:
    commands = {
        "pass": python_c("pass"),
        "msgspec.json": python_c("import msgspec.json"),
        "dra_metadata": python_c("import dra_metadata"),
    }
    times = wall_times(commands, runs)
    base = statistics.median(times["pass"])
    ours = statistics.median(times["dra_metadata"])
    theirs = statistics.median(times["msgspec.json"])
    net_ratio = (ours - base) / (theirs - base) if theirs > base else float("nan")
    rows = startup_rows(
        "import dra_metadata vs msgspec.json",
        times,
        commands,
        "dra_metadata",
        "msgspec.json",
        IMPORT_TARGET,
    )
    rows[0].detail.update(
        {
            "python_c_pass_median": base,
            "pass_min": min(times["pass"]),
            "net_of_startup_ratio": net_ratio,
        }
    )
    code = "import sys, dra_metadata; print('\\n'.join(sorted(sys.modules)))"
    loaded_names = run_child(code).stdout.split()
    roots = {name.partition(".")[0] for name in loaded_names}
    loaded = [name for name in FORBIDDEN_MODULES if name in roots]
    rows.append(
        Row(
            "modules loaded by import dra_metadata",
            float(len(loaded)),
            0.0,
            "modules",
            None,
            None,
            "none",
            not loaded,
            {"checked": list(FORBIDDEN_MODULES), "loaded": loaded, "total": len(loaded_names)},
        )
    )
    if breakdown:
        rows.append(
            Row(
                "  import net of `python -c pass`",
                ours - base,
                theirs - base,
                "s",
                net_ratio,
                None,
                "info",
                None,
            )
        )
        profile_runs = max(3, runs // 4)
        ours_prof = importtime_profile("dra_metadata", profile_runs)
        theirs_prof = importtime_profile("msgspec.json", profile_runs)
        extra = sorted(
            ((own, name) for name, (own, _) in ours_prof.items() if name not in theirs_prof),
            reverse=True,
        )
        for own, name in extra[:8]:
            rows.append(
                Row(
                    f"  -X importtime self: {name}",
                    own / 1e6,
                    0.0,
                    "s",
                    None,
                    None,
                    "info",
                    None,
                )
            )
    return rows


def jq_argv() -> list[str] | None:
    """``jq`` printing what ``get`` prints (the first object of the file), or ``None``."""
    import shutil

    jq = shutil.which("jq")
    if jq is None:
        return None
    path = SAMPLE_ROOT / "resourceclaimtemplates" / "gpu" / "gpu" / "gpu.example.com-metadata.json"
    program = (
        'first(inputs) | .requests[] | select(.name == "gpu") | .devices[].attributes.uuid.string'
    )
    return [jq, "-rn", program, str(path)]


def cli_rows(runs: int, breakdown: bool) -> list[Row]:
    """``env`` and ``get`` through the console script against ``import msgspec.json``, and jq."""
    script = console_script()
    root = str(SAMPLE_ROOT)
    env_argv = [*script_argv(script), "env", "--root", root]
    get_argv = [*script_argv(script), "get", "--root", root]
    get_argv += ["--template-claim", "gpu", "--request", "gpu", "uuid"]
    printed = run_argv(env_argv).stdout
    expected = dm.env_vars(root=SAMPLE_ROOT)
    if len(printed.splitlines()) != len(expected) or "export DRA_GPU_GPU_COUNT=2" not in printed:
        raise SystemExit(f"bench: {' '.join(env_argv)} does not print the sample variables")
    got = run_argv(get_argv).stdout
    commands = {"msgspec.json": python_c("import msgspec.json"), "env": env_argv, "get": get_argv}
    jq = jq_argv()
    if jq is not None:
        if run_argv(jq).stdout != got:
            raise SystemExit(f"bench: {' '.join(jq)} does not print what get prints")
        commands["jq"] = jq
    times = wall_times(commands, runs)
    rows = startup_rows(
        "dra-metadata env vs import msgspec.json",
        times,
        commands,
        "env",
        "msgspec.json",
        ENV_TARGET,
    )
    rows[0].detail.update({"script": script, "variables": len(expected)})
    rows += startup_rows(
        "dra-metadata get vs import msgspec.json",
        times,
        commands,
        "get",
        "msgspec.json",
        GET_TARGET,
    )
    if jq is not None:
        for name in ("get", "env"):
            ratio = round_ratio(times, name, "jq")
            rows.append(
                Row(
                    f"dra-metadata {name} vs jq (get's query)",
                    statistics.median(times[name]),
                    statistics.median(times["jq"]),
                    "s",
                    ratio,
                    None,
                    "info",
                    None,
                    {"jq": jq[0]},
                )
            )
    rows.extend(topology_rows(script, runs))
    root = str(SAMPLE_ROOT)
    commands = {
        "env": ["env", "--root", root],
        "ls": ["ls", "--root", root],
        "get": ["get", "--root", root, "--template-claim", "gpu", "--request", "gpu", "uuid"],
        "show": ["show", "--root", root, "--claim", "nic", "--request", "eth"],
    }
    loaded: dict[str, list[str]] = {}
    env_modules: list[str] = []
    for name, args in commands.items():
        modules = imported_modules([script, *args])
        if name == "env":
            env_modules = modules
        roots = {module.partition(".")[0] for module in modules}
        loaded[name] = [module for module in FORBIDDEN_MODULES if module in roots]
    heavy = sorted({module for found in loaded.values() for module in found})
    rows.append(
        Row(
            "modules loaded by dra-metadata env/ls/get/show",
            float(len(heavy)),
            0.0,
            "modules",
            None,
            None,
            "none",
            not heavy,
            {"checked": list(FORBIDDEN_MODULES), "loaded": heavy, "per_command": loaded},
        )
    )
    if breakdown:
        baseline = set(imported_modules(python_c("import msgspec.json")))
        extra = [module for module in env_modules if module not in baseline]
        other = [module for module in extra if not module.startswith("dra_metadata")]
        rows.append(
            Row(
                "  env imports beyond msgspec.json, besides dra_metadata",
                float(len(other)),
                0.0,
                "modules",
                None,
                None,
                "info",
                None,
                {"loaded": other, "modules": extra},
            )
        )
    return rows


def topology_rows(script: str, runs: int) -> list[Row]:
    """``topology`` and ``doctor`` on the topology sample tree against ``import msgspec.json``.

    ``doctor`` runs against this machine's /sys, /proc and cgroup files and its
    ``ip`` (the sample's devices are not here, so it exits 1: a full run all
    the same, interfaces listed through ``ip -json`` included).
    """
    root = str(TOPOLOGY_ROOT)
    commands = {
        "msgspec.json": python_c("import msgspec.json"),
        "topology": [*script_argv(script), "topology", "--root", root],
        "doctor": [*script_argv(script), "doctor", "--root", root],
    }
    if "gpu0" not in run_argv(commands["topology"]).stdout:
        raise SystemExit(f"bench: {' '.join(commands['topology'])} does not print the sample")
    times = wall_times(commands, runs, ok={"doctor": (0, 1)})
    rows = []
    for name in ("topology", "doctor"):
        rows += startup_rows(
            f"dra-metadata {name} vs import msgspec.json",
            times,
            commands,
            name,
            "msgspec.json",
            TOPOLOGY_TARGET,
            (0, 1),
        )
    return rows


# --------------------------------------------------------------------------- #
# Output
# --------------------------------------------------------------------------- #


def fmt_time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} us"


def render_table(rows: Sequence[Row]) -> str:
    header = ("case", "ours", "baseline", "ratio", "target", "ok")
    lines: list[tuple[str, ...]] = [header]
    for row in rows:
        if row.unit == "modules":
            loaded = row.detail.get("loaded", [])
            ours = ",".join(loaded) if loaded else "none"
            baseline = "-"
        elif row.unit == "instructions":
            ours, baseline = f"{row.ours / 1e6:.1f} M ins", f"{row.baseline / 1e6:.1f} M ins"
        else:
            ours = fmt_time(row.ours)
            baseline = fmt_time(row.baseline) if row.baseline else "-"
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
        ok = "-" if row.ok is None else ("yes" if row.ok else "MISS")
        lines.append((row.case, ours, baseline, ratio, row.target_text(), ok))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        cells = [line[0].ljust(widths[0])]
        cells += [cell.rjust(widths[i + 1]) for i, cell in enumerate(line[1:])]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Relative benchmarks of dra_metadata (decode speed, import and CLI cost)."
    )
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke test")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="also time msgspec's typed decode and profile the import (informational rows)",
    )
    parser.add_argument("--rounds", type=int, help="timing batches per contender")
    parser.add_argument("--batch", type=float, help="seconds per timing batch")
    parser.add_argument("--import-runs", type=int, help="processes per import contender")
    args = parser.parse_args(argv)

    rounds = args.rounds or (5 if args.quick else 41)
    batch = args.batch or (0.002 if args.quick else 0.01)
    import_runs = args.import_runs or (7 if args.quick else 41)

    rows: list[Row] = []
    for devices in DEVICE_COUNTS:
        rows.extend(decode_rows(devices, rounds, batch, args.breakdown))
    rows.extend(import_rows(import_runs, args.breakdown))
    rows.extend(cli_rows(import_runs, args.breakdown))
    legend = (
        "times: best batch per call (decode) or median process wall time (start-up rows); "
        "ratio: the median over interleaved rounds of ours/baseline in the round, except "
        "pydantic/decode (a speed-up); start-up rows gate on their 'instructions' twin "
        "(valgrind) when valgrind is there"
    )
    return report(
        rows,
        quick=args.quick,
        rounds=rounds,
        batch=batch,
        runs=("import_runs", import_runs, "import runs"),
        legend=legend,
        as_json=args.json,
        check=args.check,
    )


def report(
    rows: Sequence[Row],
    *,
    quick: bool,
    rounds: int,
    batch: float,
    runs: tuple[str, int, str],
    legend: str,
    as_json: bool,
    check: bool,
) -> int:
    """Print ``rows`` as the table (or JSON); with ``check``, 1 when a target is missed.

    ``runs`` is the process runs' JSON key, count and label (``("import_runs", 41,
    "import runs")``).
    """
    missed = [row for row in rows if row.ok is False]
    mode = "quick" if quick else "full"
    if as_json:
        print(
            json.dumps(
                {
                    "python": platform.python_version(),
                    "implementation": platform.python_implementation(),
                    "msgspec": msgspec.__version__,
                    "pydantic": pydantic.VERSION,
                    "dra_metadata": dm.__version__,
                    "dra_metadata_file": dm.__file__,
                    "mode": mode,
                    "rounds": rounds,
                    "batch_s": batch,
                    runs[0]: runs[1],
                    "results": [asdict(row) for row in rows],
                    "all_ok": not missed,
                },
                indent=2,
            )
        )
    else:
        print(
            f"dra_metadata {dm.__version__} | Python {platform.python_version()} | "
            f"msgspec {msgspec.__version__} | pydantic {pydantic.VERSION} | "
            f"{mode}: {rounds} rounds x {batch * 1e3:g} ms, {runs[1]} {runs[2]}"
        )
        print(render_table(rows))
        print(legend)
    if check and missed:
        for row in missed:
            ratio = "-" if row.ratio is None else f"{row.ratio:.2f}"
            loaded = row.detail.get("loaded") if row.unit == "modules" else None
            detail = f" (loaded: {', '.join(loaded)})" if loaded else ""
            print(
                f"MISSED: {row.case}: ratio {ratio}, target {row.target_text()}{detail}",
                file=sys.stderr,
            )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
