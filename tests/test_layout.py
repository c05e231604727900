"""The house rules of the package's layout (docs/architecture.md), checked on the source itself:
the wings import downward only (the import-linter contracts in pyproject.toml), no module
imports one that imports it back (directly or around a longer cycle), only the sandbox wing
names a backend, no module is over 500 lines, no folder holds more than 14 modules, no two
modules share a name, and the top level holds only the base."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections import Counter
from importlib.metadata import entry_points
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "codingagent"
MODULES = sorted(PACKAGE.rglob("*.py"))
BASE = {"fsio", "faults", "folders", "settings", "state"}


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def test_the_import_contracts_hold():
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert linter is not None, "import-linter is a test dependency: pip install -e '.[test]'"
    done = subprocess.run(
        [linter, "--no-cache"], cwd=PACKAGE.parent, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 broken" in done.stdout


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Each module -> the package's modules it imports anywhere in its text (TYPE_CHECKING
    blocks and function bodies included: a cycle hidden there is still a cycle of meaning).
    ``from package import name`` names the module ``package.name`` when there is one."""
    names = {_module_name(p): p for p in MODULES}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in names else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {m for m in found if m in names and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_one_that_imports_it_back():
    assert _cycles(_imports()) == []


def test_the_cycle_check_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_folder_holds_more_than_14_modules():
    per_folder = Counter(_relative(p.parent) for p in MODULES if p.stem != "__init__")
    assert {folder: n for folder, n in per_folder.items() if n > 14} == {}


def test_only_the_sandbox_wing_names_a_backend():
    isolating = {e.name for e in entry_points(group="codingagent.sandboxes")} - {"none"}
    assert "bwrap" in isolating
    named = []
    for path in MODULES:
        if _relative(path).startswith("sandbox/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if node.value.strip().lower() in isolating:
                named.append(f"{_relative(path)}:{node.lineno} {node.value!r}")
    assert named == []


def test_no_module_is_over_500_lines():
    lines = {_relative(p): len(p.read_text(encoding="utf-8").splitlines()) for p in MODULES}
    assert {name: n for name, n in lines.items() if n > 500} == {}


def test_no_two_modules_share_a_name():
    names = Counter(p.stem for p in MODULES if p.stem not in {"__init__", "__main__"})
    assert [name for name, n in names.items() if n > 1] == []


def test_the_top_level_holds_only_the_base():
    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert top == BASE
    assert len(top) <= 6


@pytest.mark.parametrize("wing", sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py")))
def test_every_wing_says_what_it_owns_and_may_import(wing):
    doc = ast.get_docstring(ast.parse((PACKAGE / wing / "__init__.py").read_text()))
    assert doc is not None and "TODO" not in doc
    assert "import" in doc  # what it may import
