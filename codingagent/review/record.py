"""The held review (docs/review.md): a reply whose file changes wait for the user's decision,
kept in ``sessions/<id>/review/``: the reply as ``reply.txt``, the review as ``review.json``.

``review.json`` is written last, atomically, after the reply: a review is held exactly while
it exists and names the session's current prompt, so a kill at any instant leaves either no
review (the reply is still where it came from, ``inbox/`` or the page) or the whole of it.
Nothing in the workspace is written while it is held. The decision is written into it before
the turn that applies it begins: a turn a crash interrupts is applied again with the same
decision (:mod:`codingagent.session.recovery`). Once its turn is committed, or the review is
discarded, the folder is set aside (``reviewed/``, ``discarded/``): nothing is deleted.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codingagent.fsio import atomic_write
from codingagent.records.history import TurnRecord, keep_reply, kept_rendered
from codingagent.records.hunks import Hunk
from codingagent.records.store import SessionStore
from codingagent.review.proposal import Proposal, ProposedFile
from codingagent.state import CommandResult, SessionState, damaged, utc_now

SHOWN_LINES = 200  # lines of a deleted file a review shows (nothing of it is needed to decide)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)  # built when first used


class HeldHunk(_Model):
    """One hunk of a held file: ``number`` as the user names it (``2.1``), its unified lines,
    and the old and new lines (with their endings) that apply it."""

    number: str
    header: str
    body: list[str]
    old_start: int
    old: list[str]
    new_start: int
    new: list[str]
    added: tuple[int, int] | None = None  # lines of the LLM's version it adds, 1-based
    removed: tuple[int, int] | None = None  # lines of the file as it was it removes

    def hunk(self) -> Hunk:
        return Hunk(self.old_start, tuple(self.old), self.new_start, tuple(self.new), ())


class HeldFile(_Model):
    """One file of a held review, numbered in the reply's order (``1``, ``2``)."""

    number: str
    path: str  # its real relative path
    shown: str  # as the LLM first wrote it
    change: str  # created, changed or deleted
    whole: bool  # one hunk, all or nothing: a new file, a deleted one, one not text
    before_sha256: str | None  # what the decision must find there (None: no file)
    lines: int  # lines of the new file, or of the deleted one
    first: int  # the index, in the reply, of the command that first changes it
    hunks: list[HeldHunk]
    after: str | None = None  # a whole file's new content (its one hunk holds no lines to apply)


class Decision(_Model):
    """The user's decision: the hunks accepted (by number), the note, when."""

    accepted: list[str]
    note: str = ""
    decided_at: datetime = Field(default_factory=utc_now)


class IndexedResult(_Model):
    index: int  # the command's index in the reply
    result: CommandResult
    touched: list[str] = Field(default_factory=list)  # the real paths it changes


class HeldReview(_Model):
    """A reply held for review: where it came from, what admission told the model about it,
    what its file commands would do, and the decision once there is one."""

    id: str
    session_id: str
    sequence: int  # the prompt the reply answers
    source: str
    answers: int | None = None
    tool_bound: bool = False
    rendered: bool = False
    size: int | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    told: list[str] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utc_now)
    commands: list[str]  # each command of the reply as NAME@line: it must parse the same
    results: list[IndexedResult]
    files: list[HeldFile]
    decision: Decision | None = None

    @property
    def hunk_count(self) -> int:
        return sum(len(f.hunks) for f in self.files)

    def summary(self) -> str:
        """``2 files, 3 hunks``."""
        files, hunks = len(self.files), self.hunk_count
        return f"{files} file{'s' if files != 1 else ''}, {hunks} hunk{'s' if hunks != 1 else ''}"

    def failed(self) -> list[CommandResult]:
        """The file commands that fail whatever is decided (a REPLACE whose text is not
        found): their results, as the turn will give them."""
        return [entry.result for entry in self.results if not entry.result.success]

    def as_json(self) -> dict[str, Any]:
        """What the page and ``codingagent review --json`` show."""
        return {
            "id": self.id,
            "session": self.session_id,
            "sequence": self.sequence,
            "source": self.source,
            "summary": self.summary(),
            "files": [
                {
                    "number": f.number,
                    "path": f.shown,
                    "change": f.change,
                    "whole": f.whole,
                    "lines": f.lines,
                    "hunks": [
                        {"number": h.number, "header": h.header, "lines": h.body} for h in f.hunks
                    ],
                }
                for f in self.files
            ],
            "failed": [result.headline for result in self.failed()],
            "createdAt": self.created_at.isoformat(),
        }


def held_review(
    state: SessionState,
    source: str,
    commands: list[str],
    proposal: Proposal,
    **reply: Any,
) -> HeldReview:
    """The review of ``proposal`` for the session's current prompt; ``reply``: the reply's
    ``answers``, ``tool_bound``, ``rendered``, ``size``, ``meta`` and ``told``."""
    files = [_held_file(str(n), f) for n, f in enumerate(proposal.files, 1)]
    fingerprint = hashlib.sha256("\n".join(commands).encode()).hexdigest()[:8]
    return HeldReview(
        id=f"{state.session_id}:{state.sequence_number}:{fingerprint}",
        session_id=state.session_id,
        sequence=state.sequence_number,
        source=source,
        commands=commands,
        results=[
            IndexedResult(index=n, result=r, touched=list(proposal.touched.get(n, ())))
            for n, r in sorted(proposal.results.items())
        ],
        files=files,
        **reply,
    )


def _held_file(number: str, proposed: ProposedFile) -> HeldFile:
    text = proposed.after if proposed.after is not None else proposed.before
    lines = (text or b"").count(b"\n") + (1 if text and not text.endswith(b"\n") else 0)
    held = []
    for n, hunk in enumerate(proposed.hunks, 1):
        body = list(hunk.body)
        deleted, whole = proposed.change == "deleted", proposed.whole
        if deleted and len(body) > SHOWN_LINES:
            body = [*body[:SHOWN_LINES], f"... ({len(body) - SHOWN_LINES:,} more lines)"]
        held.append(
            HeldHunk(
                number=f"{number}.{n}",
                header=hunk.header,
                body=body,
                old_start=hunk.old_start,
                old=[] if whole else list(hunk.old),
                new_start=hunk.new_start,
                new=[] if whole else list(hunk.new),
                added=hunk.changed_lines(),
                removed=hunk.removed_lines(),
            )
        )
    before, after = proposed.before, proposed.after
    return HeldFile(
        number=number,
        path=proposed.path,
        shown=proposed.shown,
        change=proposed.change,
        whole=proposed.whole,
        before_sha256=None if before is None else hashlib.sha256(before).hexdigest(),
        lines=lines,
        first=proposed.first,
        hunks=held,
        after=after.decode("utf-8") if proposed.whole and after is not None else None,
    )


# --- on disk --------------------------------------------------------------------------------


def folder(store: SessionStore, session_id: str) -> Path:
    return store.review_path(session_id).parent


def save(store: SessionStore, held: HeldReview, reply: bytes | None = None) -> None:
    """Keep ``held`` (and the ``reply`` it holds, when given: written first)."""
    where = folder(store, held.session_id)
    where.mkdir(parents=True, exist_ok=True)
    if reply is not None:
        keep_reply(where, reply, held.rendered)
    atomic_write(store.review_path(held.session_id), held.model_dump_json(indent=1))


def load(store: SessionStore, session_id: str) -> HeldReview | None:
    """The review kept for the session, whichever prompt it names; None when there is none."""
    path = store.review_path(session_id)
    try:
        return HeldReview.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValidationError as e:
        raise damaged(path, e, "a valid review file") from None


def current(store: SessionStore, state: SessionState) -> HeldReview | None:
    """The review held for the session's current prompt; None when none is."""
    held = load(store, state.session_id)
    if held is None or held.sequence != state.sequence_number or state.is_complete:
        return None
    return held


def reply_of(store: SessionStore, session_id: str) -> tuple[bytes, bool]:
    """The held reply's bytes, and whether it was read from a rendered page."""
    path = folder(store, session_id) / TurnRecord.REPLY
    return path.read_bytes(), kept_rendered(path)


def set_aside(store: SessionStore, session_id: str, kind: str) -> Path | None:
    """Move the review out of the way (``reviewed``, ``discarded``, ``stale``); where to."""
    where = folder(store, session_id)
    if not where.exists():
        return None
    return store.set_aside(session_id, where, kind)
