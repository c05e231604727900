"""Run a reply's commands in order and say what happened to each.

Each command goes to its handler through one exhaustive ``match``: a command class without a
handler is a type error.  A handler returns a :class:`Success` or raises
:class:`CommandFailed` (an error the LLM can fix); the one ``try`` in :func:`_run_one` turns
either, a forbidden path (``REJECTED: ...``) and an OS error into the command's result.
A fault of the machine (a full disk, no permission: :mod:`codingagent.faults`) is no result
the LLM could act on: it propagates, naming the file, and stops the turn.  Anything else is a
bug and propagates.

An ``[ASK]`` ends the turn: the commands after it are not run, each with a result saying so.

Memory across the commands of one reply (docs/protocol.md §5.1, §5.2): EDIT_FILE runs, the
digests of what the LLM has seen, and the Python syntax check after the reply's last write to a
``.py`` file.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import assert_never

from codingagent.execute.context import CommandFailed, Success, Turn, TurnOutcome, noted
from codingagent.execute.conversation import ask, done, message, parse_error
from codingagent.execute.edit_file import edit_file
from codingagent.execute.patch import patch
from codingagent.execute.placeholders import syntax_warning
from codingagent.execute.replace import replace
from codingagent.execute.run_command import run_command
from codingagent.execute.search import search
from codingagent.execute.whole_files import create_file, delete_file, read_file
from codingagent.faults import is_fault
from codingagent.fsio import naming
from codingagent.protocol import commands as kinds
from codingagent.sandbox.shell import Shell
from codingagent.state import CommandResult
from codingagent.workspace import Keeper, PathRejected, Workspace
from codingagent.workspace.snapshot import CommandWatch


def execute(
    commands: Sequence[kinds.Command],
    workspace: Workspace,
    shell: Shell,
    on_result: Callable[[CommandResult], None] | None = None,
    preceding: Sequence[CommandResult] = (),
    shown: Mapping[str, str] | None = None,
    session_id: str = "",
    check: Callable[[TurnOutcome], CommandResult] | None = None,
    steps: Mapping[int, Callable[[Turn], Success]] | None = None,
    keeper: Keeper | None = None,
    watch: CommandWatch | None = None,
) -> TurnOutcome:
    """Run ``commands`` in order; ``on_result`` sees each result as soon as it exists.

    ``preceding`` are results the turn already has (a problem with the reply itself); they
    come first and count as failures for DONE. ``shown`` maps a workspace path to the sha256
    of the content the LLM last saw; with it, an EDIT_FILE run on a file that changed since
    warns that its line numbers may be stale. ``session_id`` names whose secrets are kept
    from commands and put back into masked text (:mod:`codingagent.secrecy`). ``check``: the
    user's check command's result after the commands so far; DONE is refused while it fails.
    ``steps``: what some commands (by index) do instead of their handlers: the file commands
    of a reviewed reply write the files as the user decided (docs/review.md).

    What keeps the turn whole is lent here, never set on the workspace from outside:
    ``keeper`` (the turn's journal) is handed each file's pre-image before the file changes,
    and ``watch`` runs around each RUN_COMMAND to keep what it changes; without them nothing
    is kept (a review's preview).
    """
    steps = steps or {}
    with workspace.kept(keeper):
        targets = [_target(command, workspace) for command in commands]
        # Up to the first RUN_COMMAND (which may change what a path names), the files the reply
        # writes are known: their pre-images are recorded in one go, before the first command.
        ahead = next(
            (n for n, c in enumerate(commands) if isinstance(c, kinds.RunCommand)), len(commands)
        )
        workspace.will_write(
            path for n, path in enumerate(targets[:ahead]) if path is not None and n not in steps
        )
        turn = Turn(
            workspace,
            shell,
            TurnOutcome(results=list(preceding), shown=dict(shown or {})),
            track_shown=shown is not None,
            targets=targets,
            last_writes={path: i for i, path in enumerate(targets) if path is not None},
            session_id=session_id,
            check=check,
            watch=watch,
        )
        for index, command in enumerate(commands):
            turn.index = index
            turn.remaining = len(commands) - index - 1
            started = time.perf_counter()
            success, summary, output = _run_one(command, turn, steps.get(index))
            result = CommandResult(
                command=command.name,
                success=success,
                summary=summary,
                output=output,
                duration_ms=(time.perf_counter() - started) * 1000,
            )
            turn.outcome.results.append(result)
            if on_result is not None:
                on_result(result)
            if turn.outcome.question is not None:  # an ASK ends the turn
                _not_run(commands[index + 1 :], command.line, turn.outcome, on_result)
                break
        return turn.outcome


def _not_run(
    later: Sequence[kinds.Command],
    line: int,
    outcome: TurnOutcome,
    on_result: Callable[[CommandResult], None] | None,
) -> None:
    """A result for each command after an [ASK] on reply line ``line``: not run."""
    for command in later:
        skipped = CommandResult(
            command=command.name,
            success=False,
            summary=f"Not run: the turn ended at the [ASK] on reply line {line}; "
            "send it again once you have the answer",
        )
        outcome.results.append(skipped)
        if on_result is not None:
            on_result(skipped)


def _target(command: kinds.Command, workspace: Workspace) -> str | None:
    """The real relative path a file-writing command names, or None."""
    if not command.writes or command.target is None:
        return None
    try:
        return workspace.relpath(command.target)
    except (PathRejected, OSError):
        return None


def _run_one(
    command: kinds.Command, turn: Turn, step: Callable[[Turn], Success] | None = None
) -> tuple[bool, str, str | None]:
    """Whether ``command`` worked (or its ``step``, which stands for it), its summary and its
    output."""
    target = turn.targets[turn.index]
    if target is not None and not isinstance(command, kinds.EditFile):
        turn.runs.pop(target, None)  # another command writes the file: the run is over
    try:
        success, (summary, output) = True, step(turn) if step else _handle(command, turn)
    except CommandFailed as failed:
        success, summary, output = False, failed.summary, failed.output
    except PathRejected as e:
        return False, f"REJECTED: {e}", None
    except OSError as e:
        if is_fault(e):
            naming(e, turn.workspace.root / (command.target or ""))
            raise
        path = command.target or e.filename
        reason = e.strerror or str(e)
        return False, f"{reason} ('{path}')" if path else reason, None
    last = target is not None and turn.last_writes[target] == turn.index
    if step is None and last and target is not None and target.endswith(".py"):
        summary = noted(summary, syntax_warning(target, turn))
    return success, summary, output


def _handle(command: kinds.Command, turn: Turn) -> Success:
    match command:
        case kinds.CreateFile():
            return create_file(command, turn)
        case kinds.EditFile():
            return edit_file(command, turn)
        case kinds.Replace():
            return replace(command, turn)
        case kinds.Patch():
            return patch(command, turn)
        case kinds.DeleteFile():
            return delete_file(command, turn)
        case kinds.ReadFile():
            return read_file(command, turn)
        case kinds.Search():
            return search(command, turn)
        case kinds.RunCommand():
            return run_command(command, turn)
        case kinds.Message():
            return message(command, turn)
        case kinds.Ask():
            return ask(command, turn)
        case kinds.Done():
            return done(command, turn)
        case kinds.ParseError():
            parse_error(command)
        case _:
            assert_never(command)
