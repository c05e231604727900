"""What the commands of one reply share while they run, and the one way a command fails.

A handler returns a :class:`Success` or raises :class:`CommandFailed`; the dispatch turns either
into the command's result.  The file helpers here say "not found" and "is a directory" one way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from codingagent.execute.lines import Style
from codingagent.sandbox.shell import Shell
from codingagent.secrecy import masking
from codingagent.secrecy.secret_files import SecretFiles
from codingagent.state import CommandResult, ReadRequest
from codingagent.workspace import PathRejected, Workspace
from codingagent.workspace.snapshot import CommandWatch
from codingagent.workspace.text import decoded, refusal

_CLIP = 60


@dataclass
class TurnOutcome:
    results: list[CommandResult] = field(default_factory=list)
    # Paths as the LLM wrote them, tidied to posix form (with a line range if it gave one);
    # shown in the next outbox.
    read_requests: list[ReadRequest] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # MESSAGE bodies, in order
    done: str | None = None  # the DONE summary, if the session is now complete
    changed: list[str] = field(default_factory=list)  # real relative paths written or deleted
    searches: list[str] = field(default_factory=list)  # SEARCH results, one text block each
    # sha256 of each file's content as the LLM knows it: what it was shown before the turn,
    # updated with what it wrote in the turn (a file it deleted is dropped).
    shown: dict[str, str] = field(default_factory=dict)
    question: str | None = None  # an ASK: the turn ended there, the user must answer
    # What a file command last wrote to each file, while nothing else changed it in the turn
    # (the syntax check and the turn's post-images need not read those files back)
    written: dict[str, str] = field(default_factory=dict)
    # The workspace's secret files as the turn's first RUN_COMMAND found them (docs/secrets.md)
    secret_files: SecretFiles | None = None


# A READ_FILE request by the file it really names: (real relative path, start, end).
ReadKey = tuple[str, int | None, int | None]


@dataclass
class EditRun:
    """Consecutive EDIT_FILE commands on one file."""

    lines_before: int  # line count of the file when the run started
    style: Style  # its line endings, kept by every edit of the run
    text: str  # the file as the run last left it: anything else means another writer
    warning: str  # added to the run's first result, e.g. that its line numbers may be stale
    edits: list[tuple[int, int, int]] = field(default_factory=list)  # (start, end, new lines)

    def clash(self, start: int, end: int) -> tuple[int, int] | None:
        """An earlier range of the run that shares a line with ``start..end`` (an empty range
        ``end = start - 1`` is the gap before ``start``: it clashes only with a range around
        that gap)."""
        for s, e, _ in self.edits:
            if start <= e and s <= end:
                return s, e
        return None

    def shift(self, start: int) -> int:
        """How far line ``start`` of the original file has moved: the growth of every earlier
        edit that ends before it (an insertion at the same gap counts: it stays first)."""
        return sum(added - (e - s + 1) for s, e, added in self.edits if e < start)


@dataclass
class Turn:
    """The commands of one reply as they run."""

    workspace: Workspace
    shell: Shell
    outcome: TurnOutcome
    track_shown: bool  # whether stale line numbers can be noticed (the caller passed `shown`)
    targets: list[str | None]  # the real path each command writes, if it writes one
    last_writes: dict[str, int]  # real path -> index of the last command writing it
    session_id: str = ""  # whose secrets (codingagent.secrecy.masking.for_session)
    index: int = 0
    remaining: int = 0  # commands after the one running now
    runs: dict[str, EditRun] = field(default_factory=dict)
    reads: set[ReadKey] = field(default_factory=set)  # READ_FILE requests, by real path
    search_seconds: float = 0.0  # time the reply's SEARCH commands have taken so far
    # The user's check command: its result after what the turn did so far (run when the turn
    # changed files); DONE is refused while it fails. None without a check.
    check: Callable[[TurnOutcome], CommandResult] | None = None
    # What runs around each RUN_COMMAND to keep what it changes (the turn's capture); None:
    # nothing is kept.
    watch: CommandWatch | None = None

    def mark_changed(self, path: str) -> str:
        rel = self.workspace.relpath(path)
        if rel not in self.outcome.changed:
            self.outcome.changed.append(rel)
        return rel


class Success(NamedTuple):
    """What a command that worked did: its result's summary, and output if it has one."""

    summary: str
    output: str | None = None


class CommandFailed(Exception):
    """A failure the LLM can fix: ``summary`` (and ``output``) become its ``[FAILED]`` result."""

    def __init__(self, summary: str, output: str | None = None) -> None:
        super().__init__(summary)
        self.summary = summary
        self.output = output


def noted(summary: str, note: str, parenthesis: bool = False) -> str:
    """``summary`` with ``note`` added (nothing if ``note`` is empty)."""
    if not note:
        return summary
    return f"{summary} ({note})" if parenthesis else f"{summary}; {note}"


def not_found(path: str) -> CommandFailed:
    return CommandFailed(f"File '{path}' not found")


def is_a_directory(path: str) -> CommandFailed:
    return CommandFailed(f"'{path}' is a directory")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_text(path: str, turn: Turn, editing: bool = True) -> str:
    """The text of a file the LLM edits; fails if it is missing, a folder, or not UTF-8
    (``editing`` False: a file only read, decoded as its view shows it)."""
    text = read_text_if_any(path, turn, editing)
    if text is None:
        raise not_found(path)
    return text


def read_text_if_any(path: str, turn: Turn, editing: bool = True) -> str | None:
    """The text of a file the LLM edits, None if it is missing; fails if it is a folder or
    not UTF-8: an edit never writes a file back re-encoded (``editing`` False: a file only
    read, decoded as its view shows it: :mod:`codingagent.workspace.text`)."""
    if turn.workspace.is_dir(path):
        raise is_a_directory(path)
    try:
        data = turn.workspace.read_bytes(path)
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        if not editing:
            return decoded(data).text
        raise CommandFailed(refusal(path, data)) from None


def write(path: str, text: str, turn: Turn, unmask: bool = True) -> bool:
    """Write a file for the LLM; True if it is new. The LLM knows what it wrote.

    A secret the prompt showed masked, and the LLM wrote back masked, is put back first: a
    file never gets a mask instead of its secret (:mod:`codingagent.secrecy.masking`).
    ``unmask`` False: ``text`` had its masks put back already (a reviewed file: docs/review.md).
    """
    if unmask:
        text = unmasked(path, text, turn)
    created = turn.workspace.write_text(path, text)
    rel = turn.mark_changed(path)
    turn.outcome.shown[rel] = digest(text.encode("utf-8"))
    turn.outcome.written[rel] = text
    return created


def remove(path: str, turn: Turn) -> None:
    """Delete a file for the LLM; it no longer knows a content of it."""
    try:
        turn.workspace.delete(path)
    except FileNotFoundError:
        raise not_found(path) from None
    except IsADirectoryError:
        raise is_a_directory(path) from None
    rel = turn.mark_changed(path)
    turn.outcome.written.pop(rel, None)
    turn.outcome.shown.pop(rel, None)


def unmasked(path: str, text: str, turn: Turn, what: str = "the new content") -> str:
    """``text`` with the secret put back for each mask in it (docs/security.md §6: the prompt showed
    masks, the file holds the secrets); ``what`` names the text in the failure when a mask
    stands for a secret the agent no longer knows."""
    if masking.MARKER not in text:
        return text
    try:
        before = turn.workspace.read_bytes(path).decode("utf-8", errors="replace")
    except (OSError, PathRejected):
        before = ""
    try:
        return masking.for_session(turn.session_id).unmask(text, [before])
    except masking.UnknownMask as e:
        raise CommandFailed(
            f"Not written: {what} of '{path}' contains {e}, which stands for a secret "
            "the agent no longer knows (masks are remembered while the agent runs, and looked "
            "up in the file being replaced); keep the line as the file has it, or write the "
            "value itself"
        ) from None


def clip(text: str) -> str:
    """Quote at most ``_CLIP`` characters of the LLM's text back to it."""
    text = " ".join(text.split())
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."


def fence_note(removed: bool, residue: tuple[str, ...] = ()) -> str:
    """What a body's result says when the parser removed a code fence around it, or the lines
    a chat page adds around a code block (docs/admission.md)."""
    notes = ["removed the code fence around the content"] if removed else []
    if residue:
        lines = ", ".join(f"'{line}'" for line in residue)
        notes.append(f"removed the chat page's {lines} around the code, not part of it")
    return "; ".join(notes)
