"""The next prompt: gather what the outbox shows from the workspace, fit it to the token
budget, and write it to ``outbox/``.

Rendering itself is :mod:`codingagent.prompt.render` (pure); the finished text goes through
the session's :meth:`codingagent.secrecy.masking.Masker.mask` before it is written
(docs/security.md §6: the prompt goes to a third-party chat). :func:`write_outbox` returns the
sha256 of every file it showed whole; the caller keeps them in ``state.shown_files`` (the turn
before its commit point, :func:`ensure_outbox` at once, under the session's lock), so a later
EDIT_FILE is checked against what the LLM really saw."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from codingagent.prompt.compose import compose
from codingagent.prompt.render import DEFAULT_PROMPT, PromptOptions
from codingagent.records.store import CACHE, SessionStore, open_workspace
from codingagent.state import SessionState
from codingagent.workspace import Workspace


class WrittenOutbox(NamedTuple):
    path: Path
    shown: dict[str, str]  # sha256 of each file shown whole, keyed by its workspace path
    masked: int = 0  # secrets masked in it
    masked_kinds: Mapping[str, int] = MappingProxyType(
        {}
    )  # of them, how many of each kind (never the values)


def write_outbox(
    store: SessionStore,
    state: SessionState,
    prompt: PromptOptions = DEFAULT_PROMPT,
    ws: Workspace | None = None,
    *,
    keep_shown: bool = False,
) -> WrittenOutbox:
    """Render the session's current outbox from the workspace as it is now, and write it
    (``ws``: the turn's, whose walk of the tree it shares).

    The digest of the Environment section it shows goes into ``state``, and with
    ``keep_shown`` the digests of the files it shows whole too (the caller saves it).
    """
    text, shown, kinds = prompt_text(store, state, prompt, ws)
    path = store.write_outbox(state.session_id, state.sequence_number, text)
    if keep_shown:
        state.shown_files |= shown
    return WrittenOutbox(path, shown, sum(kinds.values()), dict(sorted(kinds.items())))


def prompt_text(
    store: SessionStore, state: SessionState, prompt: PromptOptions, ws: Workspace | None = None
) -> tuple[str, dict[str, str], Counter[str]]:
    """The session's current prompt as :func:`write_outbox` writes it (see
    :func:`codingagent.prompt.compose.compose`); ``ws``: the turn's, with its walk."""
    if prompt.cache_dir is None:  # the code map's tags, kept for the next prompt and session
        prompt = replace(prompt, cache_dir=store.sessions / CACHE)
    return compose(ws or open_workspace(store, state), state, prompt)


def ensure_outbox(
    store: SessionStore,
    state: SessionState,
    prompt: PromptOptions = DEFAULT_PROMPT,
    keep_digests: bool = True,
) -> Path:
    """The current outbox; if someone deleted it, it is rewritten from the workspace as it is.

    With ``keep_digests`` (the caller holds the session's lock) what it now shows is kept in
    ``state`` and saved, so a later edit is checked against what it shows.
    """
    path = store.outbox_path(state.session_id, state.sequence_number)
    if path.exists():
        return path
    path = write_outbox(store, state, prompt, keep_shown=keep_digests).path
    if keep_digests:
        store.save(state)
    return path
