"""SEARCH: grep the files the LLM sees; its own regex runs in a child that can be killed."""

from __future__ import annotations

import fnmatch
import functools
import multiprocessing
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from codingagent.execute.context import CommandFailed, Success, Turn, clip
from codingagent.protocol.commands import Search, plural
from codingagent.workspace import PathRejected, Workspace

SEARCH_HITS = 100  # hits shown per SEARCH; the rest are counted
SEARCH_FILES = 5000  # files looked at per SEARCH
SEARCH_FILE_BYTES = 1024 * 1024  # larger files are not searched
SEARCH_LINE_CHARS = 200  # a hit's line is clipped to this many characters
SEARCH_REGEX_SECONDS = 10.0  # a regex SEARCH taking longer is killed (re has no timeout)
SEARCH_REPLY_SECONDS = 20.0  # all SEARCH commands of one reply together; later ones are not run


def search(cmd: Search, turn: Turn) -> Success:
    """Grep the workspace; the hits go to the next outbox, the counts into the result."""
    if not cmd.query:
        raise CommandFailed("The query is empty")
    flags = 0 if cmd.case_sensitive else re.IGNORECASE
    try:
        pattern = re.compile(cmd.query if cmd.regex else re.escape(cmd.query), flags)
    except re.error as e:
        raise CommandFailed(f"Invalid regular expression '{clip(cmd.query)}': {e}") from None
    globs = _expand_braces(cmd.glob) if cmd.glob else []
    query = clip(cmd.query)
    left = SEARCH_REPLY_SECONDS - turn.search_seconds
    if left <= 0:
        raise CommandFailed(
            f"Not run: the SEARCH commands of this reply reached their {SEARCH_REPLY_SECONDS:g} s; "
            "search again in the next reply"
        )
    seconds = min(SEARCH_REGEX_SECONDS, left)
    started = time.monotonic()
    try:
        found = _grep(turn.workspace, pattern, globs, guarded=cmd.regex, seconds=seconds)
    finally:
        turn.search_seconds += time.monotonic() - started
    if found is None and seconds < SEARCH_REGEX_SECONDS:
        raise CommandFailed(
            f"The regular expression '{query}' was stopped: the SEARCH commands of this reply "
            f"reached their {SEARCH_REPLY_SECONDS:g} s; search again in the next reply"
        )
    if found is None:
        raise CommandFailed(
            f"The regular expression '{query}' took longer than {seconds:g} s; simplify it",
        )
    where = f" in files matching '{cmd.glob}'" if cmd.glob else ""
    files = plural(len(found.files), "file")
    searched = f"{plural(found.searched, 'file')} searched"
    counts = f"{_matches(found.total)} in {files}" if found.total else f"no matches ({searched})"
    header = f'SEARCH "{query}"{where}: {counts}'
    turn.outcome.searches.append("\n".join([header, *found.hits, *found.notes()]))
    if not found.total:
        return Success(f"No matches for '{query}'{where} ({searched})")
    shown = "shown" if found.total <= SEARCH_HITS else f"the first {SEARCH_HITS} shown"
    return Success(
        f"{_matches(found.total).capitalize()} for '{query}' in {files} "
        f"({shown} under Search Results)",
    )


@dataclass
class _Grep:
    """What one SEARCH found: the first hits as ``path:line: text``, and counts."""

    hits: list[str] = field(default_factory=list)
    total: int = 0
    files: set[str] = field(default_factory=set)
    searched: int = 0
    big: int = 0  # files over SEARCH_FILE_BYTES, not searched
    omitted: int = 0  # files beyond the listing's cap, not searched

    def notes(self) -> list[str]:
        notes = []
        if self.total > SEARCH_HITS:
            more = self.total - SEARCH_HITS
            notes.append(f"({more:,} more matches not shown; narrow the query or the glob)")
        if self.big:
            size = SEARCH_FILE_BYTES // 1024 // 1024
            notes.append(f"({plural(self.big, 'file')} over {size} MB not searched)")
        if self.omitted:
            notes.append(f"({plural(self.omitted, 'file')} not searched: there are too many)")
        return notes


def _grep(
    workspace: Workspace,
    pattern: re.Pattern[str],
    globs: list[str],
    guarded: bool,
    seconds: float = SEARCH_REGEX_SECONDS,
) -> _Grep | None:
    """Search the files the LLM sees in the listing (no .git, agent or heavy folders) line by
    line, numbering lines as EDIT_FILE does; binary files are skipped.

    A ``guarded`` search (the LLM's own regex, which may backtrack for ever: ``(a+)+$``) runs
    in a child process and is None if it takes longer than ``seconds``. A plain-text
    search is an escaped literal, linear in the text, and runs here.
    """
    listing = workspace.list_files(limit=SEARCH_FILES)
    found = _Grep(omitted=listing.omitted)
    paths = []
    for path, size in listing.entries:
        if globs and not _glob_match(path, globs):
            continue
        if size > SEARCH_FILE_BYTES:
            found.big += 1
            continue
        paths.append(path)
    scan = functools.partial(_scan, workspace, pattern, paths, found)
    return within(seconds, scan) if guarded else scan()


def _scan(workspace: Workspace, pattern: re.Pattern[str], paths: list[str], found: _Grep) -> _Grep:
    """``found`` with the matches of ``pattern`` in the files ``paths`` added."""
    for path in paths:
        text = _searchable(workspace, path)
        if text is None:
            continue
        found.searched += 1
        for number, line in enumerate(text.split("\n"), 1):
            if pattern.search(line):
                found.total += 1
                found.files.add(path)
                if len(found.hits) < SEARCH_HITS:
                    found.hits.append(f"{path}:{number}: {_clip_line(line)}")
    return found


_T = TypeVar("_T")
# A forked child shares the parent's memory (workspace, compiled pattern), so nothing has to be
# sent to it. Without fork (Windows) a guarded action runs in this process, unguarded.
_CAN_FORK = "fork" in multiprocessing.get_all_start_methods()


def within(seconds: float, action: Callable[[], _T]) -> _T | None:
    """What ``action()`` returns, computed in a forked child that is killed if it has not
    answered within ``seconds`` (then None): Python's ``re`` cannot be interrupted, and a turn
    must never hang on the LLM's regex.

    A child that dies without answering raises ChildProcessError (an OSError, so the command
    fails with that message); an exception in ``action`` is raised here again.
    """
    if not _CAN_FORK:
        return action()
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_answer, args=(sender, action), daemon=True)
    child.start()
    sender.close()  # the child's copy stays open: EOF here means the child is gone
    try:
        if not receiver.poll(seconds):
            return None
        try:
            succeeded, value = receiver.recv()
        except EOFError:
            child.join()
            raise ChildProcessError(
                f"The search stopped without an answer (exit code {child.exitcode})"
            ) from None
    finally:
        child.kill()  # a child that answered is exiting anyway
        child.join()
        receiver.close()
    if not succeeded:
        raise value
    return value


def _answer(sender: Any, action: Callable[[], object]) -> None:
    """In the child: send ``(True, action())``, or ``(False, the exception)``."""
    try:
        answer: tuple[bool, object] = (True, action())
    except Exception as e:  # raised again in the parent, where it belongs
        answer = (False, e)
    sender.send(answer)


def _matches(n: int) -> str:
    return f"{n:,} match" if n == 1 else f"{n:,} matches"


def _searchable(workspace: Workspace, path: str) -> str | None:
    """A file's text for SEARCH, or None for binary and unreadable files."""
    try:
        data = workspace.read_bytes(path, limit=SEARCH_FILE_BYTES)
    except (OSError, PathRejected):
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


def _expand_braces(glob: str) -> list[str]:
    """``*.{js,ts}`` -> ``*.js``, ``*.ts`` (one level of braces, as shells and search_code do)."""
    match = re.search(r"\{([^{}]*)\}", glob)
    if match is None:
        return [glob]
    head, tail = glob[: match.start()], glob[match.end() :]
    return [head + choice + tail for choice in match.group(1).split(",")]


def _glob_match(path: str, globs: list[str]) -> bool:
    """A glob without ``/`` matches the file name at any depth; with one, the whole path."""
    name = path.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatchcase(path if "/" in glob else name, glob)
        for glob in (g.removeprefix("./").replace("**/", "") for g in globs)
    )


def _clip_line(line: str) -> str:
    line = line.rstrip()
    if len(line) <= SEARCH_LINE_CHARS:
        return line
    return f"{line[:SEARCH_LINE_CHARS]} [... {len(line) - SEARCH_LINE_CHARS:,} more characters]"
