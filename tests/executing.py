"""Helpers for tests that run commands through the executor on a real workspace."""

from __future__ import annotations

from pathlib import Path

from codingagent.commands import Command, CommandResult, EditFile
from codingagent.execute import TurnOutcome, execute
from codingagent.shell import Shell
from codingagent.workspace import Workspace


def run(
    ws: Workspace,
    *commands: Command,
    shell: Shell | None = None,
    shown: dict[str, str] | None = None,
) -> TurnOutcome:
    return execute(commands, ws, shell or Shell(timeout=10), shown=shown)


def headlines(outcome: TurnOutcome) -> list[str]:
    return [r.headline for r in outcome.results]


def only(outcome: TurnOutcome) -> CommandResult:
    (result,) = outcome.results
    return result


def edit(path: str, start: int, end: int, content: str, line: int = 1) -> EditFile:
    return EditFile(line=line, path=path, start_line=start, end_line=end, content=content)


def put(ws: Workspace, rel: str, data: str | bytes) -> Path:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path
