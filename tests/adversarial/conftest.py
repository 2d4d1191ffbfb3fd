"""The adversarial suite: bounded counts by default, the long versions on request."""

from __future__ import annotations

import pytest

LONG = "adversarial_long"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the long versions unless ``-m`` asks for them by name."""
    if LONG in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason=f"a long adversarial run: select it with -m {LONG}")
    for item in items:
        if LONG in item.keywords:
            item.add_marker(skip)
