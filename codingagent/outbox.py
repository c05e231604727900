"""The next prompt: gather what the outbox shows from the workspace, fit it to the token
budget, and write it to ``outbox/``.

Rendering itself is :mod:`codingagent.render` (pure). :func:`write_outbox` returns the sha256
of every file it showed whole; the caller keeps them in ``state.shown_files`` (the turn before
its commit point, :func:`ensure_outbox` at once), so a later EDIT_FILE is checked against what
the LLM really saw.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from .commands import ReadRequest
from .render import FileView, OutboxContext, estimate_tokens, render_outbox
from .session import SessionError, SessionState, SessionStore
from .workspace import PathRejected, Workspace

TOKEN_BUDGET = 100_000  # estimated tokens an outbox should stay under (setting token_budget)
MIN_WINDOW = 20  # lines of a file view that over-budget windowing keeps
FILE_READ_CAP = 8 * 1024 * 1024  # bytes of one requested file read to show a window of it


class WrittenOutbox(NamedTuple):
    path: Path
    shown: dict[str, str]  # sha256 of each file shown whole, keyed by its workspace path


def open_workspace(store: SessionStore, state: SessionState) -> Workspace:
    folder = Path(state.workspace)
    if not folder.is_dir():
        raise SessionError(f"The workspace of session {state.session_id} is gone: {folder}")
    return Workspace(folder, protected=store.agent_dirs)


def write_outbox(
    store: SessionStore, state: SessionState, token_budget: int = TOKEN_BUDGET
) -> WrittenOutbox:
    """Render the session's current outbox from the workspace as it is now, and write it.

    Over ``token_budget``, the largest file views are shown in smaller windows first.
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
    return WrittenOutbox(store.write_outbox(state.session_id, state.sequence_number, text), shown)


def next_outbox(store: SessionStore, state: SessionState, token_budget: int = TOKEN_BUDGET) -> Path:
    """:func:`write_outbox`, the digests of the files it shows kept in ``state`` (not saved)."""
    path, shown = write_outbox(store, state, token_budget)
    state.shown_files |= shown
    return path


def ensure_outbox(store: SessionStore, state: SessionState) -> Path:
    """The current outbox; if someone deleted it, it is rewritten and the digests of the files
    it now shows are kept in ``state`` and saved, unless the saved state has moved on meanwhile
    (``show`` holds no lock: a watcher may have committed a turn since ``state`` was loaded)."""
    path = store.outbox_path(state.session_id, state.sequence_number)
    if path.exists():
        return path
    path = next_outbox(store, state)
    saved = store.load(state.session_id)
    if (saved.sequence_number, saved.updated_at) == (state.sequence_number, state.updated_at):
        store.save(state)
    return path


def _fit(state: SessionState, context: OutboxContext, token_budget: int) -> str:
    """The outbox text within the token budget, as far as it can be brought there.

    First the largest file views are windowed down, all views of the largest window at once
    (so a few renders, however many views), to ``MIN_WINDOW`` lines; then the results and
    search results that do not fit are left out, with a line saying how many.  Only the
    fixed parts (protocol, listing, the shortest views) can leave a prompt over budget.
    """
    text = render_outbox(state, context)
    views = list(context.file_views)
    while estimate_tokens(text) > token_budget:
        shrinkable = [i for i, v in enumerate(views) if v.text and v.window > MIN_WINDOW]
        if not shrinkable:
            break
        widest = max(views[i].window for i in shrinkable)
        for i in shrinkable:
            if views[i].window == widest:
                views[i] = replace(views[i], window=max(MIN_WINDOW, widest // 2))
        context = replace(context, file_views=views)
        text = render_outbox(state, context)
    if estimate_tokens(text) <= token_budget:
        return text
    return _cut_results(state, context, token_budget)


def _cut_results(state: SessionState, context: OutboxContext, token_budget: int) -> str:
    """The outbox with as many results, then search results, as fit in the budget."""
    bare = state.model_copy(update={"last_results": [], "search_results": []})
    room = token_budget * 4 - len(render_outbox(bare, context)) - 200  # 200: the two notes
    results = _fitting([len("\n".join(r.lines())) + 1 for r in state.last_results], room)
    room -= sum(len("\n".join(r.lines())) + 1 for r in state.last_results[:results])
    searches = _fitting([len(s) + 2 for s in state.search_results], room)
    shown = state.model_copy(
        update={
            "last_results": state.last_results[:results],
            "search_results": state.search_results[:searches],
        }
    )
    omitted = replace(
        context,
        results_omitted=len(state.last_results) - results,
        searches_omitted=len(state.search_results) - searches,
    )
    return render_outbox(shown, omitted)


def _fitting(sizes: list[int], room: int) -> int:
    """How many of the first ``sizes`` fit in ``room``."""
    count = 0
    for size in sizes:
        if size > room:
            break
        room -= size
        count += 1
    return count


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
