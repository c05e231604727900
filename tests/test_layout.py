"""The house rules of the package's layout (docs/architecture.md), checked on the source itself:
the wings import downward only (the import-linter contracts in pyproject.toml), only the
sandbox wing names a backend, no module is over 500 lines, no two modules share a name, and
the top level holds only the base."""

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
BASE = {"fsio", "faults", "settings", "state"}


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
