"""The Go reference suite's gate and harness: ``python -m pytest -m goref``.

It runs only when asked (``-m goref``, or ``DRA_METADATA_GOREF=1``). Where it is
asked but cannot run (no ``go``, a failed build, no root for the mount namespace),
every test is skipped with the reason, except under CI (``CI=true``), where that is
a failure: CI must run the reference.

With ``DRA_METADATA_GOREF_NEXT=1`` the suite runs against the next release
(``go.next.mod``, tests/goref/next_release.py) and ends with a line per area saying
whether it answers as the pinned one; where its Go toolchain cannot be fetched, that
is skipped (or fails under CI) like any other reason the harness cannot run.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.goref.harness import NEXT, Goref, GorefUnavailable, build, release
from tests.goref.next_release import Rewriter, areas_of, summary

#: Set to 1 to run the suite without ``-m goref``.
GOREF_ENV = "DRA_METADATA_GOREF"
#: The next release's rewriter, once its harness runs (read by the summary).
_REWRITER = pytest.StashKey[Rewriter]()


def _asked(config: pytest.Config) -> bool:
    return "goref" in (config.getoption("markexpr") or "") or os.environ.get(GOREF_ENV) == "1"


def _refuse(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the Go reference suite: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def goref(request: pytest.FixtureRequest) -> Iterator[Goref]:
    """The running harness (built once per source hash), for the whole session."""
    if not _asked(request.config):
        pytest.skip(
            "the Go reference suite runs only when asked: "
            f"python -m pytest -m goref (or {GOREF_ENV}=1)"
        )
    try:
        binary = build()
    except GorefUnavailable as err:
        _refuse(str(err))
    harness = Goref(binary)
    if release() is NEXT:
        harness.rewrite = request.config.stash[_REWRITER] = Rewriter.measure(harness)
    yield harness
    harness.close()


@pytest.fixture(scope="session")
def goref_root(goref: Goref) -> Goref:
    """The harness, where its readers can run: root, in a private mount namespace."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        _refuse(
            "the Go readers read the fixed container path: they need root and unshare "
            "(util-linux) for a private mount namespace"
        )
    return goref


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """After a run against the next release: per area, whether it answers as the pinned one."""
    rewriter = terminalreporter.config.stash.get(_REWRITER, None)
    if rewriter is None:
        return
    outcomes: dict[str, Counter[str]] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(outcome, []):
            module = Path(str(getattr(report, "nodeid", "")).split("::")[0]).name
            failure = str(getattr(report, "longreprtext", "")) if outcome != "passed" else ""
            for area in areas_of(module, failure):
                outcomes.setdefault(area, Counter())[outcome] += 1
    terminalreporter.section("the next release")
    for line in summary(rewriter, outcomes):
        terminalreporter.write_line(line)
