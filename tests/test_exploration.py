"""Tests for tests/exploration.py: the same examples every run, exploration on request."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase, ReadOnlyDatabase

from tests.conftest import HYPOTHESIS_PROFILE, REPO
from tests.exploration import EXPLORE_ENV, EXPLORING, FOUND, KeepingDatabase


def test_this_run_loads_the_profile_its_environment_asks_for() -> None:
    """replay (derandomised, the saved examples read-only), or explore when asked."""
    current = settings()
    assert current.deadline is None
    if EXPLORING:
        assert HYPOTHESIS_PROFILE == "explore"
        assert not current.derandomize
        assert isinstance(current.database, KeepingDatabase)
    else:
        assert HYPOTHESIS_PROFILE == "replay"
        assert current.derandomize
        assert isinstance(current.database, ReadOnlyDatabase)
        assert repr(FOUND) in repr(current.database)


@pytest.mark.parametrize(("value", "profile"), [("", "replay"), ("0", "replay"), ("1", "explore")])
def test_the_variable_chooses_the_profile(value: str, profile: str) -> None:
    """DRA_METADATA_EXPLORE=1 explores: fresh seeds and ten times the examples."""
    code = (
        "from hypothesis import settings\n"
        "from tests.exploration import examples, load_profile\n"
        "print(load_profile(), examples(300), settings().derandomize, settings().max_examples)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, EXPLORE_ENV: value},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stderr == ""
    expected = "replay 300 True 100" if profile == "replay" else "explore 3000 False 1000"
    assert done.stdout.split() == expected.split()


def _run(check: Callable[[int], None], database: ExampleDatabase | None) -> list[int]:
    """The examples a derandomised property draws, in order, with ``database``."""
    seen: list[int] = []

    @settings(settings(derandomize=True, deadline=None), database=database, max_examples=50)
    @given(st.integers())
    def prop(number: int) -> None:
        seen.append(number)
        check(number)

    prop()
    return seen


def _at_most_1000(number: int) -> None:
    assert number <= 1000


def _anything(number: int) -> None:
    pass


def test_a_saved_example_is_replayed_first_and_kept_once_it_passes(tmp_path: Path) -> None:
    """What the replay profile relies on: saved examples first, then the derandomised ones."""
    found = KeepingDatabase(tmp_path)
    with pytest.raises(AssertionError):
        _run(_at_most_1000, found)  # exploring: the shrunk failure is saved
    assert _run(_anything, ReadOnlyDatabase(found))[0] == 1001
    _run(_anything, found)  # it passes now: Hypothesis would delete it; it is kept
    assert _run(_anything, ReadOnlyDatabase(found))[0] == 1001
    assert _run(_anything, None)[0] != 1001
    assert _run(_anything, None) == _run(_anything, None)
