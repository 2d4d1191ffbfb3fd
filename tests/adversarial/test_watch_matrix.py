"""The watch matrix: every writer x other process on the file x API, with real processes.

``benchmarks/bench_watch_matrix.py`` races a writer process against a watch while
another process holds the file (or a second watch follows it), and reports per
cell what was delivered: torn objects (a mixture of two generations that still
decodes), whether the final generation arrived whole, and when. This module runs
it as a subprocess (``--json``) and checks every cell against the bench's
``PROMISED``: no torn object where the rule promises none, and the final
generation whole within 1.5 s of its last write, in every cell.

The default run takes a bounded selection (every writer with no other process
and ``watch``; every other process with ``pwrite-20``; every API with
``close``; a second watch beside the CLI), a few writes 50 ms apart, and the
watchers below, in three lanes at once (about 25 s on a 2-core machine: each
cell's processes mostly sleep). ``-m adversarial_long`` runs
every one of the 256 cells with 1,000 writes, one bench process per cell, so
that ``-k`` can pick some (all of them: hours).

Also here, the watchers requirement: 1, 2 and 4 watchers on one file (Python
``watch`` and the CLI, several in one process and one process each) while a
writer updates it every 200 ms: each delivers the last one whole and is never
more than 3 s behind the writer (a write whose open is heard together with
another watch's read waits out the watch's quiet second: the newest comes then).

A failing cell prints its figures: what was written, delivered and torn, and the
final generation's fate.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REPO

BENCH = REPO / "benchmarks" / "bench_watch_matrix.py"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the matrix races inotify: Linux only"
)


def _load_bench() -> ModuleType:
    """The bench as a module (for its promises and names; the runs are subprocesses)."""
    spec = importlib.util.spec_from_file_location("bench_watch_matrix", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_watch_matrix"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _load_bench()
WRITERS: tuple[str, ...] = bench.WRITERS
OTHERS: tuple[str, ...] = bench.OTHERS
APIS: tuple[str, ...] = bench.APIS
FIRST: int = bench.FIRST
CROWD_BEHIND_MS: float = bench.CROWD_BEHIND_MS

#: Writers whose pause makes each write long: fewer writes in the default run.
SLOW = ("pwrite-200", "pwrite-500", "mmap")
WRITES = 6
SLOW_WRITES = 4
INTERVAL_MS = 50

Cell = dict[str, Any]
Key = tuple[str, str, str]


def no_torn_promised(writer: str) -> bool:
    """Whether the watch promises no torn object for ``writer`` (the bench's ``PROMISED``)."""
    return bool(bench.PROMISED[writer].no_torn)


def final_within_ms(writer: str) -> float:
    """How soon the final generation must be delivered whole (ms after its last write)."""
    return float(bench.PROMISED[writer].final_within_ms)


def run_bench(args: list[str], timeout: float) -> list[Cell]:
    """The bench with ``args`` and ``--json``: its list of results."""
    done = subprocess.run(
        [sys.executable, str(BENCH), "--json", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"the bench failed ({done.returncode}):\n{done.stderr}"
    results = json.loads(done.stdout)
    assert isinstance(results, list)
    return results


def matrix_args(
    writers: list[str], others: list[str], apis: list[str], writes: int, interval_ms: float
) -> list[str]:
    """The bench's command line for the product of the three lists."""
    args = ["--writes", str(writes), "--interval", str(interval_ms)]
    for option, names in (("--writer", writers), ("--other", others), ("--api", apis)):
        for name in names:
            args += [option, name]
    return args


def timeout_for(cells: int, writes: int, interval_ms: float, stall: float = 0.5) -> float:
    """A generous bound on the wall time of ``cells`` cells (the bench gives up sooner)."""
    return 120 + cells * (15 + writes * (2 * interval_ms / 1000 + stall + 0.1))


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def describe(summary: dict[str, Any], written: int, final: int, writer: str) -> list[str]:
    """One watcher's figures, a line each."""
    whole = "whole" if summary["final_whole"] else "NOT delivered whole"
    return [
        f"delivered {summary['delivered']} update(s); {summary['generations']} of {written} "
        f"generations whole ({summary['fraction']:.0%})",
        f"torn: {len(summary['torn'])} {summary['torn']} "
        f"(promised none: {'yes' if no_torn_promised(writer) else 'no'})",
        f"final generation {final}: {whole}, {_ms(summary['final_after_ms'])} after its last "
        f"write (promised within {final_within_ms(writer):.0f} ms)",
        f"latency (close or rename returned -> delivered whole): median "
        f"{_ms(summary['latency_median_ms'])}, p95 {_ms(summary['latency_p95_ms'])}; "
        f"at most {_ms(summary['behind_ms'])} behind the writer",
        f"other events: {summary['events'] or 'none'}",
    ]


def figures(cell: Cell) -> str:
    """The cell's figures, as a failure message shows them."""
    final = FIRST + cell["writes"]
    lines = [
        f"cell {cell['writer']} / {cell['other']} / {cell['api']}: {cell['writes']} generations "
        f"written ({FIRST + 1}..{final}), ~{cell['interval_ms']:g} ms apart, "
        f"{cell['seconds']} s",
        *(f"  {line}" for line in describe(cell["summary"], cell["writes"], final, cell["writer"])),
    ]
    if cell["other_watch"] is not None:
        lines.append("  the second watch (other: watcher):")
        lines += [
            f"    {line}"
            for line in describe(cell["other_watch"], cell["writes"], final, cell["writer"])
        ]
    if cell["note"]:
        lines.append(f"  note: {cell['note']}")
    lines += [f"  bench: {problem}" for problem in cell["broken"]]
    return "\n".join(lines)


def problems_of(summary: dict[str, Any], writer: str, who: str = "") -> list[str]:
    """The promises ``summary`` breaks."""
    found = []
    if no_torn_promised(writer) and len(summary["torn"]) > bench.PROMISED[writer].merged_opens:
        found.append(f"{who}{len(summary['torn'])} torn object(s) delivered")
    if not summary["final_whole"]:
        found.append(f"{who}the final generation was never delivered whole")
    elif summary["final_after_ms"] > final_within_ms(writer):
        found.append(
            f"{who}the final generation arrived whole {summary['final_after_ms']:.0f} ms after "
            f"its last write (> {final_within_ms(writer):.0f} ms)"
        )
    return found


def check(cell: Cell) -> None:
    """The cell keeps the watch's promises (the harness itself ran cleanly)."""
    problems = [problem for problem in cell["broken"] if problem.startswith("harness")]
    problems += problems_of(cell["summary"], cell["writer"])
    if cell["other_watch"] is not None:
        problems += problems_of(cell["other_watch"], cell["writer"], "second watch: ")
    elif cell["other"] == "watcher":
        problems.append("the second watch reported nothing")
    assert not problems, "; ".join(problems) + "\n" + figures(cell)


# --- the default selection ----------------------------------------------------------------

FAST = [writer for writer in WRITERS if writer not in SLOW]
#: 1, 2 and 4 watchers: Python ``watch`` and the CLI, alone or several in one process.
LAYOUTS = {1: "watch", 2: "cli,watch", 4: "watch:2,cli,watch"}
CROWD_SECONDS = 5


def crowd_args(seconds: float) -> list[str]:
    """The bench's command line for every layout of :data:`LAYOUTS`, in order."""
    args = ["--seconds", str(seconds), "--interval", "200"]
    for layout in LAYOUTS.values():
        args += ["--watchers", layout]
    return args


#: The bench runs of the default selection: three lanes at once, each one run after another.
LANES: list[list[tuple[list[str], float]]] = [
    [
        (
            matrix_args(FAST, ["none"], ["watch"], WRITES, INTERVAL_MS),
            timeout_for(len(FAST), WRITES, INTERVAL_MS),
        ),
        (
            matrix_args(list(SLOW), ["none"], ["watch"], SLOW_WRITES, INTERVAL_MS),
            timeout_for(len(SLOW), SLOW_WRITES, INTERVAL_MS),
        ),
    ],
    [
        (
            matrix_args(
                ["pwrite-20"], [o for o in OTHERS if o != "none"], ["watch"], WRITES, INTERVAL_MS
            ),
            timeout_for(len(OTHERS), WRITES, INTERVAL_MS),
        ),
        (
            matrix_args(
                ["close"], ["none"], [a for a in APIS if a != "watch"], WRITES, INTERVAL_MS
            ),
            timeout_for(len(APIS), WRITES, INTERVAL_MS),
        ),
        (
            matrix_args(["pwrite-20"], ["watcher"], ["cli"], WRITES, INTERVAL_MS),
            timeout_for(1, WRITES, INTERVAL_MS),
        ),
    ],
    [(crowd_args(CROWD_SECONDS), 120 + 3 * len(LAYOUTS) * CROWD_SECONDS)],
]
DEFAULT_CELLS: list[Key] = [
    *((writer, "none", "watch") for writer in WRITERS),
    *(("pwrite-20", other, "watch") for other in OTHERS if other != "none"),
    *(("close", "none", api) for api in APIS if api != "watch"),
    ("pwrite-20", "watcher", "cli"),
]


class Lanes:
    """Runs of the bench in lanes, each lane's runs one after the other, the lanes at once."""

    def __init__(self, lanes: list[list[tuple[list[str], float]]]) -> None:
        self.cells: dict[Key, Cell] = {}
        self.crowds: dict[int, dict[str, Any]] = {}  # by the number of watchers asked for
        self.errors: list[str] = []
        self._threads = [threading.Thread(target=self._run, args=(lane,)) for lane in lanes]
        for thread in self._threads:
            thread.start()

    def _run(self, lane: list[tuple[list[str], float]]) -> None:
        for args, timeout in lane:
            try:
                results = run_bench(args, timeout)
            except (AssertionError, subprocess.TimeoutExpired, ValueError) as err:
                self.errors.append(f"bench {' '.join(args)}: {err}")
                continue
            if "--watchers" in args:
                self.crowds.update(zip(LAYOUTS, results, strict=True))
            for cell in results if "--watchers" not in args else []:
                self.cells[(cell["writer"], cell["other"], cell["api"])] = cell

    def join(self) -> None:
        """Wait for every lane."""
        for thread in self._threads:
            thread.join()

    def cell(self, key: Key) -> Cell:
        """The cell ``key``, once every lane is done."""
        self.join()
        if key not in self.cells:
            pytest.fail(f"no result for {key}: " + "\n".join(self.errors))
        return self.cells[key]

    def crowd(self, watchers: int) -> dict[str, Any]:
        """The run of ``watchers`` watchers, once every lane is done."""
        self.join()
        if watchers not in self.crowds:
            pytest.fail(f"no result for {watchers} watchers: " + "\n".join(self.errors))
        return self.crowds[watchers]


@pytest.fixture(scope="module")
def selection() -> Lanes:
    """The default selection, run once for the module."""
    return Lanes(LANES)


@pytest.mark.parametrize(("writer", "other", "api"), DEFAULT_CELLS)
def test_cell_keeps_the_promises(selection: Lanes, writer: str, other: str, api: str) -> None:
    """A few writes: no torn object where promised, the final one whole within 1.5 s."""
    check(selection.cell((writer, other, api)))


def test_the_publisher_is_watched_through_a_bind_mount(selection: Lanes) -> None:
    """As root the publisher's file is watched on the container side, a read-only bind mount."""
    note = selection.cell(("publisher", "none", "watch"))["note"]
    if "NOT mounted" in note:
        pytest.skip(f"the publisher ran unmounted: {note}")
    assert "read-only bind mount" in note, note


# --- several watchers on one file ---------------------------------------------------------


def check_crowd(result: dict[str, Any], watchers: int) -> None:
    """Each watcher delivered the last generation in time, and never fell far behind."""
    lines = [
        f"{len(result['watchers'])} watchers ({','.join(result['layout'])}), writer "
        f"{result['writer']}, {result['writes']} generations ~{result['interval_ms']:g} ms apart"
    ]
    problems = [problem for problem in result["broken"] if problem.startswith("harness")]
    final = FIRST + result["writes"]
    for watcher in result["watchers"]:
        summary = watcher["summary"]
        lines.append(f"  {watcher['name']}:")
        lines += [
            f"    {line}" for line in describe(summary, result["writes"], final, result["writer"])
        ]
        behind = summary["behind_ms"]
        if behind is None or behind > CROWD_BEHIND_MS:
            problems.append(f"{watcher['name']} fell {behind} ms behind the writer")
        problems += problems_of(summary, result["writer"], f"{watcher['name']}: ")
    if len(result["watchers"]) != watchers:
        problems.append(f"{len(result['watchers'])} watchers reported, not {watchers}")
    assert not problems, "; ".join(problems) + "\n" + "\n".join(lines)


@pytest.mark.parametrize("watchers", sorted(LAYOUTS))
def test_several_watchers_each_keep_up(selection: Lanes, watchers: int) -> None:
    """~5 s of updates every 200 ms: each watcher in step with the writer, and the last."""
    check_crowd(selection.crowd(watchers), watchers)


@pytest.mark.adversarial_long
@pytest.mark.parametrize("watchers", sorted(LAYOUTS))
def test_several_watchers_each_keep_up_for_long(watchers: int) -> None:
    """15 s of updates every 200 ms: each watcher in step with the writer, and the last."""
    args = ["--watchers", LAYOUTS[watchers], "--seconds", "15", "--interval", "200"]
    (result,) = run_bench(args, timeout=120 + 3 * 15)
    check_crowd(result, watchers)


# --- the whole matrix ---------------------------------------------------------------------

LONG_WRITES = 1000
LONG_INTERVAL_MS = 20


@pytest.mark.adversarial_long
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("other", OTHERS)
@pytest.mark.parametrize("writer", WRITERS)
def test_every_cell_over_a_long_race(writer: str, other: str, api: str) -> None:
    """1,000 writes ~20 ms apart in every cell: no torn object where promised, the last whole.

    Each cell is one bench process: ``-k 'twin and reader'`` picks some. All 256
    take hours (``pwrite-500`` and ``mmap`` sleep 0.5 s in each write).
    """
    args = matrix_args([writer], [other], [api], LONG_WRITES, LONG_INTERVAL_MS)
    (cell,) = run_bench(args, timeout_for(1, LONG_WRITES, LONG_INTERVAL_MS))
    check(cell)
