"""Apply one reply's commands, in order, and say what happened to each.

One handler per command class, looked up in a table.  Errors the LLM can fix become
``[FAILED]`` results (``REJECTED: ...`` for forbidden paths); anything else is a bug and
propagates.  All file access goes through :class:`Workspace`, all processes through
:class:`Shell`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from .commands import (
    Command,
    CommandResult,
    CreateFile,
    DeleteFile,
    Done,
    EditFile,
    Message,
    ParseError,
    ReadFile,
    RunCommand,
    plural,
)
from .shell import Shell
from .workspace import PathRejected, Workspace


@dataclass
class TurnOutcome:
    results: list[CommandResult] = field(default_factory=list)
    # Paths as the LLM wrote them, tidied to posix form; shown in the next outbox.
    read_requests: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # MESSAGE bodies, in order
    done: str | None = None  # the DONE summary, if the session is now complete
    changed: list[str] = field(default_factory=list)  # real relative paths written or deleted


class _Verdict(NamedTuple):
    success: bool
    summary: str
    output: str | None = None


@dataclass
class _Turn:
    workspace: Workspace
    shell: Shell
    outcome: TurnOutcome
    remaining: int = 0  # commands after the one running now

    def mark_changed(self, path: str) -> None:
        rel = self.workspace.relpath(path)
        if rel not in self.outcome.changed:
            self.outcome.changed.append(rel)


def execute(
    commands: Sequence[Command],
    workspace: Workspace,
    shell: Shell,
    on_result: Callable[[CommandResult], None] | None = None,
    preceding: Sequence[CommandResult] = (),
) -> TurnOutcome:
    """Run ``commands`` in order; ``on_result`` sees each result as soon as it exists.

    ``preceding`` are results the turn already has (a problem with the reply itself); they
    come first and count as failures for DONE.
    """
    turn = _Turn(workspace, shell, TurnOutcome(results=list(preceding)))
    for index, command in enumerate(commands):
        turn.remaining = len(commands) - index - 1
        started = time.perf_counter()
        verdict = _run_one(command, turn)
        result = CommandResult(
            command=command.name,
            success=verdict.success,
            summary=verdict.summary,
            output=verdict.output,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
        turn.outcome.results.append(result)
        if on_result is not None:
            on_result(result)
    return turn.outcome


def _run_one(command: Command, turn: _Turn) -> _Verdict:
    handler = _HANDLERS[type(command)]
    try:
        return handler(command, turn)
    except PathRejected as e:
        return _Verdict(False, f"REJECTED: {e}")
    except OSError as e:
        path = getattr(command, "path", None) or e.filename
        reason = e.strerror or str(e)
        return _Verdict(False, f"{reason} ('{path}')" if path else reason)


def _create_file(cmd: CreateFile, turn: _Turn) -> _Verdict:
    try:
        created = turn.workspace.write_text(cmd.path, cmd.content)
    except IsADirectoryError:
        return _Verdict(False, f"'{cmd.path}' is a directory")
    turn.mark_changed(cmd.path)
    return _Verdict(True, f"{'Created' if created else 'Overwrote'} '{cmd.path}'")


def _edit_file(cmd: EditFile, turn: _Turn) -> _Verdict:
    if turn.workspace.is_dir(cmd.path):
        return _Verdict(False, f"'{cmd.path}' is a directory")
    try:
        text = turn.workspace.read_bytes(cmd.path).decode("utf-8")
    except FileNotFoundError:
        return _Verdict(False, f"File '{cmd.path}' not found")
    except UnicodeDecodeError:
        return _Verdict(False, f"'{cmd.path}' is not a UTF-8 text file")
    lines = _split_lines(text)
    body = cmd.content.replace("\r\n", "\n")
    new = body.removesuffix("\n").split("\n") if body else []
    start, end = cmd.start_line, cmd.end_line
    verdict = _judge_edit(cmd.path, start, end, len(lines), len(new))
    if verdict.success:
        turn.workspace.write_text(cmd.path, "".join(_splice(lines, start, end, new)))
        turn.mark_changed(cmd.path)
    return verdict


def _judge_edit(path: str, start: int, end: int, n: int, added: int) -> _Verdict:
    """Whether ``start..end`` is a valid range of an ``n``-line file, and what the edit does."""
    if end == start - 1 and start == n + 1:
        return _Verdict(True, f"Appended {_count(added)} to '{path}'")
    if end == start - 1 and 1 <= start <= n:
        return _Verdict(True, f"Inserted {_count(added)} before line {start} of '{path}'")
    if 1 <= start <= end <= n:
        where = f"line {start}" if start == end else f"lines {start}-{end}"
        replaced = f"{_count(end - start + 1)} replaced by {added}"
        return _Verdict(True, f"Replaced {where} of '{path}' ({replaced})")
    return _Verdict(
        False, f"Invalid line range {start}-{end} for '{path}' (the file has {_count(n)})"
    )


def _delete_file(cmd: DeleteFile, turn: _Turn) -> _Verdict:
    try:
        turn.workspace.delete(cmd.path)
    except FileNotFoundError:
        return _Verdict(False, f"File '{cmd.path}' not found")
    except IsADirectoryError:
        return _Verdict(False, f"'{cmd.path}' is a directory")
    turn.mark_changed(cmd.path)
    return _Verdict(True, f"Deleted '{cmd.path}'")


def _read_file(cmd: ReadFile, turn: _Turn) -> _Verdict:
    if turn.workspace.is_dir(cmd.path):
        return _Verdict(False, f"'{cmd.path}' is a directory")
    if not turn.workspace.is_file(cmd.path):
        return _Verdict(False, f"File '{cmd.path}' not found")
    rel = PurePosixPath(cmd.path).as_posix()
    if rel not in turn.outcome.read_requests:
        turn.outcome.read_requests.append(rel)
    return _Verdict(True, f"'{cmd.path}' is shown under Requested File Contents")


def _run_command(cmd: RunCommand, turn: _Turn) -> _Verdict:
    shown = cmd.command.strip()
    if not shown:
        return _Verdict(False, "No command given")
    first, _, more = shown.partition("\n")
    shown = f"{first} ..." if more else first
    result = turn.shell.run(cmd.command, turn.workspace.root)
    output = result.output or "(no output)"
    if result.timed_out:
        return _Verdict(False, f"'{shown}' timed out after {turn.shell.timeout:g} s", output)
    ran = f"Ran '{shown}' (exit code {result.exit_code})"
    return _Verdict(result.exit_code == 0, ran, output)


def _message(cmd: Message, turn: _Turn) -> _Verdict:
    turn.outcome.messages.append(cmd.text)
    return _Verdict(True, "Shown to the user")


def _done(cmd: Done, turn: _Turn) -> _Verdict:
    # A session must not end on results the LLM has not seen yet: DONE comes last, after
    # commands that all worked.
    if turn.remaining:
        return _Verdict(
            False,
            f"Not accepted: {plural(turn.remaining, 'command')} came after [DONE]; "
            "send [DONE] alone, as the last command, once the work is finished",
        )
    failed = sum(not r.success for r in turn.outcome.results)
    if failed:
        return _Verdict(
            False,
            f"Not accepted: {failed} command(s) above failed; fix them, then send [DONE] again",
        )
    turn.outcome.done = cmd.summary
    return _Verdict(True, "Task marked complete")


def _parse_error(cmd: ParseError, turn: _Turn) -> _Verdict:
    return _Verdict(False, f"reply line {cmd.line}: {cmd.message}")


_HANDLERS: dict[type[Any], Callable[[Any, _Turn], _Verdict]] = {
    CreateFile: _create_file,
    EditFile: _edit_file,
    DeleteFile: _delete_file,
    ReadFile: _read_file,
    RunCommand: _run_command,
    Message: _message,
    Done: _done,
    ParseError: _parse_error,
}


def _split_lines(text: str) -> list[str]:
    """The file's lines with their endings; only ``\\n`` ends a line (``\\r\\n`` included).

    Not ``str.splitlines``: it also splits on form feeds and other rare separators, which
    would shift line numbers away from the ones the LLM saw.
    """
    lines = text.split("\n")
    last = lines.pop()
    return [f"{line}\n" for line in lines] + ([last] if last else [])


def _splice(lines: list[str], start: int, end: int, new: list[str]) -> list[str]:
    """Replace 1-based lines ``start..end`` (``end = start - 1``: insert) by ``new``.

    New lines take the file's newline style, taken from its first line ending.  A file that
    did not end with a newline still does not, whatever the edit did at its end.
    """
    eol = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    result = lines[: start - 1] + [line + eol for line in new] + lines[end:]
    if lines and not lines[-1].endswith("\n") and result:
        result = [line if line.endswith("\n") else line + eol for line in result]
        result[-1] = _strip_eol(result[-1])
    return result


def _strip_eol(line: str) -> str:
    return line[:-2] if line.endswith("\r\n") else line.removesuffix("\n")


def _count(n: int) -> str:
    return plural(n, "line")
