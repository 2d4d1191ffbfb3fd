"""The reference says everything: every public name works with Python's own tools.

A user (or an IDE, or the API reference build) meets the package through ``help()``,
``inspect.signature()`` and ``typing.get_type_hints()``; each must work on every name
of ``__all__``. Every type a public signature names is itself public, every field of a
public class has a docstring (the API reference shows only documented members), and no
public docstring sends the reader to a private module.
"""

from __future__ import annotations

import ast
import builtins
import collections.abc
import enum
import inspect
import os
import pydoc
import re
import sys
import textwrap
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import msgspec
import pytest

import dra_metadata as dm
import dra_metadata.testing as kit

REPO = Path(__file__).resolve().parents[1]
#: Objects of these modules may appear in public signatures without being ours to export.
FOREIGN: tuple[ModuleType, ...] = (builtins, typing, collections.abc, os, msgspec, enum)

PUBLIC = sorted(dm.__all__)
CLASSES = [name for name in PUBLIC if inspect.isclass(getattr(dm, name))]
CALLABLES = [
    name
    for name in PUBLIC
    if inspect.isclass(getattr(dm, name)) or inspect.isfunction(getattr(dm, name))
]


def members(cls: type) -> Iterator[tuple[str, Callable[..., object]]]:
    """The public methods and property getters a class defines itself."""
    for name, value in vars(cls).items():
        if name.startswith("_") and name not in ("__init__", "__new__"):
            continue
        if isinstance(value, property):
            value = value.fget
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if inspect.isfunction(value):
            yield name, value


@pytest.mark.parametrize("name", PUBLIC)
def test_help_renders(name: str) -> None:
    """``help(dm.NAME)`` renders (plain values render as the package's help)."""
    value = getattr(dm, name)
    if isinstance(value, str | int | float | tuple | frozenset | dict):
        value = dm  # help("text") looks "text" up as a topic; the constant is in help(dm)
    assert pydoc.plain(pydoc.render_doc(value))


def test_help_of_the_package_names_everything() -> None:
    """``help(dra_metadata)`` renders and lists the classes and functions of ``__all__``."""
    text = pydoc.plain(pydoc.render_doc(dm))
    for name in CALLABLES:
        assert name in text, name


@pytest.mark.parametrize("name", CALLABLES)
def test_signature_and_type_hints(name: str) -> None:
    """``inspect.signature()`` and ``typing.get_type_hints()`` work on every class and
    function; on a class, the hints cover its fields and its own methods have signatures."""
    value = getattr(dm, name)
    inspect.signature(value)
    hints = typing.get_type_hints(value)
    if inspect.isclass(value):
        for field in getattr(value, "__struct_fields__", ()):
            assert field in hints, f"{name}.{field}"
        for method, function in members(value):
            assert inspect.signature(function), f"{name}.{method}"


def _annotation_names(text: str) -> Iterator[str]:
    """The root names an annotation's text refers to (``a.B[c | D]`` -> a, c, D)."""
    for node in ast.walk(ast.parse(text, mode="eval")):
        if isinstance(node, ast.Name):
            yield node.id


def _annotations(value: object) -> Iterator[tuple[str, str, str]]:
    """(where, module, annotation text) of every public annotation of a class or function."""
    if inspect.isclass(value):
        for klass in value.__mro__:
            if not klass.__module__.startswith("dra_metadata"):
                continue
            for field, text in vars(klass).get("__annotations__", {}).items():
                if not field.startswith("_"):
                    yield f"{value.__name__}.{field}", klass.__module__, text
            for method, function in members(klass):
                for param, text in function.__annotations__.items():
                    yield f"{value.__name__}.{method}({param})", klass.__module__, text
    else:
        assert inspect.isfunction(value)
        for param, text in value.__annotations__.items():
            yield f"{value.__name__}({param})", value.__module__, text


def test_every_type_a_public_signature_names_is_public() -> None:
    """A type named in a public annotation is exported under that name, by the package or
    its testing kit (or is foreign)."""
    unexported: set[str] = set()
    for name in CALLABLES:
        for where, module, text in _annotations(getattr(dm, name)):
            if not isinstance(text, str):
                continue  # a generated method (a NamedTuple's __new__): its fields are checked
            scope = vars(sys.modules[module])
            for ident in _annotation_names(text):
                if ident not in scope:
                    continue  # evaluated lazily (a TYPE_CHECKING import): checked by name
                found = scope[ident]
                if isinstance(found, typing.TypeVar | ModuleType):
                    continue
                if any(getattr(module_, ident, None) is found for module_ in FOREIGN):
                    continue
                if getattr(dm, ident, None) is not found and not (
                    ident in kit.__all__ and getattr(kit, ident) is found
                ):
                    unexported.add(f"{ident} (in {where})")
    assert not unexported, sorted(unexported)


def _field_docs(cls: type) -> Iterator[tuple[str, bool]]:
    """(field, documented) for each public field a class (or a base of ours) declares.

    A field is documented by a string literal right after it or by ``#:`` comment lines
    right above it, the two forms the API reference reads.
    """
    for klass in cls.__mro__:
        if not klass.__module__.startswith("dra_metadata"):
            continue
        source = textwrap.dedent(inspect.getsource(klass))
        lines = source.splitlines()
        node = ast.parse(source).body[0]
        assert isinstance(node, ast.ClassDef)
        body = node.body
        for index, statement in enumerate(body):
            if not isinstance(statement, ast.AnnAssign):
                continue
            if not isinstance(statement.target, ast.Name) or statement.target.id.startswith("_"):
                continue
            if "ClassVar" in ast.unparse(statement.annotation):
                continue
            after = body[index + 1] if index + 1 < len(body) else None
            literal = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
            above = lines[statement.lineno - 2].strip() if statement.lineno >= 2 else ""
            yield statement.target.id, literal or above.startswith("#:")


@pytest.mark.parametrize("name", CLASSES)
def test_every_public_field_has_a_docstring(name: str) -> None:
    """The API reference lists a field only if it has a docstring: every one has."""
    cls = getattr(dm, name)
    if issubclass(cls, enum.Enum):
        return  # members are documented by the class's table
    missing = [field for field, documented in _field_docs(cls) if not documented]
    assert not missing, f"{name}: {missing}"


#: A private module named where a user would follow it: ``dra_metadata._x``, ``._x``,
#: ``_x.py`` or ``:mod:`` of a private module.
PRIVATE_MODULE = re.compile(r"dra_metadata\._[a-z]|:mod:`~?\.?_[a-z]|\b_[a-z_]+\.py\b")


def test_no_public_docstring_names_a_private_module() -> None:
    """Public docstrings send users to public names and pages, never to private modules."""
    offenders = []
    objects: list[tuple[str, object]] = [("dra_metadata", dm)]
    for name in CALLABLES:
        value = getattr(dm, name)
        objects.append((name, value))
        if inspect.isclass(value):
            objects += [(f"{name}.{method}", function) for method, function in members(value)]
    for where, value in objects:
        doc = inspect.getdoc(value) or ""
        if PRIVATE_MODULE.search(doc):
            offenders.append(f"{where}: {PRIVATE_MODULE.search(doc).group(0)}")  # type: ignore[union-attr]
    assert not offenders, offenders


def test_api_reference_lists_every_public_name() -> None:
    """Each name of ``__all__`` has its ``::: dra_metadata.NAME`` in docs/api/."""
    pages = "\n".join(page.read_text() for page in (REPO / "docs" / "api").glob("*.md"))
    listed = set(re.findall(r"^::: dra_metadata\.(\w+)", pages, re.MULTILINE))
    assert set(PUBLIC) - {"__version__"} <= listed, sorted(set(PUBLIC) - listed)
