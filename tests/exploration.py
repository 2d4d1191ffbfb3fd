"""Which examples the property tests draw: the same ones every run, new ones only when asked.

Every run of the suite (the README's command, CI, ``-m goref``) loads the ``replay``
Hypothesis profile: each test draws its examples from a seed derived from the test
itself (``derandomize``), so a run tests exactly what the run before it tested, and
a change fails only when something it changed is wrong. Before those, each test
replays the examples exploration once saved for it (:data:`FOUND`, read-only).
There is no deadline and no ``too_slow`` health check: both measure time, which a
loaded machine stretches.

``DRA_METADATA_EXPLORE=1`` loads ``explore`` instead: fresh seeds, ten times as many
examples (:func:`examples` scales the counts tests name), and every failing example
Hypothesis finds, shrunk, saved under :data:`FOUND` for every later run to replay
(commit what it adds). The goref suite's decode test keeps its streams as readable
files in ``tests/goref/regressions/`` instead (``database=None`` there).

Hypothesis lets a derandomised run use no example database by default
(``derandomize=True`` alone implies ``database=None``); a profile whose parent is
derandomised may still name one, and Hypothesis then replays it first.
``tests/test_exploration.py`` checks that this still holds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

#: Set to 1 to explore: fresh seeds, ten times the examples, failures saved.
EXPLORE_ENV: Final = "DRA_METADATA_EXPLORE"
#: Whether this run explores.
EXPLORING: Final = os.environ.get(EXPLORE_ENV, "") not in ("", "0")
#: How many times the usual number of examples an exploring run draws.
SCALE: Final = 10 if EXPLORING else 1
#: The examples exploration found (a Hypothesis example database), committed with the
#: tests. An example is filed under its test's source: changing a test retires its
#: saved examples (explore it again).
FOUND: Final = Path(__file__).resolve().parent / "hypothesis-examples"


def examples(count: int) -> int:
    """``count`` examples, or ten times as many when exploring."""
    return count * SCALE


class KeepingDatabase(DirectoryBasedExampleDatabase):
    """:data:`FOUND` as exploration writes it: new failures saved, none forgotten.

    Hypothesis deletes a saved example once it passes again; a regression case
    must outlive the fix of its bug, so nothing is deleted here.
    """

    def delete(self, key: bytes, value: bytes) -> None:
        """Keep the example."""


#: Hypothesis's own default number of examples, for tests that name none.
DEFAULT_EXAMPLES: Final = 100


def load_profile() -> str:
    """Register ``replay`` and ``explore``, load the one this run asks for; its name."""
    too_slow = [HealthCheck.too_slow]
    settings.register_profile(
        "replay",
        settings(derandomize=True, deadline=None, suppress_health_check=too_slow),
        database=ReadOnlyDatabase(DirectoryBasedExampleDatabase(FOUND)),
    )
    settings.register_profile(
        "explore",
        settings(derandomize=False, deadline=None, suppress_health_check=too_slow),
        database=KeepingDatabase(FOUND),
        max_examples=examples(DEFAULT_EXAMPLES),
    )
    name = "explore" if EXPLORING else "replay"
    settings.load_profile(name)
    return name
