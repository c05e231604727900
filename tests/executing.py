"""Helpers for tests that run commands through the executor on a real workspace: the one way
to apply commands (``run``), and builders for what they send and expect."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from codingagent.execute import TurnOutcome, execute
from codingagent.protocol.commands import Command, EditFile, Replace, ReplaceBlock
from codingagent.protocol.parser import parse
from codingagent.sandbox.shell import Shell
from codingagent.state import CommandResult
from codingagent.workspace import Workspace

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")

TEN = "".join(f"line {i}\n" for i in range(1, 11))  # a ten-line file

STALE = (
    "warning: 'a.txt' changed since you last saw it, so these line numbers may be stale; "
    "READ_FILE it and check"
)


def run(
    ws: Workspace,
    *commands: Command,
    shell: Shell | None = None,
    shown: dict[str, str] | None = None,
) -> TurnOutcome:
    return execute(commands, ws, shell or Shell(timeout=10), shown=shown)


def run_reply(ws: Workspace, reply: str) -> TurnOutcome:
    """Parse ``reply`` and run its commands, as one turn's execution does."""
    return run(ws, *parse(reply))


def headlines(outcome: TurnOutcome) -> list[str]:
    return [r.headline for r in outcome.results]


def only(outcome: TurnOutcome) -> CommandResult:
    (result,) = outcome.results
    return result


def edit(path: str, start: int, end: int, content: str, line: int = 1) -> EditFile:
    return EditFile(line=line, path=path, start_line=start, end_line=end, content=content)


def replace(path: str, *blocks: tuple[str, str]) -> Replace:
    """A REPLACE of ``(search, replace)`` blocks, at the reply lines a real reply gives them."""
    return Replace(
        line=1,
        path=path,
        blocks=tuple(
            ReplaceBlock(line=2 + 4 * i, search=s, replace=r) for i, (s, r) in enumerate(blocks)
        ),
    )


def put(ws: Workspace, rel: str, data: str | bytes) -> Path:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()
