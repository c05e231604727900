"""The outbox as the protocol document lays it out, section for section."""

from __future__ import annotations

from codingagent.commands import CommandResult
from codingagent.protocol import CONTINUATION_PROMPT, PROTOCOL_TEXT
from codingagent.render import (
    NO_COMMANDS_NOTE,
    FileView,
    OutboxContext,
    estimate_tokens,
    render_outbox,
)
from codingagent.session import SessionState


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
    assert section(text, "HEADER") == (
        "Session: a1b2c3d4\nSequence: 1\nTask: Create a calculator app in C#"
    )
    assert section(text, "PROTOCOL") == PROTOCOL_TEXT.rstrip("\n")
    assert section(text, "CONTEXT") == "## Workspace Files\n(empty workspace)"
    assert text.endswith("=== PROMPT ===\nCreate a calculator app in C#\n")


def test_workspace_listing_shows_sizes_and_what_was_left_out():
    context = OutboxContext(files=[("src/Calculator.cs", 245), ("src/Program.cs", 180)], omitted=7)
    assert section(render_outbox(state(), context), "CONTEXT") == (
        "## Workspace Files\n"
        "  src/Calculator.cs (245 bytes)\n"
        "  src/Program.cs (180 bytes)\n"
        "  ... and 7 more files not listed"
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
        "using System;\n"
        "\n"
        "public class Calculator\n"
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
    assert "--- a.txt ---\nno newline\n--- end a.txt ---" in context_text
    assert "--- b.bin ---\n(binary file)\n--- end b.bin ---" in context_text


def test_multiline_task_stays_on_one_header_line_and_whole_in_the_prompt():
    text = render_outbox(state(task="Fix the bug\nin parser.py"), OutboxContext())
    assert "Task: Fix the bug in parser.py\n" in text
    assert text.endswith("=== PROMPT ===\nFix the bug\nin parser.py\n")


def test_protocol_section_teaches_every_command():
    for tag in ("CREATE_FILE", "EDIT_FILE", "DELETE_FILE", "READ_FILE", "RUN_COMMAND", "MESSAGE"):
        assert f"[{tag}" in PROTOCOL_TEXT
    assert "[DONE]" in PROTOCOL_TEXT and "EXAMPLE REPLY" in PROTOCOL_TEXT
    assert "Lines outside commands are ignored" in PROTOCOL_TEXT


def test_token_estimate_is_about_four_characters_a_token():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 100) == 100
