"""No two modules of the package import each other in a circle.

The graph is read from the source with :mod:`ast`: an edge for every
``import dra_metadata.x``, ``from .x import y`` and ``from . import x`` (to the
submodule when ``y`` or ``x`` is one, else to the module or package named).
Two graphs are checked: the imports that run when a module loads (its top level
and class bodies), and every import: those plus the ones deferred into functions
and those under ``if TYPE_CHECKING:``, which break no load but still tie two
modules into one for whoever reads or changes them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = "dra_metadata"

#: Circles allowed to stay; each circle found must lie within one of these. None: the
#: data types sit below the analyses that read them (_errors at the bottom, the model,
#: then the inventory, then the topology and the live check), and the watch backends
#: below the registry that picks one.
KNOWN_CIRCLES: tuple[frozenset[str], ...] = ()


def modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, whether it is a package)."""
    found = {}
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def _statements(body: Iterable[ast.stmt], deferred: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run: at load, or (``deferred``) at any time."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            if deferred:  # for type checkers only: never run, but a tie all the same
                yield from _statements(node.body, deferred)
            yield from _statements(node.orelse, deferred)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if deferred:
                yield from _statements(node.body, deferred)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(node, field, ()):
                    if isinstance(child, ast.ExceptHandler | ast.match_case):
                        yield from _statements(child.body, deferred)
                    else:
                        yield from _statements([child], deferred)


def imports_of(name: str, known: dict[str, tuple[Path, bool]], deferred: bool) -> set[str]:
    """The package's modules ``name`` imports (itself left out)."""
    path, package = known[name]
    here = name.split(".") if package else name.split(".")[:-1]
    found: set[str] = set()
    for node in _statements(ast.parse(path.read_text(encoding="utf-8")).body, deferred):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        if node.level:
            anchor = here[: len(here) - node.level + 1]
            target = ".".join([*anchor, *([node.module] if node.module else [])])
        else:
            target = node.module or ""
        for alias in node.names:
            submodule = f"{target}.{alias.name}"
            found.add(submodule if submodule in known else target)
    return {module for module in found if module in known and module != name}


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = {stack.pop()}
            while node not in group:
                group.add(stack.pop())
            if len(group) > 1:
                found.append(frozenset(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def unknown_circles(deferred: bool) -> list[list[str]]:
    """The circles of the graph that lie within no known circle, each sorted."""
    known = modules()
    graph = {name: imports_of(name, known, deferred) for name in known}
    return [
        sorted(group)
        for group in circles(graph)
        if not any(group <= allowed for allowed in KNOWN_CIRCLES)
    ]


@pytest.mark.parametrize("deferred", [False, True], ids=["at-load", "every-import"])
def test_no_modules_import_each_other_in_a_circle(deferred: bool) -> None:
    """Apart from the known circles, no module reaches itself through the package's imports."""
    assert unknown_circles(deferred) == []


def test_the_graph_sees_every_form_of_import(tmp_path: Path) -> None:
    """The reader finds ``import``, ``from .x import``, ``from . import`` and deferred forms."""
    known = {
        "p": (tmp_path / "p" / "__init__.py", True),
        "p.a": (tmp_path / "p" / "a.py", False),
        "p.b": (tmp_path / "p" / "b.py", False),
        "p.c": (tmp_path / "p" / "c.py", False),
        "p.d": (tmp_path / "p" / "d.py", False),
        "p.e": (tmp_path / "p" / "e.py", False),
    }
    (tmp_path / "p").mkdir()
    known["p.a"][0].write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import b\n"
        "from .c import name\n"
        "import p.d\n"
        "if TYPE_CHECKING:\n    from . import e\n"
        "def later():\n    from . import e\n"
        "class Kind:\n    from . import p as q\n"
    )
    assert imports_of("p.a", known, deferred=False) == {"p", "p.b", "p.c", "p.d"}  # no e
    assert imports_of("p.a", known, deferred=True) == {"p", "p.b", "p.c", "p.d", "p.e"}
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


WATCH_BACKENDS = "dra_metadata._watch._backends"


def test_only_the_backend_registry_imports_a_backend() -> None:
    """The watch backends are imported by the registry alone (deferred), and import only base."""
    known = modules()
    backends = {f"{WATCH_BACKENDS}.{name}" for name in ("inotify", "polling", "watchfiles")}
    assert backends <= known.keys()
    importers = {
        name
        for name in known
        if name not in backends and imports_of(name, known, deferred=True) & backends
    }
    assert importers == {WATCH_BACKENDS}
    assert imports_of(WATCH_BACKENDS, known, deferred=False) & backends == set()
    for backend in sorted(backends):
        inside = {m for m in imports_of(backend, known, deferred=True) if m.startswith(PACKAGE)}
        assert inside == {f"{WATCH_BACKENDS}.base"}, backend


#: The package's layers, bottom first: a module imports only from its own layer and
#: those below (every import counted, deferred and type-checking ones too). The wire
#: values sit under the standard's meaning, which sits under the wire objects; the
#: data a pod was given (the walk, the inventory) under nothing that analyses it, and
#: the analyses take data (mounted devices), never the inventory. A new module gets a
#: place here, and the drawing in docs/development.md follows this table.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundations",
        (
            "_errors",
            "_text",
            "_envtext",
            "_versions",
            "_duration",
            "_log",
            "_fence",
            "_field_error",
            "_formats",
            "_gotime",
            "_goscan",
            "_paths",
            "_mounts",
            "_values",
            "_variables",
        ),
    ),
    ("standard meaning", ("_standard",)),
    (
        "wire objects",
        (
            "_model",
            "_mounted",
            "_nearby",
            "_gojson",
            "_encode",
            "_validate_models",
            "_validate",
            "_schema",
        ),
    ),
    ("reading", ("_read", "_safedir", "_select", "_claims", "_lint")),
    ("device analyses", ("_topology",)),
    ("the pod's inventory", ("_inventory",)),
    ("inventory readers", ("_profiles", "_env", "_live")),
    ("watching", ("_watch",)),
    ("publishing", ("_publish",)),
    ("the package's face", ("",)),
    ("the testing kit", ("_testing_tree", "_testing_mounted", "testing", "pytest_plugin")),
    ("the command line", ("_cli", "__main__")),
)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module`` (a package's submodules share its layer)."""
    local = module.removeprefix(PACKAGE).removeprefix(".")
    top = local.split(".")[0]
    for index, (_, names) in enumerate(LAYERS):
        if top in names:
            return index
    raise AssertionError(f"{module} has no layer: give it a place in LAYERS")


def test_every_import_goes_down_the_layers() -> None:
    """No module imports from a layer above its own: the house has floors, not only no circle."""
    known = modules()
    upward = [
        f"{name} ({LAYERS[layer_of(name)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for name in sorted(known)
        for target in sorted(imports_of(name, known, deferred=True))
        if layer_of(target) > layer_of(name)
    ]
    assert upward == []


def test_the_layers_catch_an_upward_import() -> None:
    """The check can fail: the standard's meaning importing the model would be caught."""
    assert layer_of(f"{PACKAGE}._standard") < layer_of(f"{PACKAGE}._model")
    assert layer_of(f"{PACKAGE}._topology") < layer_of(f"{PACKAGE}._inventory")
    assert layer_of(f"{PACKAGE}._watch._backends.inotify") == layer_of(f"{PACKAGE}._watch")
    with pytest.raises(AssertionError, match="no layer"):
        layer_of(f"{PACKAGE}._nowhere")


def test_the_docs_draw_the_layers_the_test_checks() -> None:
    """docs/development.md's table of floors is :data:`LAYERS`, top first."""
    text = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    table = text.split("## The house", 1)[1].split("\n\n")[2]
    drawn = []
    for line in table.splitlines()[2:]:
        floor, modules_cell = line.split("|")[1:3]
        names = tuple(
            "" if name == PACKAGE else name
            for name in modules_cell.replace("`", "").replace(",", " ").split()
        )
        drawn.append((floor.strip(), frozenset(names)))
    assert drawn == [(floor, frozenset(names)) for floor, names in reversed(LAYERS)]


def deferred_imports() -> Iterator[tuple[Path, ast.Import | ast.ImportFrom, list[str]]]:
    """Every import made inside a function of the package, with its file's lines."""
    for path, _ in modules().values():
        lines = path.read_text(encoding="utf-8").splitlines()

        def walk(node: ast.AST, inside: bool) -> Iterator[ast.Import | ast.ImportFrom]:
            for child in ast.iter_child_nodes(node):
                if inside and isinstance(child, ast.Import | ast.ImportFrom):
                    yield child
                function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                yield from walk(child, inside or function)

        for found in walk(ast.parse("\n".join(lines)), False):
            yield path, found, lines


def _reason(line: str) -> bool:
    """Whether ``line`` holds a comment that says something (a tool's pragma does not)."""
    comment = line.partition("#")[2].strip()
    return bool(comment) and not comment.startswith(("noqa", "type:", "fmt:", "pragma"))


def says_why(node: ast.Import | ast.ImportFrom, lines: list[str]) -> bool:
    """Whether a comment on the import's lines, or above its run of imports, gives a reason."""
    if any(_reason(lines[i]) for i in range(node.lineno - 1, node.end_lineno or node.lineno)):
        return True
    above = node.lineno - 2
    while above >= 0 and lines[above].strip().startswith(("import ", "from ")):
        if _reason(lines[above]):
            return True
        above -= 1
    return above >= 0 and lines[above].strip().startswith("#") and _reason(lines[above])


def test_every_import_inside_a_function_says_why() -> None:
    """An import is deferred only to keep a module off a path that does not need it, and
    says which (a comment on its line or above its run of imports)."""
    silent = [
        f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}"
        for path, node, lines in deferred_imports()
        if not says_why(node, lines)
    ]
    assert silent == []


def test_a_silent_deferred_import_is_caught() -> None:
    """The check can fail: a bare import in a function says nothing."""
    source = (
        "def f():\n    import json\n\n\n"
        "def g():\n    # json: only g needs it\n    import json\n\n\n"
        "def h():\n    import json  # noqa: PLC0415\n"
    )
    tree = ast.parse(source)
    lines = source.splitlines()
    first, second, third = (n for n in ast.walk(tree) if isinstance(n, ast.Import))
    assert not says_why(first, lines)
    assert says_why(second, lines)
    assert not says_why(third, lines)
