"""One read model of a session, for every front end: the CLI (``show``, ``log``, ``sessions
--json``, ``diff``), the page and the relay read a session here, and only format what they get.

- :func:`standing`: the session as it stands: its state, the prompt it waits on (rewritten
  from the workspace when someone deleted it), the review it holds, whether a turn was
  interrupted. It is read under the session's lock when no one else holds it; a watcher that
  holds it keeps its prompt, and what a rewritten prompt shows is kept in the state only under
  the lock.
- :func:`full_prompt`: the prompt with the full PROTOCOL, Environment and listing, for a new
  chat; the prompt file is left as it is.
- :func:`turns`: each committed turn as its record says (meta, results, commands, what a
  reasoning model thought); :func:`diffs`: each turn's diffs by the one rule of
  :mod:`codingagent.records.changeset`; :func:`patch`: the session's (or a turn's) change as one
  patch.

Nothing here changes the session but the rewritten prompt. The prompt and review wings are
loaded only where they are read: ``log`` and ``diff`` start without them."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codingagent.records import changeset
from codingagent.records.history import TurnRecord
from codingagent.records.store import SessionStore, open_workspace
from codingagent.state import SessionState

if TYPE_CHECKING:
    from codingagent.prompt.render import PromptOptions
    from codingagent.records.changeset import FileDiff
    from codingagent.review.record import HeldReview


@dataclass(frozen=True)
class Standing:
    """A session as it stands: ``outbox`` is the prompt it waits on (None once complete, or
    while the LLM's question waits for an answer)."""

    state: SessionState
    outbox: Path | None
    review: HeldReview | None
    interrupted: bool  # a turn's journal is there: ``resume`` finishes it

    @property
    def prompt(self) -> str | None:
        return None if self.outbox is None else self.outbox.read_text(encoding="utf-8")


def standing(
    store: SessionStore,
    session_id: str,
    prompt: PromptOptions | None = None,
    with_prompt: bool = True,
) -> Standing:
    """The session ``session_id`` as it stands; ``prompt``: how a deleted prompt is written
    again (by default, as the settings' defaults say); ``with_prompt`` False: its prompt file
    is neither read nor written (``outbox`` None: ``show --full`` writes a prompt of its own)."""
    from codingagent.prompt.outbox import ensure_outbox
    from codingagent.prompt.render import DEFAULT_PROMPT
    from codingagent.session.reviewing import current

    with store.held_if_free(session_id) as held:
        state = store.load(session_id)
        waiting = state.is_complete or state.question is not None or not with_prompt
        outbox = None if waiting else ensure_outbox(store, state, prompt or DEFAULT_PROMPT, held)
    interrupted = store.journal_path(session_id).exists()
    return Standing(state, outbox, current(store, session_id, state), interrupted)


def full_prompt(store: SessionStore, state: SessionState, prompt: PromptOptions) -> str:
    """The session's current prompt with the full PROTOCOL, Environment and listing."""
    from codingagent.prompt.outbox import prompt_text

    return prompt_text(store, state, replace(prompt, full_protocol=True))[0]


def states(store: SessionStore) -> list[SessionState]:
    """Every session's state, most recently updated first."""
    return [store.load(session_id) for session_id in store.ids()]


@dataclass(frozen=True)
class Turn:
    """One committed turn as its record (``sessions/{id}/turns/NNNN/``) says."""

    record: TurnRecord

    @functools.cached_property
    def meta(self) -> dict[str, Any]:
        return self.record.meta()

    @functools.cached_property
    def results(self) -> list[dict[str, Any]]:
        return self.record.results()

    @functools.cached_property
    def commands(self) -> list[dict[str, Any]]:
        return self.record.commands()

    @property
    def messages(self) -> list[str]:
        """The MESSAGE texts of its reply, in order."""
        return [c["text"] for c in self.commands if c.get("kind") == "MESSAGE"]

    @property
    def thinking(self) -> str:
        """What a reasoning model thought before its reply ("" if nothing, or unreadable):
        never run (docs/protocol.md)."""
        kept = self.meta.get("thinking")
        if kept:
            return str(kept)
        try:
            text = self.record.reply_path.read_bytes().decode("utf-8", "replace")
        except OSError:
            return ""
        from codingagent.protocol.reasoning import split_reasoning  # (only `log` shows it)

        return split_reasoning(text).thinking


def turns(store: SessionStore, state: SessionState) -> list[Turn]:
    """The session's committed turns, oldest first."""
    folders = store.turns(state.session_id, state.sequence_number)
    return [Turn(TurnRecord(folder)) for folder in folders]


def diffs(store: SessionStore, state: SessionState, read: list[Turn]) -> list[list[FileDiff]]:
    """What each of the turns ``read`` (:func:`turns`) changed, in order, one diff a file; a
    SessionError when the workspace is gone."""
    folders = [turn.record.folder for turn in read]
    return changeset.session_diffs(open_workspace(store, state), folders)


def patch(store: SessionStore, session_id: str, turn: int | None = None) -> tuple[str, list[str]]:
    """What the session (or only its turn ``turn``) changed as one git-style patch, and the
    files it cannot carry (not text); a SessionError when it has no such turn."""
    return changeset.patch(changeset.changes(store, session_id, turn))
