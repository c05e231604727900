"""The outbox as the protocol document lays it out, section for section."""

from __future__ import annotations

from codingagent.prompt.render import (
    FILE_VIEW_CAP,
    NO_COMMANDS_NOTE,
    VIEW_LINES,
    FileView,
    OutboxContext,
    PromptOptions,
    estimate_tokens,
    render_outbox,
)
from codingagent.protocol.manual import CONTINUATION_PROMPT, PROTOCOL_VERSION, protocol_text
from codingagent.protocol.parser import TAGS, parse
from codingagent.state import CommandResult, SessionState

PROTOCOL_TEXT = protocol_text(30, 4000)  # with the default limits


def state(**changes) -> SessionState:
    base = {"session_id": "a1b2c3d4", "task": "Create a calculator app in C#", "workspace": "/w"}
    return SessionState(**(base | changes))


def section(text: str, name: str) -> str:
    """The body of one ``=== NAME ===`` section."""
    after = text.split(f"=== {name} ===\n", 1)[1]
    return after.split("\n\n=== ", 1)[0]


def test_first_outbox_has_the_four_sections_in_order():
    text = render_outbox(state(), OutboxContext())
    markers = [line for line in text.splitlines() if line.startswith("=== ")]
    assert markers == ["=== HEADER ===", "=== PROTOCOL ===", "=== CONTEXT ===", "=== PROMPT ==="]
    # Protocol 1.1 (docs/protocol.md §9): the HEADER gains a `Protocol:` line after the 1.0
    # fields; the HEADER names the task, as the protocol document has it.
    assert section(text, "HEADER") == (
        "Session: a1b2c3d4\nSequence: 1\nTask: Create a calculator app in C#\nProtocol: 1.2"
    )
    assert PROTOCOL_VERSION == "1.2"
    assert section(text, "PROTOCOL") == PROTOCOL_TEXT.rstrip("\n")
    assert section(text, "CONTEXT") == "## Workspace Files\n(empty workspace)"
    assert text.endswith("=== PROMPT ===\nCreate a calculator app in C#\n")


def test_workspace_listing_shows_sizes_and_what_was_left_out():
    context = OutboxContext(files=[("src/Calculator.cs", 245), ("src/Program.cs", 180)], omitted=7)
    assert section(render_outbox(state(), context), "CONTEXT") == (
        "## Workspace Files\n"
        "  src/Calculator.cs (245 bytes)\n"
        "  src/Program.cs (180 bytes)\n"
        "  (7 more files were not counted: too many)"
    )


def test_later_outbox_shows_results_files_and_the_continuation_prompt():
    results = [
        CommandResult(command="CREATE_FILE", success=True, summary="Created 'src/Calculator.cs'"),
        CommandResult(
            command="RUN_COMMAND",
            success=True,
            summary="Ran 'dotnet build' (exit code 0)",
            output="Build succeeded. 0 Warning(s) 0 Error(s)\n",
        ),
        CommandResult(
            command="EDIT_FILE", success=False, summary="File 'src/Missing.cs' not found"
        ),
    ]
    context = OutboxContext(
        files=[("src/Calculator.cs", 20)],
        file_views=[FileView("src/Calculator.cs", "using System;\n\npublic class Calculator\n")],
    )
    text = render_outbox(state(sequence_number=2, last_results=results), context)
    assert section(text, "CONTEXT") == (
        "## Workspace Files\n"
        "  src/Calculator.cs (20 bytes)\n"
        "\n"
        "## Previous Command Results\n"
        "[OK] CREATE_FILE: Created 'src/Calculator.cs'\n"
        "[OK] RUN_COMMAND: Ran 'dotnet build' (exit code 0)\n"
        "  Output: Build succeeded. 0 Warning(s) 0 Error(s)\n"
        "[FAILED] EDIT_FILE: File 'src/Missing.cs' not found\n"
        "\n"
        "## Requested File Contents\n"
        "--- src/Calculator.cs ---\n"
        "   1 | using System;\n"
        "   2 |\n"
        "   3 | public class Calculator\n"
        "--- end src/Calculator.cs ---"
    )
    assert text.endswith(f"=== PROMPT ===\n{CONTINUATION_PROMPT}\n")
    assert CONTINUATION_PROMPT == (
        "Continue working on the task based on the results above. "
        "If the task is complete, send [DONE] with a summary."
    )


def test_multiline_output_is_an_indented_block():
    result = CommandResult(
        command="RUN_COMMAND", success=False, summary="Ran 'ls' (exit code 2)", output="a\n\nb\n"
    )
    assert result.lines() == [
        "[FAILED] RUN_COMMAND: Ran 'ls' (exit code 2)",
        "  Output:",
        "    a",
        "",
        "    b",
    ]


def test_reply_without_commands_is_explained_to_the_llm():
    text = render_outbox(state(sequence_number=2), OutboxContext())
    assert f"## Previous Command Results\n{NO_COMMANDS_NOTE}" in text


def test_file_views_without_trailing_newline_and_unshowable_files():
    context = OutboxContext(
        file_views=[FileView("a.txt", "no newline"), FileView("b.bin", None, "binary file")]
    )
    context_text = section(render_outbox(state(sequence_number=3), context), "CONTEXT")
    assert (
        "--- a.txt ---\n   1 | no newline\n(no newline at the end of the file)\n--- end a.txt ---"
        in context_text
    )
    assert "--- b.bin ---\n(binary file)\n--- end b.bin ---" in context_text


def test_multiline_task_stays_on_one_header_line_and_whole_in_the_prompt():
    text = render_outbox(state(task="Fix the bug\nin parser.py"), OutboxContext())
    assert "Task: Fix the bug in parser.py\n" in text
    assert text.endswith("=== PROMPT ===\nFix the bug\nin parser.py\n")
    later = render_outbox(
        state(task="Fix the bug\nin parser.py", sequence_number=2), OutboxContext()
    )
    assert "Task: Fix the bug in parser.py\n" in later


def test_a_long_task_is_named_by_its_first_line_in_the_header():
    task = "Speed up the parser\n" + "It is slow on large inputs because of backtracking. " * 10
    first = render_outbox(state(task=task), OutboxContext())
    assert "Task: Speed up the parser (the whole task is under PROMPT below)\n" in first
    assert first.endswith(f"=== PROMPT ===\n{task}\n")
    later = render_outbox(state(task=task, sequence_number=2), OutboxContext())
    assert "Task: Speed up the parser (the whole task is under PROMPT in the first message)\n" in (
        later
    )
    full = render_outbox(
        state(task=task, sequence_number=2), OutboxContext(), PromptOptions(full_protocol=True)
    )
    assert f"Task: {' '.join(task.split())}\n" in full
    one_line = render_outbox(state(task="x" * 300), OutboxContext())
    assert f"Task: {'x' * 197}... (the whole" in one_line


def test_protocol_section_teaches_every_command():
    assert {"CREATE_FILE", "EDIT_FILE", "REPLACE", "SEARCH", "DONE"} <= set(TAGS)
    for tag in TAGS:
        assert f"[{tag}" in PROTOCOL_TEXT, tag
    assert "[DONE]" in PROTOCOL_TEXT and "EXAMPLE REPLY" in PROTOCOL_TEXT
    assert "Lines outside commands are ignored" in PROTOCOL_TEXT


def test_token_estimate_is_about_four_characters_a_token():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 100) == 100


# --- protocol 1.1: numbered file views in windows, search results ------------------------------


def view(text: str, **fields) -> str:
    """The rendered ``## Requested File Contents`` entry of one file."""
    context = OutboxContext(file_views=[FileView("f.txt", text, **fields)])
    return section(render_outbox(state(sequence_number=2), context), "CONTEXT").split(
        "## Requested File Contents\n", 1
    )[1]


def test_numbers_split_lines_exactly_as_edit_file_does():
    # Only \n ends a line: form feeds and U+2028 stay inside their line; \r of CRLF is hidden.
    assert view("a\fb\r\nc\u2028d\n\ne") == (
        "--- f.txt ---\n   1 | a\fb\n   2 | c\u2028d\n   3 |\n   4 | e\n"
        "(no newline at the end of the file)\n--- end f.txt ---"
    )
    assert view("") == "--- f.txt ---\n(empty file)\n--- end f.txt ---"


def test_the_end_of_a_file_is_told_apart_blank_lines_and_no_final_newline():
    assert view("a\n").split("\n")[1:-1] == ["   1 | a"]
    assert view("a").split("\n")[1:-1] == ["   1 | a", "(no newline at the end of the file)"]
    assert view("a\n\n").split("\n")[1:-1] == [
        "   1 | a",
        "   2 |",
        "(the file ends with 1 blank line)",
    ]
    assert view("a\n \n\n").split("\n")[-2] == "(the file ends with 2 blank lines)"
    assert view("a\n\n\nb").split("\n")[-2] == "(no newline at the end of the file)"
    assert view("a\n\n", end_line=1).split("\n")[-2].startswith("(1 more line below")


def test_a_large_file_is_shown_in_a_window_with_a_way_to_the_rest():
    text = "".join(f"{i}\n" for i in range(1, 1001))
    lines = view(text).split("\n")
    assert len(lines) == 1 + VIEW_LINES + 2
    assert lines[1] == "   1 | 1" and lines[VIEW_LINES] == " 400 | 400"
    assert lines[-2] == '(600 more lines below; READ_FILE with start_line="401" to see them)'
    assert view(text, start_line=999).split("\n")[1:-1] == [" 999 | 999", "1000 | 1000"]
    assert view(text, start_line=10, end_line=11).split("\n")[1:-1] == [
        "  10 | 10",
        "  11 | 11",
        '(989 more lines below; READ_FILE with start_line="12" to see them)',
    ]
    assert view(text, end_line=1).split("\n")[1:-1] == [
        "   1 | 1",
        '(999 more lines below; READ_FILE with start_line="2" to see them)',
    ]
    assert view("a\nb\n", start_line=5) == (
        "--- f.txt ---\n(the file has 2 lines; nothing to show from line 5)\n--- end f.txt ---"
    )


def test_a_window_is_also_capped_in_characters():
    long = "x" * (FILE_VIEW_CAP // 3)
    lines = view(f"{long}\n{long}\n{long}\n{long}\nshort\n").split("\n")
    assert [line[:8] for line in lines[1:-1]] == [
        "   1 | x",
        "   2 | x",
        "   3 | x",
        "(2 more ",
    ]
    huge = view("y" * (FILE_VIEW_CAP + 5)).split("\n")
    assert huge[1] == "   1 | " + "y" * FILE_VIEW_CAP
    assert (
        huge[2]
        == f"(line 1 has {FILE_VIEW_CAP + 5:,} characters; only its first 100,000 are shown)"
    )


def test_a_note_about_a_partly_read_file_follows_its_lines():
    assert view("a\n", note="the file has 9 bytes; only the lines in its first 2 are shown") == (
        "--- f.txt ---\n   1 | a\n(the file has 9 bytes; only the lines in its first 2 are "
        "shown)\n--- end f.txt ---"
    )


def test_search_results_follow_the_requested_files():
    results = ['SEARCH "x": 1 match in 1 file\na.py:3: x = 1', 'SEARCH "y": 0 matches in 0 files']
    text = render_outbox(
        state(sequence_number=2, search_results=results),
        OutboxContext(file_views=[FileView("a.py", "x = 1\n")]),
    )
    assert section(text, "CONTEXT").endswith(
        "--- end a.py ---\n\n## Search Results\n"
        'SEARCH "x": 1 match in 1 file\na.py:3: x = 1\n\nSEARCH "y": 0 matches in 0 files'
    )


def test_protocol_section_teaches_1_1():
    for needle in (
        "Session: <id> Sequence: <n>",
        "[REPLACE path=",
        "<<<<<<< SEARCH",
        ">>>>>>> REPLACE",
        "[SEARCH query=",
        'start_line="400" end_line="600"',
        '"  12 | text"',
        "Put your commands inside a code block",
        "Prefer REPLACE for small changes and CREATE_FILE for new files",
        f"Long files are shown {VIEW_LINES} lines at a time",
    ):
        assert needle in PROTOCOL_TEXT, needle


def test_the_protocol_example_is_a_reply_the_parser_reads_as_intended():
    example = PROTOCOL_TEXT.split("EXAMPLE REPLY (test_calc.py has 12 lines)\n", 1)[1]
    assert [c.kind for c in parse(example)] == ["REPLACE", "EDIT_FILE", "RUN_COMMAND", "DONE"]
