"""A review decided (docs/review.md): which hunks the user accepted, what each file becomes,
and the turn's file commands as steps that write just that.

The user names what to accept: ``all``, a file (``2``: all its hunks) or a hunk (``2.1``);
everything else is rejected, with the note. The turn then runs the whole reply as any turn
does (:func:`codingagent.execute.execute`), each file command replaced by its step: the
command that first changes a file writes the file as reviewed (the old text with the accepted
hunks), through the journaled writes of the turn, so undo and diff see an ordinary turn; each
file command's result is its result in the review, failed where the user rejected any of what
it changed. The other commands (RUN_COMMAND, DONE, the check) run in their places, on what was
written."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from codingagent.execute.context import CommandFailed, Success, Turn, remove, write
from codingagent.protocol.commands import plural
from codingagent.records.hunks import apply
from codingagent.review.record import Decision, HeldFile, HeldHunk, HeldReview, IndexedResult
from codingagent.state import Rejected, SessionError

SHOWN_LINES = 60  # lines of a rejected hunk the next prompt shows

Step = Callable[[Turn], Success]


@dataclass(frozen=True)
class Choice:
    """What the user decided: what they accept (``all``, ``1``, ``2.1``; the rest is
    rejected) and their note for the LLM; or to drop the reply unapplied."""

    accepted: tuple[str, ...] = ()
    note: str = ""
    discard: bool = False  # drop the reply instead: nothing of it is applied


def accepted_hunks(held: HeldReview, accepted: Sequence[str]) -> list[str]:
    """The numbers of the hunks ``accepted`` names, in review order; a SessionError naming
    the first number that is none of the review's."""
    files = {f.number: f for f in held.files}
    hunks = {h.number for f in held.files for h in f.hunks}
    chosen: set[str] = set()
    for given in accepted:
        spec = given.strip().lower()
        if spec == "all":
            chosen |= hunks
        elif spec in files:
            chosen |= {h.number for h in files[spec].hunks}
        elif spec in hunks:
            chosen.add(spec)
        else:
            raise SessionError(f"There is no {given!r} in this review: {_numbers(held)}")
    return [h.number for f in held.files for h in f.hunks if h.number in chosen]


def _numbers(held: HeldReview) -> str:
    parts = []
    for f in held.files:
        hunks = [h.number for h in f.hunks]
        parts.append(f"{f.number} ({f.shown}: {', '.join(hunks)})")
    return "its files and hunks are " + "; ".join(parts) + ", or all"


@dataclass
class Decided:
    """A review and its decision, worked out against the files as they are: what each file
    becomes (absent: left as it is), what was rejected, and the turn's steps."""

    held: HeldReview
    decision: Decision
    images: dict[str, bytes | None] = field(default_factory=dict)  # real path -> new content
    status: dict[str, str] = field(default_factory=dict)  # accepted, rejected or partly
    rejected: list[Rejected] = field(default_factory=list)

    @property
    def note(self) -> str | None:
        return self.decision.note.strip() or None

    @property
    def partly(self) -> list[str]:
        """The files written with some of their hunks only (as the LLM wrote their paths)."""
        return [f.shown for f in self.held.files if self.status[f.path] == "partly"]

    def meta(self) -> dict[str, Any]:
        """What the turn's meta.json keeps of the review."""
        return {
            "id": self.held.id,
            "accepted": self.decision.accepted,
            "note": self.decision.note,
            "files": {f.shown: self.status[f.path] for f in self.held.files},
            "decidedAt": self.decision.decided_at.isoformat(),
        }

    def steps(self) -> dict[int, Step]:
        """Each file command's step, by its index in the reply."""
        firsts: dict[int, list[HeldFile]] = {}
        for f in self.held.files:
            firsts.setdefault(f.first, []).append(f)
        return {
            entry.index: self._step(entry, firsts.get(entry.index, []))
            for entry in self.held.results
        }

    def _step(self, entry: IndexedResult, first_here: list[HeldFile]) -> Step:
        """The step of the file command ``entry``: it writes the files it first changes
        (``first_here``) as decided, and gives its result in the review."""
        files = {f.path: f for f in self.held.files}

        def step(turn: Turn) -> Success:
            for f in first_here:
                if f.path not in self.images:
                    continue  # rejected: left as it is
                image = self.images[f.path]
                if image is None:
                    remove(f.shown, turn)
                else:
                    write(f.shown, image.decode("utf-8"), turn, unmask=False)
            result = entry.result
            if not result.success:
                raise CommandFailed(result.summary, result.output)
            not_taken = [
                _rejection_name(files[path], self)
                for path in entry.touched
                if path in files and self.status[path] != "accepted"
            ]
            if not not_taken:
                return Success(result.summary, result.output)
            rejected = "; ".join(not_taken)
            raise CommandFailed(
                f"{result.summary}; the user rejected {rejected}: see The User's Review",
                result.output,
            )

        return step


def decide(held: HeldReview, decision: Decision, before: Mapping[str, bytes | None]) -> Decided:
    """``held`` decided as ``decision`` says, against the files as they are now (``before``:
    each held file's bytes, None when absent); :class:`Stale` when one of them changed since
    the review was made."""
    changed = [f.shown for f in held.files if _digest(before.get(f.path)) != f.before_sha256]
    if changed:
        raise Stale(changed)
    chosen = set(decision.accepted)
    decided = Decided(held, decision)
    for f in held.files:
        taken = [n for n, h in enumerate(f.hunks) if h.number in chosen]
        whole = len(taken) == len(f.hunks)
        decided.status[f.path] = "accepted" if whole else "partly" if taken else "rejected"
        if taken:
            decided.images[f.path] = _image(f, before.get(f.path), taken)
        decided.rejected += [_rejected(f, h) for h in f.hunks if h.number not in chosen]
    return decided


class Stale(SessionError):
    """Files of the review changed since it was made: it must be made again."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        named = ", ".join(f"'{p}'" for p in paths)
        super().__init__(
            f"{named} changed since the review was made, so the review was made again from the "
            "files as they are now: look at it again (codingagent review) and decide"
        )


def _image(f: HeldFile, before: bytes | None, taken: list[int]) -> bytes | None:
    """What the file becomes with its hunks ``taken`` (indexes) applied."""
    if f.change == "deleted":
        return None
    if f.whole:
        return (f.after or "").encode("utf-8")
    text = (before or b"").decode("utf-8")
    return apply(text, [h.hunk() for h in f.hunks], set(taken)).encode("utf-8")


def _rejected(f: HeldFile, hunk: HeldHunk) -> Rejected:
    lines = [line for line in (hunk.header, *hunk.body) if line]
    if len(lines) > SHOWN_LINES:
        lines = [*lines[:SHOWN_LINES], f"... ({len(lines) - SHOWN_LINES:,} more lines)"]
    return Rejected(path=f.shown, what=_what(f, hunk), lines=lines)


def _what(f: HeldFile, hunk: HeldHunk) -> str:
    if f.change == "created":
        return f"the new file ({plural(f.lines, 'line')}): not created"
    if f.change == "deleted":
        return "its deletion: the file is still there"
    if f.whole:
        return "the new content (the file is not text): not written"
    if hunk.added and hunk.removed:
        where = f"{_span(hunk.added)} of your version, in place of {_span(hunk.removed)}"
    elif hunk.added:
        where = f"{_span(hunk.added)} of your version, added"
    else:
        where = f"{_span(hunk.removed or (0, 0))} of the file, removed by your version"
    n, count = hunk.number.split(".")[1], len(f.hunks)
    return f"hunk {n} of {count} ({where})"


def _rejection_name(f: HeldFile, decided: Decided) -> str:
    if decided.status[f.path] == "rejected":
        return f"all of the change to '{f.shown}' (not written)"
    numbers = [h.number for h in f.hunks if h.number not in decided.decision.accepted]
    hunks = f"hunk{'s' if len(numbers) > 1 else ''} {', '.join(numbers)}"
    return f"part of the change to '{f.shown}' ({hunks}; the rest was written)"


def _span(lines: tuple[int, int]) -> str:
    first, last = lines
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()
