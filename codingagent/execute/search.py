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
from codingagent.protocol.commands import Search, file_lines, plural
from codingagent.workspace import PathRejected, Workspace
from codingagent.workspace.text import Decoded, decoded

SEARCH_HITS = 100  # hits shown per SEARCH; the rest are counted
SEARCH_CONTEXT = 2  # lines shown before and after each hit unless the SEARCH says otherwise
MAX_CONTEXT = 20  # the most context lines a SEARCH may ask for
SEARCH_LINES = 400  # lines (hits and context) shown per SEARCH; the hits beyond are counted
SEARCH_FILES = 5000  # files looked at per SEARCH
SEARCH_FILE_BYTES = 1024 * 1024  # larger files are not searched
SEARCH_LINE_CHARS = 200  # a hit's line is clipped to this many characters
SEARCH_REGEX_SECONDS = 10.0  # a regex SEARCH taking longer is killed (re has no timeout)
SEARCH_REPLY_SECONDS = 20.0  # all SEARCH commands of one reply together; later ones are not run


def search(cmd: Search, turn: Turn) -> Success:
    """Grep the workspace; the hits, with lines of context, go to the next outbox, the
    counts into the result (said once: the block under Search Results names only the query).

    Hits are shown as grep shows them: ``path:12: line`` for a hit, ``path-13- line`` for a
    line of context, ``--`` between groups of lines; hits closer than twice the context share
    one group."""
    if not cmd.query:
        raise CommandFailed("The query is empty")
    context = SEARCH_CONTEXT if cmd.context is None else cmd.context
    if not 0 <= context <= MAX_CONTEXT:
        raise CommandFailed(f"context must be 0 to {MAX_CONTEXT} lines, got {context}")
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
        found = _grep(turn.workspace, pattern, globs, context, guarded=cmd.regex, seconds=seconds)
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
    if not found.total:
        return Success(f"No matches for '{query}'{where} ({'; '.join([searched, *found.notes()])})")
    header = f'SEARCH "{query}"{where}:'
    notes = [f"({note})" for note in found.notes()]
    turn.outcome.searches.append("\n".join([header, *found.lines, *notes]))
    shown = "shown" if found.shown == found.total else f"the first {found.shown:,} shown"
    return Success(
        f"{_matches(found.total).capitalize()} for '{query}' in {files} "
        f"({shown} under Search Results)",
    )


@dataclass
class _Grep:
    """What one SEARCH found: the first hits with their context, as grep shows them, and
    counts."""

    context: int = SEARCH_CONTEXT
    lines: list[str] = field(default_factory=list)
    shown: int = 0  # hits among ``lines``
    total: int = 0
    files: set[str] = field(default_factory=set)
    searched: int = 0
    big: int = 0  # files over SEARCH_FILE_BYTES, not searched
    omitted: int = 0  # files beyond the listing's cap, not searched
    # Files with hits that are not UTF-8, and what their lines are shown decoded as
    foreign: dict[str, str] = field(default_factory=dict)

    def notes(self) -> list[str]:
        notes = []
        if self.total > self.shown:
            more = self.total - self.shown
            notes.append(f"{more:,} more matches not shown; narrow the query or the glob")
        if self.big:
            size = SEARCH_FILE_BYTES // 1024 // 1024
            notes.append(f"{plural(self.big, 'file')} over {size} MB not searched")
        if self.omitted:
            notes.append(f"{plural(self.omitted, 'file')} not searched: there are too many")
        for encoding in sorted(set(self.foreign.values())):
            paths = ", ".join(p for p, e in self.foreign.items() if e == encoding)
            notes.append(f"not UTF-8, lines shown decoded as {encoding}: {paths}")
        return notes


def _grep(
    workspace: Workspace,
    pattern: re.Pattern[str],
    globs: list[str],
    context: int,
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
    found = _Grep(context=context, omitted=listing.omitted)
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
        lines = file_lines(text.text)
        hits = [number for number, line in enumerate(lines, 1) if pattern.search(line)]
        if hits:
            found.total += len(hits)
            found.files.add(path)
            _show(found, path, lines, hits)
            if text.encoding is not None:
                found.foreign[path] = text.encoding
    return found


def _show(found: _Grep, path: str, lines: list[str], hits: list[int]) -> None:
    """Add the hits of one file (line numbers of ``lines``), each with its lines of context,
    to ``found`` while they fit; a hit within another's context extends that group."""
    hit = set(hits)
    done = 0  # the last line of this file added
    for number in hits:
        if found.shown >= SEARCH_HITS:
            return
        first = max(1, number - found.context, done + 1)
        last = min(len(lines), number + found.context)
        apart = bool(found.lines) and found.context > 0 and (not done or first > done + 1)
        if len(found.lines) + apart + max(0, last - first + 1) > SEARCH_LINES:
            return
        if apart:
            found.lines.append("--")
        for n in range(first, last + 1):
            mark = ":" if n in hit else "-"
            text = _clip_line(lines[n - 1])
            found.lines.append(
                f"{path}{mark}{n}{mark} {text}" if text else f"{path}{mark}{n}{mark}"
            )
            found.shown += n in hit
        done = max(done, last)


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


def _searchable(workspace: Workspace, path: str) -> Decoded | None:
    """A file's text for SEARCH, or None for binary and unreadable files."""
    try:
        data = workspace.read_bytes(path, limit=SEARCH_FILE_BYTES)
    except (OSError, PathRejected):
        return None
    if b"\0" in data:
        return None
    return decoded(data, whole=len(data) < SEARCH_FILE_BYTES)


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
