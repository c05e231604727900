"""EDIT_FILE: line-number edits, and runs of them mapped through the earlier edits of the run.

Consecutive EDIT_FILE commands on one file form a run: their line numbers are those of the file
as it was when the run started (docs/protocol.md §5.1).
"""

from __future__ import annotations

from codingagent.execute.context import (
    CommandFailed,
    EditRun,
    Success,
    Turn,
    digest,
    fence_note,
    noted,
    read_text,
    write,
)
from codingagent.execute.lines import (
    block_lines,
    count,
    lines_name,
    splice,
    split_lines,
    style,
)
from codingagent.protocol.commands import EditFile, numbered


def edit_file(cmd: EditFile, turn: Turn) -> Success:
    text = read_text(cmd.path, turn)
    rel = turn.workspace.relpath(cmd.path)
    run = turn.runs.get(rel)
    if run is None or run.text != text:
        lines = split_lines(text)
        warning = _stale_warning(rel, cmd.path, text, turn)
        run = turn.runs[rel] = EditRun(len(lines), style(lines), text, warning)
    warning, run.warning = run.warning, ""  # said once, on the command that starts the run
    fence = fence_note(cmd.fence_removed, cmd.residue)

    def notes(summary: str) -> str:  # on success and failure alike
        return noted(noted(summary, fence, parenthesis=True), warning)

    try:
        summary, removed = _edit(cmd, text, run, turn)
    except CommandFailed as failed:
        raise CommandFailed(notes(failed.summary)) from None
    return Success(notes(summary), removed)


def _edit(cmd: EditFile, text: str, run: EditRun, turn: Turn) -> tuple[str, str | None]:
    """Apply one edit of ``run`` to the file (whose text is ``text``); what it did, and the
    lines it replaced as they were (None for an insertion)."""
    new = block_lines(cmd.content)
    start, end = cmd.start_line, cmd.end_line
    summary = _judge_edit(cmd.path, start, end, run.lines_before, len(new), bool(run.edits))
    _refuse_clash(cmd.path, start, end, run)
    shift = run.shift(start)
    lines = split_lines(text)
    removed = _removed(lines[start + shift - 1 : end + shift], start) if end >= start else None
    run.text = "".join(splice(lines, start + shift, end + shift, new, run.style))
    write(cmd.path, run.text, turn)
    run.edits.append((start, end, len(new)))
    return summary, removed


SHOWN_AT_EACH_END = 3  # replaced lines shown from the start and from the end of the range


def _removed(lines: list[str], first: int) -> str:
    """The replaced lines as the result shows them, so a range one line off is seen: the
    first and last few, with their numbers (docs/admission.md)."""
    plain = [line.rstrip("\r\n") for line in lines]
    n = SHOWN_AT_EACH_END
    if len(plain) <= 2 * n + 1:
        shown = numbered(plain, first)
    else:
        skipped = len(plain) - 2 * n
        shown = [
            *numbered(plain[:n], first),
            f"  ... ({skipped} more lines)",
            *numbered(plain[-n:], first + len(plain) - n),
        ]
    return "The lines replaced were:\n" + "\n".join(shown)


def _stale_warning(rel: str, path: str, text: str, turn: Turn) -> str:
    """Why the line numbers of an EDIT_FILE run may be wrong, or ""."""
    seen = turn.outcome.shown.get(rel)
    if not turn.track_shown or seen is None or seen == digest(text.encode("utf-8")):
        return ""
    return (
        f"warning: '{path}' changed since you last saw it, so these line numbers may be "
        "stale; READ_FILE it and check"
    )


def _judge_edit(path: str, start: int, end: int, n: int, added: int, edited: bool) -> str:
    """What the edit of ``start..end`` does, if it is a valid range of an ``n``-line file.

    ``edited``: earlier edits of the run changed the file, whose line count ``n`` was before.
    """
    if end == start - 1 and start == n + 1:
        return f"Appended {count(added)} to '{path}'"
    if end == start - 1 and 1 <= start <= n:
        return f"Inserted {count(added)} before line {start} of '{path}'"
    if 1 <= start <= end <= n:
        replaced = f"{count(end - start + 1)} replaced by {added}"
        return f"Replaced {lines_name(start, end)} of '{path}' ({replaced})"
    had = "had" if edited else "has"
    raise CommandFailed(
        f"Invalid line range {start}-{end} for '{path}' (the file {had} {count(n)})"
    )


def _refuse_clash(path: str, start: int, end: int, run: EditRun) -> None:
    """Fail an edit whose range overlaps an earlier one of its run."""
    clash = run.clash(start, end)
    if clash is None:
        return
    raise CommandFailed(
        f"Not applied: {_range_name(start, end)} of '{path}' and {_range_name(*clash)}, "
        "changed by an earlier EDIT_FILE of this reply, overlap; all EDIT_FILE line numbers of "
        "one reply refer to the file as you saw it, so give each line to one EDIT_FILE only",
    )


def _range_name(start: int, end: int) -> str:
    return f"the insertion before line {start}" if end == start - 1 else lines_name(start, end)
