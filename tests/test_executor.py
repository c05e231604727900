"""Executing a reply's commands: every result text the LLM sees, through real files and shells."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from executing import edit, headlines, only, put, run
from hypothesis import given, settings
from hypothesis import strategies as st

from codingagent.commands import (
    Command,
    CommandResult,
    CreateFile,
    DeleteFile,
    Done,
    Message,
    ParseError,
    ReadFile,
    RunCommand,
)
from codingagent.execute import TurnOutcome, execute
from codingagent.shell import Shell, ShellResult
from codingagent.workspace import Workspace

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")


# --- CREATE_FILE --------------------------------------------------------------------------------


def test_create_then_overwrite(ws: Workspace) -> None:
    outcome = run(
        ws,
        CreateFile(line=1, path="src/a.py", content="one\n"),
        CreateFile(line=4, path="src/a.py", content="two\n"),
    )
    assert headlines(outcome) == [
        "[OK] CREATE_FILE: Created 'src/a.py'",
        "[OK] CREATE_FILE: Overwrote 'src/a.py'",
    ]
    assert (ws.root / "src/a.py").read_text() == "two\n"
    assert outcome.changed == ["src/a.py"]


def test_create_on_a_directory_fails(ws: Workspace) -> None:
    (ws.root / "d").mkdir()
    result = only(run(ws, CreateFile(line=1, path="d", content="x")))
    assert result.headline == "[FAILED] CREATE_FILE: 'd' is a directory"


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


# --- EDIT_FILE ----------------------------------------------------------------------------------

TEN = "".join(f"line {i}\n" for i in range(1, 11))


@pytest.mark.parametrize(
    ("start", "end", "content", "summary", "expected_lines"),
    [
        (
            3,
            5,
            "a\nb\nc\nd\n",
            "Replaced lines 3-5 of 'p' (3 lines replaced by 4)",
            [1, 2, "a", "b", "c", "d", 6, 7, 8, 9, 10],
        ),
        (2, 2, "", "Replaced line 2 of 'p' (1 line replaced by 0)", [1, 3, 4, 5, 6, 7, 8, 9, 10]),
        (
            4,
            3,
            "x\ny\n",
            "Inserted 2 lines before line 4 of 'p'",
            [1, 2, 3, "x", "y", 4, 5, 6, 7, 8, 9, 10],
        ),
        (1, 0, "x\n", "Inserted 1 line before line 1 of 'p'", ["x", *range(1, 11)]),
        (11, 10, "x\ny\n", "Appended 2 lines to 'p'", [*range(1, 11), "x", "y"]),
        (
            10,
            10,
            "last\n",
            "Replaced line 10 of 'p' (1 line replaced by 1)",
            [*range(1, 10), "last"],
        ),
    ],
)
def test_edit_ranges(
    ws: Workspace, start: int, end: int, content: str, summary: str, expected_lines: list[object]
) -> None:
    put(ws, "p", TEN)
    outcome = run(ws, edit("p", start, end, content))
    assert only(outcome).headline == f"[OK] EDIT_FILE: {summary}"
    expected = "".join(f"line {x}\n" if isinstance(x, int) else f"{x}\n" for x in expected_lines)
    assert (ws.root / "p").read_text() == expected
    assert outcome.changed == ["p"]


@pytest.mark.parametrize(
    ("start", "end"), [(7, 5), (0, 1), (0, -1), (11, 11), (12, 11), (5, 11), (-1, 2), (3, 1)]
)
def test_edit_invalid_range_leaves_the_file_alone(ws: Workspace, start: int, end: int) -> None:
    path = put(ws, "p", TEN)
    outcome = run(ws, edit("p", start, end, "x\n"))
    assert only(outcome).headline == (
        f"[FAILED] EDIT_FILE: Invalid line range {start}-{end} for 'p' (the file has 10 lines)"
    )
    assert path.read_text() == TEN
    assert outcome.changed == []


def test_edit_invalid_range_counts_one_line(ws: Workspace) -> None:
    put(ws, "one.txt", "only\n")
    result = only(run(ws, edit("one.txt", 2, 2, "x\n")))
    assert result.summary == "Invalid line range 2-2 for 'one.txt' (the file has 1 line)"


def test_edit_missing_file(ws: Workspace) -> None:
    (ws.root / "d").mkdir()
    outcome = run(ws, edit("nope.py", 1, 1, "x\n"), edit("d", 1, 1, "x\n"))
    assert headlines(outcome) == [
        "[FAILED] EDIT_FILE: File 'nope.py' not found",
        "[FAILED] EDIT_FILE: 'd' is a directory",
    ]
    assert not (ws.root / "nope.py").exists()


def test_edit_refuses_non_utf8(ws: Workspace) -> None:
    path = put(ws, "latin1.txt", b"caf\xe9\n")
    result = only(run(ws, edit("latin1.txt", 1, 1, "x\n")))
    assert result.headline == "[FAILED] EDIT_FILE: 'latin1.txt' is not a UTF-8 text file"
    assert path.read_bytes() == b"caf\xe9\n"


@pytest.mark.parametrize(
    ("before", "start", "end", "content", "after"),
    [
        # CRLF files get CRLF lines, whatever the reply used.
        ("a\r\nb\r\nc\r\n", 2, 2, "X\nY\n", "a\r\nX\r\nY\r\nc\r\n"),
        ("a\r\nb\r\nc\r\n", 4, 3, "d\r\n", "a\r\nb\r\nc\r\nd\r\n"),
        # The style comes from the first line ending; other lines keep theirs.
        ("a\nb\r\nc\n", 3, 3, "X\n", "a\nb\r\nX\n"),
        ("a\r\nb\nc\n", 3, 3, "X\n", "a\r\nb\nX\r\n"),
        # No newline at the end of the file stays that way.
        ("a\nb\nc", 3, 3, "Z\n", "a\nb\nZ"),
        ("a\nb\nc", 2, 3, "Z\n", "a\nZ"),
        ("a\nb\nc", 2, 2, "X\n", "a\nX\nc"),
        ("a\nb\nc", 4, 3, "d\n", "a\nb\nc\nd"),
        ("a\nb\nc", 1, 0, "new\n", "new\na\nb\nc"),
        ("a\nb\nc", 3, 3, "", "a\nb"),
        ("a\r\nb", 3, 2, "c\n", "a\r\nb\r\nc"),
        ("a\r\nb", 2, 2, "B\n", "a\r\nB"),
        ("only", 1, 1, "", ""),
        # Empty files and bodies without a final newline.
        ("", 1, 0, "x\n", "x\n"),
        ("", 1, 0, "x", "x\n"),
        ("a\n", 1, 1, "b\nc", "b\nc\n"),
        ("a\n", 1, 1, "\n", "\n"),
        # Only \n ends a line: form feeds and other separators are text.
        ("a\fb\nc\u2028d\ne\n", 2, 2, "X\n", "a\fb\nX\ne\n"),
        # A byte order mark survives.
        ("\ufeffa\nb\n", 2, 2, "B\n", "\ufeffa\nB\n"),
    ],
)
def test_edit_line_endings(
    ws: Workspace, before: str, start: int, end: int, content: str, after: str
) -> None:
    path = put(ws, "f.txt", before)
    result = only(run(ws, edit("f.txt", start, end, content)))
    assert result.success, result.summary
    assert path.read_bytes() == after.encode()


def test_edit_keeps_the_file_mode(ws: Workspace) -> None:
    path = put(ws, "run.sh", "#!/bin/sh\necho a\n")
    path.chmod(0o755)
    run(ws, edit("run.sh", 2, 2, "echo b\n"))
    assert path.stat().st_mode & 0o777 == 0o755
    assert path.read_text() == "#!/bin/sh\necho b\n"


_LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=4
)


@pytest.fixture(scope="module")
def edit_ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("edits"))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), lines=st.lists(_LINE, max_size=8), new=st.lists(_LINE, max_size=4))
def test_edit_matches_a_list_model(
    edit_ws: Workspace, data: st.DataObject, lines: list[str], new: list[str]
) -> None:
    # A file without a final newline must end in a non-empty line, or it reads as other lines.
    trailing = not lines or not lines[-1] or data.draw(st.booleans(), label="trailing newline")
    text = "".join(f"{line}\n" for line in lines) if trailing else "\n".join(lines)
    start = data.draw(st.integers(1, len(lines) + 1), label="start")
    end = data.draw(st.integers(start - 1, len(lines)), label="end")
    path = put(edit_ws, "model.txt", text)

    outcome = run(edit_ws, edit("model.txt", start, end, "".join(f"{x}\n" for x in new)))

    assert only(outcome).success
    model = lines[: start - 1] + new + lines[end:]
    expected = "".join(f"{x}\n" for x in model) if trailing else "\n".join(model)
    assert path.read_bytes().decode() == expected


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 6), start=st.integers(-2, 9), end=st.integers(-2, 9))
def test_edit_accepts_exactly_the_documented_ranges(
    edit_ws: Workspace, n: int, start: int, end: int
) -> None:
    text = "".join(f"{i}\n" for i in range(n))
    path = put(edit_ws, "range.txt", text)
    result = only(run(edit_ws, edit("range.txt", start, end, "x\n")))
    valid = (1 <= start <= end <= n) or (end == start - 1 and 1 <= start <= n + 1)
    assert result.success == valid
    if not valid:
        assert path.read_text() == text
        assert result.summary.startswith(f"Invalid line range {start}-{end} for 'range.txt'")


# --- DELETE_FILE / READ_FILE --------------------------------------------------------------------


def test_delete(ws: Workspace) -> None:
    put(ws, "a.txt", "x")
    (ws.root / "d").mkdir()
    outcome = run(
        ws,
        DeleteFile(line=1, path="a.txt"),
        DeleteFile(line=2, path="a.txt"),
        DeleteFile(line=3, path="d"),
    )
    assert headlines(outcome) == [
        "[OK] DELETE_FILE: Deleted 'a.txt'",
        "[FAILED] DELETE_FILE: File 'a.txt' not found",
        "[FAILED] DELETE_FILE: 'd' is a directory",
    ]
    assert not (ws.root / "a.txt").exists()
    assert (ws.root / "d").is_dir()
    assert outcome.changed == ["a.txt"]


def test_read_requests_are_normalised_and_deduplicated(ws: Workspace) -> None:
    put(ws, "src/a.py", "x")
    put(ws, "b.txt", "y")
    outcome = run(
        ws,
        ReadFile(line=1, path="./src//a.py"),
        ReadFile(line=2, path="b.txt"),
        ReadFile(line=3, path="src/a.py"),
        ReadFile(line=4, path="missing.py"),
    )
    assert headlines(outcome) == [
        "[OK] READ_FILE: './src//a.py' is shown under Requested File Contents",
        "[OK] READ_FILE: 'b.txt' is shown under Requested File Contents",
        "[OK] READ_FILE: 'src/a.py' is shown under Requested File Contents",
        "[FAILED] READ_FILE: File 'missing.py' not found",
    ]
    assert outcome.read_requests == ["src/a.py", "b.txt"]
    assert outcome.changed == []


# --- RUN_COMMAND --------------------------------------------------------------------------------


@posix_only
def test_run_command_results(ws: Workspace) -> None:
    outcome = run(
        ws,
        RunCommand(line=1, command="echo hi"),
        RunCommand(line=2, command="echo oops >&2; exit 3"),
        RunCommand(line=3, command="true"),
        RunCommand(line=4, command="echo a\necho b"),
        RunCommand(line=5, command="  \n "),
        RunCommand(line=6, command="pwd -P"),
    )
    assert [r.lines() for r in outcome.results] == [
        ["[OK] RUN_COMMAND: Ran 'echo hi' (exit code 0)", "  Output: hi"],
        ["[FAILED] RUN_COMMAND: Ran 'echo oops >&2; exit 3' (exit code 3)", "  Output: oops"],
        ["[OK] RUN_COMMAND: Ran 'true' (exit code 0)", "  Output: (no output)"],
        ["[OK] RUN_COMMAND: Ran 'echo a ...' (exit code 0)", "  Output:", "    a", "    b"],
        ["[FAILED] RUN_COMMAND: No command given"],
        ["[OK] RUN_COMMAND: Ran 'pwd -P' (exit code 0)", f"  Output: {ws.root}"],
    ]
    assert outcome.results[0].output == "hi\n"


@posix_only
def test_run_command_timeout(ws: Workspace) -> None:
    result = only(run(ws, RunCommand(line=1, command="sleep 5"), shell=Shell(timeout=0.25)))
    assert result.headline == "[FAILED] RUN_COMMAND: 'sleep 5' timed out after 0.25 s"
    assert result.output == "(no output)"


class _TimedOutShell(Shell):
    """A shell that reports a timeout at once, to check the wording for the default timeout."""

    def run(self, command: str, cwd: Path) -> ShellResult:
        return ShellResult(None, "partial\n", timed_out=True, duration_s=30.0, cut_chars=0)


@pytest.mark.parametrize(("timeout", "shown"), [(30.0, "30 s"), (2.5, "2.5 s"), (120, "120 s")])
def test_timeout_wording(ws: Workspace, timeout: float, shown: str) -> None:
    result = only(
        run(ws, RunCommand(line=1, command="make\nmake test"), shell=_TimedOutShell(timeout))
    )
    assert result.headline == f"[FAILED] RUN_COMMAND: 'make ...' timed out after {shown}"
    assert result.output == "partial\n"


# --- MESSAGE / DONE / parse errors --------------------------------------------------------------


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


# --- the turn as a whole ------------------------------------------------------------------------


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
