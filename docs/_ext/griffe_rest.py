"""A griffe extension: the package's reST-flavoured docstrings, as Markdown.

The docstrings are written for ``help()`` and doctest: Sphinx roles
(:func:`name`), ``>>>`` examples, ``name::`` literal blocks, ``.. code-block::``
and ``#:`` comments above module constants. mkdocstrings renders Markdown, so
this extension rewrites each docstring once, when griffe loads it:

* a role becomes a code span (``:func:`~dra_metadata.decode``` is ``decode()``);
* a run of ``>>>`` lines with its output becomes a ``pycon`` block;
* an indented block after ``::`` or ``.. code-block:: LANG`` becomes a fenced block;
* a definition list item (a term, then its indented text) becomes a Markdown one;
* an attribute with no docstring takes the ``#:`` comment lines above it.

The text itself is not changed; ``python -m pytest --doctest-modules`` still
runs the same examples.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(func|meth|class|mod|data|attr|exc|obj):`~?([^`]+)`")
CODE_BLOCK = re.compile(r"^(\s*)\.\. code-block::\s*(\w*)\s*$")
LIST_ITEM = re.compile(r"\s*([*-]|\d+\.)\s")


def _role(match: re.Match[str]) -> str:
    kind, target = match.groups()
    if match.group(0).split("`", 1)[1].startswith("~"):
        target = target.rsplit(".", 1)[-1]
    target = target.lstrip(".")
    if kind in ("func", "meth") and not target.endswith(")"):
        target += "()"
    return f"`{target}`"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _indented_block(lines: list[str], start: int, base: int) -> tuple[list[str], int]:
    """The lines from ``start`` indented deeper than ``base`` (blank lines inside kept)."""
    end = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > base):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    block = lines[start:end]
    depth = min((_indent(line) for line in block if line.strip()), default=0)
    return [line[depth:] for line in block], end


def to_markdown(text: str) -> str:
    """One docstring's text, from reST-flavoured prose to Markdown."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        pad = line[: _indent(line)]
        code = CODE_BLOCK.match(line)
        if stripped.startswith(">>>"):
            start = i
            while i < len(lines) and lines[i].strip():
                i += 1
            out += [f"{pad}```pycon", *(raw[len(pad) :] for raw in lines[start:i])]
            out.append(f"{pad}```")
            continue
        if code or (stripped.endswith("::") and not stripped.startswith("..")):
            if code:
                language = code.group(2) or "text"
            else:
                language = "text"
                head = line.rstrip()[:-1]  # "Layout::" reads "Layout:"
                out.append(ROLE.sub(_role, head))
            i += 1
            while i < len(lines) and not lines[i].strip():
                i += 1
            block, i = _indented_block(lines, i, _indent(line))
            out += ["", f"{pad}```{language}", *(pad + b for b in block), f"{pad}```"]
            continue
        if _is_term(lines, i):
            out.append(ROLE.sub(_role, line))
            block, i = _indented_block(lines, i + 1, _indent(line))
            out.append(f"{pad}:   {ROLE.sub(_role, block[0])}")
            out += [f"{pad}    {ROLE.sub(_role, b)}" if b else "" for b in block[1:]]
            continue
        out.append(ROLE.sub(_role, line))
        i += 1
    return "\n".join(out)


def _is_term(lines: list[str], i: int) -> bool:
    """Whether line ``i`` is the term of a reST definition list item."""
    line = lines[i]
    if i + 1 >= len(lines) or not line.strip() or (i and lines[i - 1].strip()):
        return False
    following = lines[i + 1]
    return (
        bool(following.strip())
        and _indent(following) > _indent(line)
        and not LIST_ITEM.match(line)
        and not line.rstrip().endswith(":")
    )


def _comment_docstring(attr: griffe.Attribute) -> str | None:
    """The ``#:`` comment lines right above an attribute, as its docstring."""
    filepath = attr.filepath
    if (
        attr.lineno is None
        or not isinstance(filepath, Path)
        or filepath not in attr.lines_collection
    ):
        return None
    lines = attr.lines_collection[filepath]
    found: list[str] = []
    index = attr.lineno - 2
    while index >= 0 and lines[index].lstrip().startswith("#:"):
        found.insert(0, lines[index].lstrip()[2:].strip())
        index -= 1
    return "\n".join(found) or None


class RestToMarkdown(griffe.Extension):
    """Rewrite every docstring griffe loads (see the module docstring)."""

    def on_instance(
        self, *, node: ast.AST | griffe.ObjectNode, obj: griffe.Object, **_: Any
    ) -> None:
        if obj.docstring is None and isinstance(obj, griffe.Attribute):
            text = _comment_docstring(obj)
            if text:
                obj.docstring = griffe.Docstring(text, lineno=obj.lineno, parent=obj)
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)
