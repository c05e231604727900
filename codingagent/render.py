"""Render the outbox: the one self-contained prompt the user pastes into a chat LLM.

Pure: values in, text out. The layout is the protocol document's, section for section:
HEADER, PROTOCOL, CONTEXT (workspace files, previous results, requested files), PROMPT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .protocol import CONTINUATION_PROMPT, PROTOCOL_TEXT

if TYPE_CHECKING:
    from .session import SessionState

NO_COMMANDS_NOTE = (
    "(no commands were found in your last reply; write them as tags at the start of a line, "
    "as the PROTOCOL section shows)"
)


@dataclass(frozen=True)
class FileView:
    """A requested file: its text, or ``None`` and a note saying why it is not shown."""

    path: str
    text: str | None
    note: str = ""


@dataclass(frozen=True)
class OutboxContext:
    """What the turn engine gathered from the workspace for this outbox."""

    files: Sequence[tuple[str, int]] = ()
    omitted: int = 0
    file_views: Sequence[FileView] = ()


def render_outbox(state: SessionState, context: OutboxContext) -> str:
    sections = [
        ("HEADER", _header(state)),
        ("PROTOCOL", PROTOCOL_TEXT.rstrip("\n")),
        ("CONTEXT", _context(state, context)),
        ("PROMPT", state.task if state.sequence_number == 1 else CONTINUATION_PROMPT),
    ]
    return "\n\n".join(f"=== {name} ===\n{body}" for name, body in sections) + "\n"


def estimate_tokens(text: str) -> int:
    """Rough token count (about four characters a token for English and code)."""
    return (len(text) + 3) // 4


def _header(state: SessionState) -> str:
    task = " ".join(state.task.split())
    return f"Session: {state.session_id}\nSequence: {state.sequence_number}\nTask: {task}"


def _context(state: SessionState, context: OutboxContext) -> str:
    parts = ["## Workspace Files\n" + _listing(context)]
    if state.sequence_number > 1:
        results = [line for r in state.last_results for line in r.lines()] or [NO_COMMANDS_NOTE]
        parts.append("## Previous Command Results\n" + "\n".join(results))
    if context.file_views:
        parts.append(
            "## Requested File Contents\n" + "\n".join(map(_file_view, context.file_views))
        )
    return "\n\n".join(parts)


def _listing(context: OutboxContext) -> str:
    if not context.files:
        return "(empty workspace)"
    lines = [f"  {path} ({size} bytes)" for path, size in context.files]
    if context.omitted:
        lines.append(f"  ... and {context.omitted} more files not listed")
    return "\n".join(lines)


def _file_view(view: FileView) -> str:
    if view.text is None:
        body = f"({view.note})\n"
    else:
        body = view.text if view.text.endswith("\n") or not view.text else view.text + "\n"
    return f"--- {view.path} ---\n{body}--- end {view.path} ---"
