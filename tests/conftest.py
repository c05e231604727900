"""Fixtures shared by the test files."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import sampling
from hypothesis import settings

from codingagent.workspace import Workspace


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C behaves as in a terminal even when pytest was started with SIGINT ignored (as
    some CI runners start it): an ignored signal stays ignored in every process a test
    starts, so the agent under test would never see its Ctrl-C. A handler (unlike SIG_IGN)
    is reset to the default by ``exec``, so the processes the tests start get Python's
    KeyboardInterrupt again."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if "not slow" in (config.getoption("markexpr") or ""):  # the fast tier: fewer examples
        sampling.fast = True
        settings.register_profile("fast", max_examples=sampling.FAST_DEFAULT)
        settings.load_profile("fast")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that drives a real browser (any test taking the ``browser`` fixture) is slow: a
    Chromium per module and a page load per test are most of the fast tier's time otherwise."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


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
