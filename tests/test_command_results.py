"""A reply's commands as a whole: results in order as they happen, forbidden paths rejected,
OS errors said with the path, Python that does not compile reported after the last write, and
what each command declares (its tag, whether it writes, the path it targets)."""

from __future__ import annotations

from typing import Any

import pytest
from executing import edit, headlines, only, put, replace, run

from codingagent.execute import TurnOutcome, execute
from codingagent.protocol.commands import (
    Command,
    CreateFile,
    DeleteFile,
    ReadFile,
    RunCommand,
    Search,
)
from codingagent.protocol.parser import TAGS
from codingagent.sandbox.shell import Shell
from codingagent.state import CommandResult
from codingagent.workspace import Workspace


def test_unexpected_os_error_names_the_path(ws: Workspace) -> None:
    put(ws, "f.txt", "x")
    result = only(run(ws, CreateFile(line=1, path="f.txt/inner.txt", content="x")))
    # The reason is the OS's (File exists, or Not a directory, depending on how the workspace
    # walks the path); what matters is that it is said with the path.
    assert result.headline.startswith("[FAILED] CREATE_FILE: ")
    assert result.headline.endswith(" ('f.txt/inner.txt')")


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (CreateFile(line=1, path="../evil.txt", content="x"), "Path is outside workspace"),
        (CreateFile(line=1, path="/tmp/evil.txt", content="x"), "Path is outside workspace"),
        (
            CreateFile(line=1, path=".git/hooks/pre-commit", content="x"),
            "Path is protected ('.git/')",
        ),
        (
            CreateFile(line=1, path="outbox/x_seq0009.txt", content="x"),
            "Path is protected (agent folder)",
        ),
        (edit("../evil.txt", 1, 1, "x"), "Path is outside workspace"),
        (DeleteFile(line=1, path="a\\b"), "Path contains a backslash; use forward slashes (/)"),
        (ReadFile(line=1, path="../../etc/passwd"), "Path is outside workspace"),
    ],
)
def test_rejected_paths(ws: Workspace, command: Command, reason: str) -> None:
    result = only(run(ws, command))
    assert result.headline == f"[FAILED] {command.name}: REJECTED: {reason}"
    assert not (ws.root.parent / "evil.txt").exists()
    assert not (ws.root / ".git").exists()
    assert list((ws.root / "outbox").iterdir()) == []


def test_symlink_write_is_rejected(ws: Workspace) -> None:
    put(ws, "real.txt", "real")
    (ws.root / "alias.txt").symlink_to("real.txt")
    result = only(run(ws, CreateFile(line=1, path="alias.txt", content="x")))
    assert result.headline == "[FAILED] CREATE_FILE: REJECTED: Path is a symlink"
    assert (ws.root / "real.txt").read_text() == "real"


def test_results_in_order_with_live_callback_and_timings(ws: Workspace) -> None:
    put(ws, "b.txt", "old\n")
    seen: list[CommandResult] = []
    commands: list[Command] = [
        CreateFile(line=1, path="a.txt", content="1\n2\n"),
        edit("a.txt", 2, 2, "two\n"),
        DeleteFile(line=7, path="b.txt"),
        CreateFile(line=9, path="x/../a.txt", content="again\n"),
        ReadFile(line=12, path="a.txt"),
    ]
    outcome = execute(commands, ws, Shell(), on_result=seen.append)
    assert seen == outcome.results
    assert [r.command for r in seen] == [
        "CREATE_FILE",
        "EDIT_FILE",
        "DELETE_FILE",
        "CREATE_FILE",
        "READ_FILE",
    ]
    assert all(r.success and r.duration_ms > 0 for r in seen)
    assert outcome.changed == ["a.txt", "b.txt"]
    assert outcome.read_requests == ["a.txt"]


def test_on_result_sees_each_result_before_the_next_command_runs(ws: Workspace) -> None:
    seen: list[tuple[str, bool]] = []
    execute(
        [
            CreateFile(line=1, path="first.txt", content=""),
            CreateFile(line=2, path="second.txt", content=""),
        ],
        ws,
        Shell(),
        on_result=lambda r: seen.append((r.summary, (ws.root / "second.txt").exists())),
    )
    assert seen == [("Created 'first.txt'", False), ("Created 'second.txt'", True)]


def test_empty_reply(ws: Workspace) -> None:
    assert run(ws) == TurnOutcome([], [], [], None, [])


def test_python_that_does_not_compile_is_reported_after_the_last_write(ws) -> None:
    outcome = run(
        ws,
        CreateFile(line=1, path="bad.py", content="def f(:\n    pass\n"),
        CreateFile(line=4, path="fixed.py", content="if x\n    pass\n"),
        edit("fixed.py", 1, 1, "if x:\n"),
        CreateFile(line=9, path="indent.py", content="def f():\nreturn 1\n"),
        CreateFile(line=12, path="notes.txt", content="def f(:\n"),
        replace("fixed.py", ("    pass\n", "  pass\n    pass\n")),
    )
    assert headlines(outcome) == [
        "[OK] CREATE_FILE: Created 'bad.py'; warning: Python cannot compile it: SyntaxError at "
        "line 1: invalid syntax",
        "[OK] CREATE_FILE: Created 'fixed.py'",
        "[OK] EDIT_FILE: Replaced line 1 of 'fixed.py' (1 line replaced by 1)",
        "[OK] CREATE_FILE: Created 'indent.py'; warning: Python cannot compile it: "
        "IndentationError at line 2: expected an indented block after function definition on "
        "line 1",
        "[OK] CREATE_FILE: Created 'notes.txt'",
        "[OK] REPLACE: Replaced line 2 of 'fixed.py' (1 line replaced by 2); warning: Python "
        "cannot compile it: IndentationError at line 3: unexpected indent",
    ]


def test_each_command_declares_its_tag_whether_it_writes_and_its_target() -> None:
    models: dict[str, Any] = {name: spec.model for name, spec in TAGS.items()}  # the classes
    for name, model in models.items():
        assert model.model_fields["kind"].default == name
    assert {name for name, model in models.items() if model.writes} == {
        "CREATE_FILE",
        "EDIT_FILE",
        "REPLACE",
        "PATCH",
        "DELETE_FILE",
    }
    assert ReadFile(line=1, path="a/b.txt").target == "a/b.txt"
    assert edit("c.txt", 1, 1, "x").target == "c.txt"
    assert Search(line=1, query="x", glob="*.py").target is None
    assert RunCommand(line=1, command="ls a.txt").target is None
