"""Render the outbox: the one self-contained prompt the user pastes into a chat LLM.

Pure: values in, text out. The layout is the protocol document's, section for section:
HEADER, PROTOCOL, CONTEXT (workspace files, previous results, requested files, search
results), PROMPT.

Requested files are shown with line numbers (``  12 | code``, SPEC 2.4), numbered exactly as
EDIT_FILE counts lines (only ``\\n`` ends one), and in a window: at most ``VIEW_LINES`` lines
and ``FILE_VIEW_CAP`` characters, with a note saying how to see the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .commands import file_lines, numbered
from .protocol import CONTINUATION_PROMPT, PROTOCOL_TEXT, PROTOCOL_VERSION

if TYPE_CHECKING:
    from .session import SessionState

NO_COMMANDS_NOTE = (
    "(no commands were found in your last reply; write them as tags at the start of a line, "
    "as the PROTOCOL section shows)"
)
VIEW_LINES = 400  # lines of one file shown at a time
FILE_VIEW_CAP = 100_000  # characters of one file shown at a time


@dataclass(frozen=True)
class FileView:
    """A requested file: its text, or ``None`` and a note saying why it is not shown.

    ``start_line``/``end_line`` are the lines the LLM asked for (``None``: from the first, to
    the last). With a text, ``note`` is said after the lines (e.g. that the file was too big
    to read whole).
    """

    path: str
    text: str | None
    note: str = ""
    start_line: int | None = None
    end_line: int | None = None
    window: int = VIEW_LINES  # at most this many lines; smaller when the prompt is over budget


@dataclass(frozen=True)
class OutboxContext:
    """What the turn engine gathered from the workspace for this outbox."""

    files: Sequence[tuple[str, int]] = ()
    omitted: int = 0
    file_views: Sequence[FileView] = ()
    # Results and search results left out to keep the prompt within its size limit.
    results_omitted: int = 0
    searches_omitted: int = 0


def render_outbox(state: SessionState, context: OutboxContext) -> str:
    sections = [
        ("HEADER", _header(state)),
        ("PROTOCOL", PROTOCOL_TEXT.rstrip("\n")),
        ("CONTEXT", _context(state, context)),
        ("PROMPT", _prompt(state)),
    ]
    return "\n\n".join(f"=== {name} ===\n{body}" for name, body in sections) + "\n"


def estimate_tokens(text: str) -> int:
    """Rough token count (about four characters a token for English and code)."""
    return (len(text) + 3) // 4


def _header(state: SessionState) -> str:
    task = " ".join(state.task.split())
    follow_ups = "".join(f"Follow-up: {' '.join(f.split())}\n" for f in state.follow_ups)
    return (
        f"Session: {state.session_id}\nSequence: {state.sequence_number}\nTask: {task}\n"
        f"{follow_ups}Protocol: {PROTOCOL_VERSION}"
    )


def _prompt(state: SessionState) -> str:
    if state.follow_up_sequence == state.sequence_number:
        return (
            "The user has a follow-up instruction for this session (the work so far is above):\n"
            f"{state.follow_ups[-1]}\n"
            "Work on it, and send [DONE] with a summary when it is complete."
        )
    return state.task if state.sequence_number == 1 else CONTINUATION_PROMPT


def _context(state: SessionState, context: OutboxContext) -> str:
    parts = ["## Workspace Files\n" + _listing(context)]
    if state.sequence_number > 1:
        results = [line for r in state.last_results for line in r.lines()] or [NO_COMMANDS_NOTE]
        results += _omitted(context.results_omitted, "result")
        parts.append("## Previous Command Results\n" + "\n".join(results))
    if context.file_views:
        parts.append(
            "## Requested File Contents\n" + "\n".join(map(_file_view, context.file_views))
        )
    if state.search_results or context.searches_omitted:
        searches = [*state.search_results, *_omitted(context.searches_omitted, "search result")]
        parts.append("## Search Results\n" + "\n\n".join(searches))
    return "\n\n".join(parts)


def _omitted(count: int, what: str) -> list[str]:
    if not count:
        return []
    return [
        f"({count:,} more {what}{'s' if count > 1 else ''} not shown: over the prompt's size limit)"
    ]


def _listing(context: OutboxContext) -> str:
    if not context.files:
        return "(empty workspace)"
    lines = [f"  {path} ({size} bytes)" for path, size in context.files]
    if context.omitted:
        lines.append(f"  ... and {context.omitted} more files not listed")
    return "\n".join(lines)


def _file_view(view: FileView) -> str:
    body = [f"({view.note})"] if view.text is None else _numbered_window(view)
    return "\n".join([f"--- {view.path} ---", *body, f"--- end {view.path} ---"])


def _numbered_window(view: FileView) -> list[str]:
    """The lines the LLM asked for, numbered, at most one window of them, and notes."""
    assert view.text is not None
    lines = file_lines(view.text)
    notes = [view.note] if view.note else []
    start = view.start_line or 1
    if not lines:
        return ["(empty file)", *_notes(notes)]
    if start > len(lines):
        return [f"(the file has {_lines(len(lines))}; nothing to show from line {start})"]
    stop = min(len(lines), view.end_line or len(lines), start + view.window - 1)
    shown: list[str] = []
    budget = FILE_VIEW_CAP
    for number in range(start, stop + 1):
        line = lines[number - 1]
        if len(line) > budget:
            if not shown:  # one huge line: show its head rather than nothing
                shown.append(line[:budget])
                notes.append(
                    f"line {number} has {len(line):,} characters; only its first "
                    f"{budget:,} are shown"
                )
            break
        budget -= len(line)
        shown.append(line)
    last = start + len(shown) - 1
    if last < len(lines):
        notes.append(
            f"{len(lines) - last:,} more {'line' if len(lines) - last == 1 else 'lines'} below; "
            f'READ_FILE with start_line="{last + 1}" to see them'
        )
    return [*numbered(shown, start), *_notes(notes)]


def _notes(notes: list[str]) -> list[str]:
    return [f"({note})" for note in notes]


def _lines(n: int) -> str:
    return f"{n:,} line" if n == 1 else f"{n:,} lines"
