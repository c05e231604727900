"""One prompt composed for a session: the requested file views read from the workspace, the
listing, the results, the Environment section, rendered (:mod:`.render`) and fitted to the
token budget (file views windowed first, then results cut), then masked for secrets."""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from dataclasses import replace

from codingagent.prompt.changes import listing_change
from codingagent.prompt.fitting import BYTES_PER_TOKEN, fit_prompt
from codingagent.prompt.instructions import (
    HEADING,
    instruction_files,
    instructions_text,
    working_paths,
)
from codingagent.prompt.mapview import folder_map, map_section, map_tokens
from codingagent.prompt.pointing.pointed import (
    CHARS_PER_TOKEN,
    PASTED_LEAST_TOKENS,
    PASTED_PROMPT_TOKENS,
    Pointed,
    pointed_tokens,
    pointer,
)
from codingagent.prompt.render import (
    VIEW_LINES,
    FileView,
    OutboxContext,
    PromptOptions,
    digest,
    environment_section,
    estimate_tokens,
    render_outbox,
)
from codingagent.secrecy import masking
from codingagent.secrecy.secret_files import SKIP_DIRS, secret_files
from codingagent.state import FileRange, ReadRequest, SessionState
from codingagent.workspace import Listing, PathRejected, Workspace
from codingagent.workspace.listing import UNSIZED
from codingagent.workspace.text import decoded

LISTING_FILES = 200_000  # files the listing walk keeps; beyond, they are only counted
LISTING_SIZES = 20_000  # files the listing walk stats for their sizes; beyond, sizes unknown
MIN_WINDOW = 20  # lines of a file view that over-budget windowing keeps
FILE_READ_CAP = 8 * 1024 * 1024  # bytes of one requested file read to show a window of it
PROMPT_HEADING = "=== PROMPT ==="
MASKS_NOTE = (
    "## Masked Secrets\n"
    "Secrets are shown as [masked: kind id]. Keep such a mask exactly as it is when you write "
    "the line back (CREATE_FILE, EDIT_FILE, REPLACE): the agent puts the secret back. Never "
    "write a mask that you did not see."
)


def _fit(state: SessionState, context: OutboxContext, prompt: PromptOptions) -> str:
    """The outbox text within the token budget, as far as it can be brought there.

    First the largest file views are windowed down, all views of the largest window at once
    (so a few renders, however many views), to ``MIN_WINDOW`` lines; then the results and
    search results that do not fit are left out, with a line saying how many.  Only the
    fixed parts (protocol, listing, the shortest views) can leave a prompt over budget.
    """
    text = render_outbox(state, context, prompt)
    views = list(context.file_views)
    while estimate_tokens(text) > prompt.token_budget:
        shrinkable = [i for i, v in enumerate(views) if v.text and v.window > MIN_WINDOW]
        if not shrinkable:
            break
        widest = max(views[i].window for i in shrinkable)
        for i in shrinkable:
            if views[i].window == widest:
                views[i] = replace(views[i], window=max(MIN_WINDOW, widest // 2))
        context = replace(context, file_views=views)
        text = render_outbox(state, context, prompt)
    if estimate_tokens(text) <= prompt.token_budget:
        return text
    return _cut_results(state, context, prompt)


def _cut_results(state: SessionState, context: OutboxContext, prompt: PromptOptions) -> str:
    """The outbox with as many results, then search results, as fit in the budget."""
    bare = state.model_copy(update={"last_results": [], "search_results": []})
    room = (
        prompt.token_budget * 4 - len(render_outbox(bare, context, prompt)) - 200
    )  # 200: the two notes
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
    return render_outbox(shown, omitted, prompt)


def _fitting(sizes: list[int], room: int) -> int:
    """How many of the first ``sizes`` fit in ``room``."""
    count = 0
    for size in sizes:
        if size > room:
            break
        room -= size
        count += 1
    return count


def _file_view(
    ws: Workspace, request: ReadRequest, files: list[tuple[str, int]]
) -> tuple[FileView, str | None]:
    """The view of a requested file, and the sha256 of what it shows, if it shows all of it.
    A folder's view holds the files of the listing ``files`` below it.

    Only the first ``FILE_READ_CAP`` bytes are read: the view shows a window of a file anyway.
    """
    if isinstance(request, str):
        path, start, end = request, None, None
    else:
        path, start, end = request.path, request.start_line, request.end_line
    if ws.is_dir(path):
        base = _shown_key(ws, path).strip("/")
        base = f"{base}/" if base not in ("", ".") else ""
        below = [entry for entry in files if entry[0].startswith(base)]
        return FileView(path, None, folder=below, base=base), None
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
    text = decoded(data, whole=digest is not None)
    note = "; ".join(filter(None, (text.note, note)))
    return FileView(path, text.text, note, start, end), digest


def _map_view(
    ws: Workspace, path: str, state: SessionState, prompt: PromptOptions, listing: Listing
) -> FileView:
    """READ_FILE ``map="true"``: the code map of a folder or file (docs/prompts.md)."""
    rel = _shown_key(ws, path).strip("/") or "."
    made = folder_map(ws.root, listing, state, rel, prompt.cache_dir)
    return FileView(path, None, code_map=made.text)


def _size_of(ws: Workspace, path: str) -> int:
    """The size of a listed file the walk did not stat (UNSIZED if it cannot be had)."""
    try:
        return ws.file_size(path)
    except (OSError, PathRejected):
        return UNSIZED


def _shown_key(ws: Workspace, path: str) -> str:
    """The key of ``state.shown_files`` for a path as the LLM wrote it: its real path."""
    try:
        return ws.relpath(path)
    except (OSError, PathRejected):
        return path


def _listing_lines(
    state: SessionState, prompt: PromptOptions, files: list[tuple[str, int]], views: list[FileView]
) -> list[str] | None:
    """The Workspace Files lines of this prompt (None: the full listing), what the model then
    knows of the listing kept in ``state`` (see :mod:`codingagent.prompt.changes`)."""
    since = state.listed_sequence
    if prompt.full_protocol or since is None or since >= state.sequence_number:
        since = None  # the first prompt, one written again, a prompt for a new chat
    change = listing_change(files, state.listed, state.listed_digest, since)
    whole = any(view.folder is not None and view.base == "" for view in views)
    lines = ["(every file is listed under Requested File Contents)"] if whole else change.lines
    if lines is None or whole or not lines[0].startswith("(unchanged"):
        state.listed_sequence = state.sequence_number
    state.listed, state.listed_digest = change.known, change.digest
    return lines


def compose(
    ws: Workspace, state: SessionState, prompt: PromptOptions
) -> tuple[str, dict[str, str], Counter[str]]:
    """The session's current prompt as it is written to ``outbox/``; the sha256 of each file
    it shows whole; how many secrets of each kind were masked in it.

    Over ``prompt.token_budget``, the largest file views are shown in smaller windows first.
    With ``prompt.context_tokens`` (a chat's window), the prompt is then fitted to it
    (:mod:`codingagent.prompt.fitting`). With ``prompt.mask_secrets`` (setting
    ``mask_secrets``), secrets in it are masked.
    """
    listing = ws.list_files(limit=LISTING_FILES, sizes=LISTING_SIZES)
    views = []
    shown = {}
    named = set(state.named_files) if state.named_sequence == state.sequence_number else set()
    for request in state.read_file_requests:
        if isinstance(request, FileRange) and request.map:
            views.append(_map_view(ws, request.path, state, prompt, listing))
            continue
        view, seen = _file_view(ws, request, listing.entries)
        if view.path in named and view.text is not None:  # named up front: shown whole
            view = replace(view, window=max(VIEW_LINES, view.text.count("\n") + 1))
        views.append(view)
        if seen is not None:
            shown[_shown_key(ws, view.path)] = seen
    context = OutboxContext(
        files=listing.entries,
        omitted=listing.omitted,
        file_views=views,
        size_of=functools.partial(_size_of, ws),
        listing=_listing_lines(state, prompt, listing.entries, views),
        instructions=_instructions(ws, state, prompt, listing.entries),
    )
    _note_secret_files(ws, state, prompt)
    environment = environment_section(state, prompt)
    if environment is not None:
        state.environment_digest = digest(environment)
        state.environment_sequence = state.sequence_number
    context, prompt = _code_map(ws, state, prompt, listing, shown, context)
    text = _fit(state, context, prompt)
    kinds: Counter[str] = Counter()
    if prompt.mask_secrets:
        text, kinds = masking.for_session(state.session_id).mask(text)
    if kinds:
        text = text.replace(f"\n\n{PROMPT_HEADING}", f"\n\n{MASKS_NOTE}\n\n{PROMPT_HEADING}", 1)
    if prompt.window_budget is not None:  # a chat with a known window (docs/models.md)
        text, _ = fit_prompt(text, prompt.window_budget)
    return text, shown, kinds


def _note_secret_files(ws: Workspace, state: SessionState, prompt: PromptOptions) -> None:
    """The workspace's secret files as they are now, in ``state.environment`` for the
    Environment section; the session learns the secrets in the workspace's files, source
    code included, before the prompt is masked (docs/secrets.md)."""
    masker = masking.for_session(state.session_id) if prompt.mask_secrets else None
    if state.environment is None and masker is None:
        return
    allow, tree = prompt.secret_files_allow, ws.tree
    found = secret_files(ws.root, allow, masker, tree.stats(SKIP_DIRS), tree.version)
    if state.environment is None:
        return
    update = {"secret_files": list(found.hidden), "secret_files_allowed": list(found.allowed)}
    state.environment = state.environment.model_copy(update=update)


def _instructions(
    ws: Workspace, state: SessionState, prompt: PromptOptions, files: list[tuple[str, int]]
) -> str | None:
    """The Project Instructions section, if this prompt shows it (the first prompt, one
    written again, ``show --full``, and one after the text changed); its digest is kept in
    ``state`` (:mod:`codingagent.prompt.instructions`)."""
    listed = (path for path, _ in files)
    paths = instruction_files(listed, working_paths(state), prompt.instructions)
    body = instructions_text(ws, paths, prompt.instructions_chars)
    if body is None:
        if state.instructions_digest is None:
            return None
        body = "(none any more: the instruction files shown before are gone)"
    now = digest(body)
    known = state.instructions_digest
    if not (
        prompt.full_protocol
        or state.sequence_number == 1
        or state.instructions_sequence == state.sequence_number
        or known != now
    ):
        return None
    changed = known is not None and known != now and state.sequence_number > 1
    state.instructions_digest, state.instructions_sequence = now, state.sequence_number
    return f"{HEADING}{' (changed since you last saw them)' if changed else ''}\n{body}"


def _code_map(
    ws: Workspace,
    state: SessionState,
    prompt: PromptOptions,
    listing: Listing,
    shown: dict[str, str],
    context: OutboxContext,
) -> tuple[OutboxContext, PromptOptions]:
    """``context`` with the Code Map section of a first prompt (and of ``show --full``), and
    after it the Code the Task Points At section (:mod:`codingagent.prompt.pointing.pointed`), whose
    files' digests go into ``shown``; a pasted chat's first prompt within
    ``PASTED_PROMPT_TOKENS`` (:func:`_pasted_room`), with the options it is rendered with."""
    if state.sequence_number != 1 and not prompt.full_protocol:
        return context, prompt
    window = prompt.model_window or prompt.context_tokens
    made = map_section(
        ws.root, listing, state, map_tokens(prompt.map_tokens, window), prompt.cache_dir
    )
    context = replace(context, code_map=made)
    named = state.named_files if state.named_sequence == state.sequence_number else []
    tokens = pointed_tokens(window, failing=state.check_failure is not None)
    evidence = pointer(ws, listing, state, prompt.cache_dir) if tokens > 0 else None
    pointed = evidence.section(tokens, named) if evidence is not None else Pointed(None)
    if evidence is not None and pointed.text is not None and window is None:  # a pasted chat
        prompt, fewer = _pasted_room(state, context, prompt, pointed.text)
        if fewer is not None:  # the same evidence, fitted to fewer tokens
            pointed = evidence.section(min(tokens, fewer), named)
    shown.update(pointed.shown)
    text = "\n\n".join(part for part in (made, pointed.text) if part) or None
    return replace(context, code_map=text), prompt


def _pasted_room(
    state: SessionState, context: OutboxContext, prompt: PromptOptions, text: str
) -> tuple[PromptOptions, int | None]:
    """The options and the section's tokens (None: as it is) that keep a pasted chat's
    first prompt under ``PASTED_PROMPT_TOKENS`` by the window fitting's bound (three bytes a
    token), its section ``text``: the listing gives up to half of its characters first,
    then the section shrinks to what the rest leaves, to ``PASTED_LEAST_TOKENS`` at the
    least. The section is filled by characters (four a token) and measured here in bytes: a
    section of text beyond ASCII (two or three bytes a character) gets as much fewer."""
    section = len(text.encode("utf-8", "replace"))
    limit = PASTED_PROMPT_TOKENS * BYTES_PER_TOKEN - 2  # the section joins the map: "\n\n"
    over = _bytes(state, context, prompt) + section - limit
    if over <= 0:
        return prompt, None
    listing = max(prompt.listing_chars // 2, prompt.listing_chars - over)
    prompt = replace(prompt, listing_chars=listing)
    room = limit - _bytes(state, context, prompt)
    if section <= room:
        return prompt, None
    return prompt, max(PASTED_LEAST_TOKENS, room * len(text) // (section * CHARS_PER_TOKEN))


def _bytes(state: SessionState, context: OutboxContext, prompt: PromptOptions) -> int:
    return len(render_outbox(state, context, prompt).encode("utf-8", "replace"))
