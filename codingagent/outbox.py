"""The next prompt: gather what the outbox shows from the workspace, fit it to the token
budget, and write it to ``outbox/``.

Rendering itself is :mod:`codingagent.render` (pure); the finished text goes through
:func:`codingagent.masking.mask` before it is written (SPEC 4.1: the prompt goes to a
third-party chat). :func:`write_outbox` returns the sha256
of every file it showed whole; the caller keeps them in ``state.shown_files`` (the turn before
its commit point, :func:`ensure_outbox` at once, under the session's lock), so a later
EDIT_FILE is checked against what the LLM really saw.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from . import masking
from .commands import ReadRequest
from .render import FileView, OutboxContext, estimate_tokens, render_outbox
from .session import SessionError, SessionState, SessionStore
from .workspace import PathRejected, Workspace

TOKEN_BUDGET = 100_000  # estimated tokens an outbox should stay under (setting token_budget)
MIN_WINDOW = 20  # lines of a file view that over-budget windowing keeps
FILE_READ_CAP = 8 * 1024 * 1024  # bytes of one requested file read to show a window of it


PROMPT_HEADING = "=== PROMPT ==="
MASKS_NOTE = (
    "## Masked Secrets\n"
    "Secrets are shown as [masked: kind id]. Keep such a mask exactly as it is when you write "
    "the line back (CREATE_FILE, EDIT_FILE, REPLACE): the agent puts the secret back. Never "
    "write a mask that you did not see."
)


class WrittenOutbox(NamedTuple):
    path: Path
    shown: dict[str, str]  # sha256 of each file shown whole, keyed by its workspace path
    masked: int = 0  # secrets masked in it


def open_workspace(store: SessionStore, state: SessionState) -> Workspace:
    folder = Path(state.workspace)
    if not folder.is_dir():
        raise SessionError(f"The workspace of session {state.session_id} is gone: {folder}")
    return Workspace(folder, protected=store.protected)


def write_outbox(
    store: SessionStore, state: SessionState, token_budget: int = TOKEN_BUDGET, mask: bool = True
) -> WrittenOutbox:
    """Render the session's current outbox from the workspace as it is now, and write it.

    Over ``token_budget``, the largest file views are shown in smaller windows first. With
    ``mask`` (setting ``mask_secrets``), secrets in it are masked.
    """
    ws = open_workspace(store, state)
    listing = ws.list_files()
    views = []
    shown = {}
    for request in state.read_file_requests:
        view, digest = _file_view(ws, request)
        views.append(view)
        if digest is not None:
            shown[_shown_key(ws, view.path)] = digest
    context = OutboxContext(files=listing.entries, omitted=listing.omitted, file_views=views)
    text = _fit(state, context, token_budget)
    text, masked = masking.mask(text) if mask else (text, 0)
    if masked:
        text = text.replace(f"\n\n{PROMPT_HEADING}", f"\n\n{MASKS_NOTE}\n\n{PROMPT_HEADING}", 1)
    path = store.write_outbox(state.session_id, state.sequence_number, text)
    return WrittenOutbox(path, shown, masked)


def next_outbox(
    store: SessionStore, state: SessionState, token_budget: int = TOKEN_BUDGET, mask: bool = True
) -> WrittenOutbox:
    """:func:`write_outbox`, the digests of the files it shows kept in ``state`` (not saved)."""
    written = write_outbox(store, state, token_budget, mask)
    state.shown_files |= written.shown
    return written


def ensure_outbox(store: SessionStore, state: SessionState, keep_digests: bool = True) -> Path:
    """The current outbox; if someone deleted it, it is rewritten from the workspace as it is.

    With ``keep_digests`` (the caller holds the session's lock) the digests of the files it now
    shows are kept in ``state`` and saved, so a later edit is checked against what it shows.
    """
    path = store.outbox_path(state.session_id, state.sequence_number)
    if path.exists():
        return path
    if not keep_digests:
        return write_outbox(store, state).path
    path = next_outbox(store, state).path
    store.save(state)
    return path


def _fit(state: SessionState, context: OutboxContext, token_budget: int) -> str:
    """The outbox text, with the largest file views windowed down until it fits the budget
    (or every view is down to ``MIN_WINDOW`` lines: the console then warns)."""
    text = render_outbox(state, context)
    views = list(context.file_views)
    while estimate_tokens(text) > token_budget:
        shrinkable = [i for i, v in enumerate(views) if v.text and v.window > MIN_WINDOW]
        if not shrinkable:
            break
        largest = max(shrinkable, key=lambda i: len(views[i].text or "") * views[i].window)
        view = views[largest]
        views[largest] = replace(view, window=max(MIN_WINDOW, view.window // 2))
        text = render_outbox(state, replace(context, file_views=views))
    return text


def _file_view(ws: Workspace, request: ReadRequest) -> tuple[FileView, str | None]:
    """The view of a requested file, and the sha256 of what it shows, if it shows all of it.

    Only the first ``FILE_READ_CAP`` bytes are read: the view shows a window of a file anyway.
    """
    if isinstance(request, str):
        path, start, end = request, None, None
    else:
        path, start, end = request.path, request.start_line, request.end_line
    try:
        size = ws.file_size(path)
        data = ws.read_bytes(path, limit=FILE_READ_CAP + 1)
    except (OSError, PathRejected) as e:
        reason = getattr(e, "strerror", None) or str(e)
        return FileView(path, None, f"cannot be shown: {reason}"), None
    if b"\0" in data:
        return FileView(path, None, f"binary file, {size:,} bytes, not shown"), None
    if len(data) <= FILE_READ_CAP:
        note, digest = "", hashlib.sha256(data).hexdigest()
    else:  # show whole lines only, and the LLM has not seen all of the file
        data = data[: data.rfind(b"\n", 0, FILE_READ_CAP) + 1] or data[:FILE_READ_CAP]
        note = f"the file has {size:,} bytes; only the lines in its first {len(data):,} are shown"
        digest = None
    text = data.decode("utf-8", errors="replace")
    return FileView(path, text, note, start, end), digest


def _shown_key(ws: Workspace, path: str) -> str:
    """The key of ``state.shown_files`` for a path as the LLM wrote it: its real path."""
    try:
        return ws.relpath(path)
    except (OSError, PathRejected):
        return path
