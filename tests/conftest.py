"""Fixtures shared by the test files."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingagent.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A workspace with an agent folder (``outbox/``) inside it, fenced off."""
    root = tmp_path / "ws"
    (root / "outbox").mkdir(parents=True)
    return Workspace(root, protected=[root / "outbox"])


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """``ws`` (the workspace) next to ``ws2`` and ``outside``, which must stay untouched."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "ws2").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    return ws, outside


@pytest.fixture(scope="module")
def module_ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """One workspace for all examples of a module's hypothesis tests (function-scoped
    fixtures are not reset between examples)."""
    return Workspace(tmp_path_factory.mktemp("module"))
