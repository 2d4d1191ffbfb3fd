"""The watch functions check ``root`` and ``max_size`` when called, as the readers do."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dra_metadata as dm

#: Each public watch entry point, called with a selection and the keyword arguments given.
ENTRY_POINTS: dict[str, Callable[..., object]] = {
    "watch": lambda **kw: dm.watch(claim="c", request="r", **kw),
    "awatch": lambda **kw: dm.awatch(claim="c", request="r", **kw),
    "wait_for": lambda **kw: dm.wait_for(claim="c", request="r", timeout=0, **kw),
    "await_for": lambda **kw: asyncio.run(dm.await_for(claim="c", request="r", timeout=0, **kw)),
    "MetadataWatcher": lambda **kw: dm.MetadataWatcher(claim="c", request="r", **kw),
}


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_a_nul_in_the_root_is_an_invalid_name(name: str) -> None:
    """``root="/tmp\\x00x"``: InvalidNameError at the call, as the readers raise it."""
    with pytest.raises(dm.InvalidNameError, match="metadata root"):
        ENTRY_POINTS[name](root="/tmp\x00x")
    with pytest.raises(dm.InvalidNameError):
        dm.read_resource_claim("c", "r", root="/tmp\x00x")


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize("root", [b"/tmp", 42])
def test_a_root_that_is_not_a_str_path_is_a_clear_type_error(name: str, root: Any) -> None:
    """A bytes (or int) root: TypeError with our message, not os.path's."""
    kind = type(root).__name__
    with pytest.raises(
        TypeError, match=rf"^root must be a str or os\.PathLike\[str\], not {kind}$"
    ):
        ENTRY_POINTS[name](root=root)


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_max_size_none_is_a_clear_type_error(name: str, tmp_path: Path) -> None:
    """``max_size=None`` fails at the call with our message, not at the first read."""
    with pytest.raises(TypeError, match=r"^max_size must be an int, not NoneType$"):
        ENTRY_POINTS[name](root=str(tmp_path), max_size=None)


def test_a_pathlike_root_is_accepted(tmp_path: Path) -> None:
    """A ``pathlib.Path`` root works as a str does."""
    assert list(dm.watch(claim="c", request="r", root=tmp_path, timeout=0)) == []
