"""The error hierarchy is drawn twice (docs/reading.md and the top of _errors.py): both are true.

Each drawing is read back (a class per line, its parent by indentation, its
standard-library base in parentheses) and compared with the classes themselves:
every public exception is drawn, each under its real parent, with its real base.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dra_metadata as dm
from dra_metadata import _errors
from tests.conftest import REPO

_LINE = re.compile(r"^(?P<prefix>[│├└─ ]*)(?P<name>[A-Z]\w+)\s*(?:\((?P<base>\w+)\))?")


def drawn(text: str) -> dict[str, tuple[str | None, str | None]]:
    """Class -> (parent in the drawing, base in parentheses), from a tree's lines."""
    start = text.index("DRAMetadataError ")
    indent = start - text.rindex("\n", 0, start) - 1  # the root's, in a docstring
    lines = [line[indent:] for line in text[start - indent :].splitlines()]
    tree: dict[str, tuple[str | None, str | None]] = {}
    stack: list[str] = []
    for line in lines:
        found = _LINE.match(line)
        if found is None and line.lstrip().startswith("│"):
            continue  # a note carried onto the next line
        if found is None or (tree and not found["prefix"]):
            break
        depth = len(found["prefix"]) // 4
        del stack[depth:]
        tree[found["name"]] = (stack[-1] if stack else None, found["base"])
        stack.append(found["name"])
    return tree


def public_errors() -> dict[str, type[BaseException]]:
    return {
        name: value
        for name in dm.__all__
        if isinstance(value := getattr(dm, name), type) and issubclass(value, dm.DRAMetadataError)
    }


@pytest.mark.parametrize(
    "source",
    [REPO / "docs" / "reading.md", Path(_errors.__file__)],
    ids=["docs/reading.md", "_errors.py"],
)
def test_the_drawn_error_tree_is_the_real_one(source: Path) -> None:
    """Every public error drawn once, under its real parent, with its real standard base."""
    tree = drawn(source.read_text(encoding="utf-8"))
    errors = public_errors()
    assert sorted(tree) == sorted(errors)
    for name, (parent, base) in tree.items():
        cls = errors[name]
        ours = [b for b in cls.__bases__ if issubclass(b, dm.DRAMetadataError)]
        theirs = [b.__name__ for b in cls.__bases__ if not issubclass(b, dm.DRAMetadataError)]
        assert (ours[0].__name__ if ours else None) == parent, name
        assert (theirs[0] if theirs and theirs != ["Exception"] else None) == base, name
