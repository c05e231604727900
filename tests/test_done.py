"""MESSAGE, DONE and parse errors: DONE is accepted only last and after commands that all worked."""

from __future__ import annotations

from executing import headlines, only, posix_only, run

from codingagent.execute import execute
from codingagent.protocol.commands import (
    CreateFile,
    DeleteFile,
    Done,
    Message,
    ParseError,
    RunCommand,
)
from codingagent.sandbox.shell import Shell
from codingagent.state import CommandResult
from codingagent.workspace import Workspace


def test_messages_and_done(ws: Workspace) -> None:
    outcome = run(
        ws,
        Message(line=1, text="first"),
        Message(line=5, text="second"),
        Done(line=9, summary="All done"),
    )
    assert headlines(outcome) == [
        "[OK] MESSAGE: Shown to the user",
        "[OK] MESSAGE: Shown to the user",
        "[OK] DONE: Task marked complete",
    ]
    assert outcome.messages == ["first", "second"]
    assert outcome.done == "All done"


def test_parse_error_becomes_a_failed_result(ws: Workspace) -> None:
    error = ParseError(line=12, command="EDIT_FILE", message="start_line must be a whole number")
    result = only(run(ws, error))
    assert result.headline == (
        "[FAILED] EDIT_FILE: reply line 12: start_line must be a whole number"
    )


@posix_only
def test_done_is_refused_after_failures(ws: Workspace) -> None:
    outcome = run(
        ws,
        RunCommand(line=1, command="exit 1"),
        ParseError(line=4, command="CREATE_FILE", message="missing closing tag"),
        Message(line=6, text="fine"),
        Done(line=8, summary="Finished"),
    )
    assert headlines(outcome) == [
        "[FAILED] RUN_COMMAND: Ran 'exit 1' (exit code 1)",
        "[FAILED] CREATE_FILE: reply line 4: missing closing tag",
        "[OK] MESSAGE: Shown to the user",
        "[FAILED] DONE: Not accepted: 2 command(s) above failed; fix them, then send [DONE] again",
    ]
    assert outcome.done is None


def test_done_is_refused_when_commands_follow_it_and_those_still_run(ws: Workspace) -> None:
    outcome = run(
        ws,
        Done(line=1, summary="ok"),
        CreateFile(line=4, path="z.txt", content=""),
        DeleteFile(line=7, path="missing.txt"),
    )
    assert outcome.done is None
    assert headlines(outcome) == [
        "[FAILED] DONE: Not accepted: 2 commands came after [DONE]; send [DONE] alone, as the "
        "last command, once the work is finished",
        "[OK] CREATE_FILE: Created 'z.txt'",
        "[FAILED] DELETE_FILE: File 'missing.txt' not found",
    ]


def test_a_problem_with_the_reply_itself_refuses_done(ws: Workspace) -> None:
    problem = CommandResult(command="REPLY", success=False, summary="not valid UTF-8")
    outcome = execute([Done(line=1, summary="ok")], ws, Shell(), preceding=[problem])
    assert outcome.done is None
    assert outcome.results[0] == problem
    assert outcome.results[1].summary.startswith("Not accepted: 1 command(s) above failed")
