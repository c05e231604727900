"""The test command a project declares in its own files: the check ``start`` offers when the
user set none and the instruction files name none (docs/prompts.md, "The check").

Read, in this order, the first that declares one wins:

- pytest's configuration: ``[tool.pytest.ini_options]`` (or ``[tool.pytest]``) in
  ``pyproject.toml``, ``[tool:pytest]`` in ``setup.cfg``, ``[pytest]`` in ``tox.ini``, a
  ``pytest.ini`` (pytest reads one even when it is empty): ``pytest -q``;
- ``scripts.test`` in ``package.json`` (not npm's placeholder that only fails): ``npm test``;
- a ``Cargo.toml``: ``cargo test``; a ``go.mod``: ``go test ./...``;
- a ``test`` target in the ``Makefile`` (``GNUmakefile``, ``makefile``): ``make test``.

Files are read as the workspace reads them (a link out of it is not followed); one that does
not parse declares nothing. Nothing here runs the command: ``start`` offers it, and runs it only
once the user confirms.
"""

from __future__ import annotations

import configparser
import json
import re
import tomllib
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from codingagent.workspace.pathguard import PathRejected

if TYPE_CHECKING:
    from codingagent.workspace import Workspace

READ_LIMIT = 1 << 20  # bytes of a project file read, at most
PYTEST = "pytest -q"
NPM_PLACEHOLDER = "no test specified"  # `npm init`'s scripts.test, which only fails
_MAKE_TARGET = re.compile(r"^test\s*:(?!=)", re.MULTILINE)  # `test:`, not `test := value`


class Declared(NamedTuple):
    """A test command a project declares, and where: ``source`` names the file and part."""

    source: str
    command: str


def declared_check(ws: Workspace) -> Declared | None:
    """The test command the workspace's project files declare, the first in the order of
    this module's list; None when none does."""
    for name, read in _READERS:
        text = _text(ws, name)
        if text is None:
            continue
        found = read(text)
        if found is not None:
            return Declared(f"{name} ({found[0]})" if found[0] else name, found[1])
    return None


Found = tuple[str, str] | None  # (the part of the file, the command)


def _pyproject(text: str) -> Found:
    try:
        tool = tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return None
    pytest = tool.get("pytest") if isinstance(tool, dict) else None
    if not isinstance(pytest, dict):
        return None
    part = "[tool.pytest.ini_options]" if "ini_options" in pytest else "[tool.pytest]"
    return part, PYTEST


def _ini_section(section: str) -> Callable[[str], Found]:
    def read(text: str) -> Found:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(text)
        except configparser.Error:
            return None
        return (f"[{section}]", PYTEST) if parser.has_section(section) else None

    return read


def _pytest_ini(text: str) -> Found:
    return "", PYTEST


def _package_json(text: str) -> Found:
    try:
        scripts = json.loads(text).get("scripts")
    except (ValueError, AttributeError):
        return None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(test, str) or not test.strip() or NPM_PLACEHOLDER in test:
        return None
    return "scripts.test", "npm test"


def _makefile(text: str) -> Found:
    return ("the test target", "make test") if _MAKE_TARGET.search(text) else None


_READERS: tuple[tuple[str, Callable[[str], Found]], ...] = (
    ("pyproject.toml", _pyproject),
    ("setup.cfg", _ini_section("tool:pytest")),
    ("tox.ini", _ini_section("pytest")),
    ("pytest.ini", _pytest_ini),
    ("package.json", _package_json),
    ("Cargo.toml", lambda text: ("", "cargo test")),
    ("go.mod", lambda text: ("", "go test ./...")),
    *((name, _makefile) for name in ("GNUmakefile", "makefile", "Makefile")),
)


def _text(ws: Workspace, name: str) -> str | None:
    """The text of the project file ``name`` at the workspace's top, None when it is missing
    or cannot be read."""
    try:
        return ws.read_bytes(name, limit=READ_LIMIT).decode("utf-8", errors="replace")
    except (OSError, PathRejected):
        return None
