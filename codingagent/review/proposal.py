"""What a reply's file commands would do, worked out without writing (docs/review.md): each
file they would change, before and after, as hunks, and each command's result as it would be.

The commands that change files (CREATE_FILE, EDIT_FILE, REPLACE, PATCH, DELETE_FILE) run in
the reply's order, up to an ``[ASK]`` (where a turn ends), through the real handlers
(:mod:`codingagent.execute`) on a :class:`~.scratch.Scratch` of the workspace; the others
(RUN_COMMAND, READ_FILE, DONE, ...) wait for the review's decision. A file is numbered where a
command first changes it; one the commands leave as it was is no change. A new file, a deleted
one and one that was not text are one hunk each: all or nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from codingagent.execute import execute
from codingagent.protocol.commands import Ask, Command
from codingagent.records.hunks import Hunk, hunks
from codingagent.review.scratch import Scratch
from codingagent.sandbox.shell import Shell
from codingagent.state import CommandResult
from codingagent.workspace import PathRejected, Workspace


@dataclass(frozen=True)
class ProposedFile:
    """One file the reply would change: its real relative path, as the LLM first wrote it,
    ``created``, ``changed`` or ``deleted``, its bytes before (None: absent) and after (None:
    deleted), its hunks, and the command (its index in the reply) that first changes it."""

    path: str
    shown: str
    change: str
    before: bytes | None
    after: bytes | None
    hunks: tuple[Hunk, ...]
    first: int

    @property
    def whole(self) -> bool:
        """One hunk, all or nothing: a new file, a deleted one, one that is not text."""
        return self.change != "changed" or _text(self.before) is None


@dataclass(frozen=True)
class Proposal:
    """A reply's file changes: the files, in the order the reply first changes them; the
    result of each file command as it would be (by its index in the reply); and the real paths
    each of them changes."""

    files: tuple[ProposedFile, ...]
    results: Mapping[int, CommandResult]
    touched: Mapping[int, tuple[str, ...]]


def held_commands(commands: Sequence[Command]) -> list[int]:
    """The indexes of the commands a review holds: those that change files, up to an ASK."""
    end = next((n for n, c in enumerate(commands) if isinstance(c, Ask)), len(commands))
    return [n for n, command in enumerate(commands[:end]) if command.writes]


def propose(
    commands: Sequence[Command],
    ws: Workspace,
    protected: tuple[Path, ...],
    shell: Shell,
    shown: Mapping[str, str],
    session_id: str,
) -> Proposal:
    """Run the file commands of ``commands`` on a scratch of ``ws`` (``protected``: the
    agent's own paths, as the workspace fences them); what they would do. ``shown``: what the
    LLM last saw of each file (its stale-line warnings); ``session_id``: whose masked secrets
    are put back."""
    indexes = held_commands(commands)
    scratch = Scratch(ws.root, protected)

    def next_command(result: CommandResult) -> None:
        scratch.command += 1

    outcome = execute(
        [commands[n] for n in indexes],
        scratch,
        shell,
        next_command,
        shown=shown,
        session_id=session_id,
    )
    files = []
    for path, after in scratch.written.items():
        before = _read(ws, path)
        if before == after:
            continue  # written back as it was: no change
        change = "created" if before is None else "deleted" if after is None else "changed"
        first = indexes[scratch.first[path]]
        found = _hunks(before, after)
        files.append(ProposedFile(path, scratch.spelled[path], change, before, after, found, first))
    results = {indexes[k]: result for k, result in enumerate(outcome.results)}
    touched = {indexes[k]: tuple(paths) for k, paths in scratch.touched.items()}
    return Proposal(tuple(files), results, touched)


def _hunks(before: bytes | None, after: bytes | None) -> tuple[Hunk, ...]:
    """The file's hunks; one when the old side is not text (it shows what replaces it), and
    one without lines for an empty file made or deleted."""
    old, new = _text(before), _text(after)
    if old is not None and new is not None:
        return tuple(hunks(old, new)) or (Hunk(0, (), 0, (), ()),)
    side = before if old is None else after  # (file commands write text: the old side)
    said = f"(not text: {len(side or b''):,} bytes)"
    added = hunks("", new)[0].body if new else ()
    return (Hunk(0, (), 0, (), (said, *added)),)


def _text(data: bytes | None) -> str | None:
    """The text of a file's bytes ("" for none), None when it is not UTF-8."""
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read(ws: Workspace, path: str) -> bytes | None:
    try:
        return ws.read_bytes(path)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PathRejected):
        return None
