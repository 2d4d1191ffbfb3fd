"""The Go reference suite's gate and harness: ``python -m pytest -m goref``.

It runs only when asked (``-m goref``, or ``DRA_METADATA_GOREF=1``). Where it is
asked but cannot run (no ``go``, a failed build, no root for the mount namespace),
every test is skipped with the reason, except under CI (``CI=true``), where that is
a failure: CI must run the reference.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.goref.harness import Goref, GorefUnavailable, build

#: Set to 1 to run the suite without ``-m goref``.
GOREF_ENV = "DRA_METADATA_GOREF"


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
