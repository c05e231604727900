"""Apply one reply's commands, in order, and say what happened to each.

One handler per command class, looked up in a table.  Errors the LLM can fix become
``[FAILED]`` results (``REJECTED: ...`` for forbidden paths); anything else is a bug and
propagates.  All file access goes through :class:`Workspace`, all processes through
:class:`Shell`.

Protocol 1.1 (SPEC 2.2, 2.3) adds three things that need memory across the commands of one
reply: EDIT_FILE runs (line numbers mean the file as the LLM saw it before the run), the digests
of what the LLM has seen (to warn when its line numbers may be stale), and the Python syntax
check after the last write of a reply to a ``.py`` file.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import heapq
import multiprocessing
import re
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import PurePosixPath
from typing import Any, NamedTuple, TypeVar

from .commands import (
    Command,
    CommandResult,
    CreateFile,
    DeleteFile,
    Done,
    EditFile,
    FileRange,
    Message,
    ParseError,
    ReadFile,
    ReadRequest,
    Replace,
    ReplaceBlock,
    RunCommand,
    Search,
    file_lines,
    numbered,
    plural,
)
from .shell import Shell
from .workspace import PathRejected, Workspace

SEARCH_HITS = 100  # hits shown per SEARCH; the rest are counted
SEARCH_FILES = 5000  # files looked at per SEARCH
SEARCH_FILE_BYTES = 1024 * 1024  # larger files are not searched
SEARCH_LINE_CHARS = 200  # a hit's line is clipped to this many characters
SEARCH_REGEX_SECONDS = 10.0  # a regex SEARCH taking longer is killed (re has no timeout)
CLOSEST_RATIO = 0.6  # how similar lines must be to be offered as "did you mean"
CLOSEST_LINES = 20_000  # lines of a file compared with an unmatched SEARCH text
CLOSEST_CHARS = 200  # characters of each line compared
CLOSEST_WINDOWS = 40  # windows of the file compared
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


class _Verdict(NamedTuple):
    success: bool
    summary: str
    output: str | None = None

    def noted(self, note: str, parenthesis: bool = False) -> _Verdict:
        """The verdict with ``note`` added to its summary (nothing if ``note`` is empty)."""
        if not note:
            return self
        summary = f"{self.summary} ({note})" if parenthesis else f"{self.summary}; {note}"
        return self._replace(summary=summary)


@dataclass
class _EditRun:
    """Consecutive EDIT_FILE commands on one file: their line numbers are those of the file
    as it was when the run started (SPEC 2.2)."""

    lines_before: int  # line count of the file when the run started
    style: _Style  # its line endings, kept by every edit of the run
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
class _Turn:
    workspace: Workspace
    shell: Shell
    outcome: TurnOutcome
    track_shown: bool  # whether stale line numbers can be noticed (the caller passed `shown`)
    targets: list[str | None]  # the real path each command writes, if it writes one
    last_writes: dict[str, int]  # real path -> index of the last command writing it
    index: int = 0
    remaining: int = 0  # commands after the one running now
    runs: dict[str, _EditRun] = field(default_factory=dict)
    reads: set[_ReadKey] = field(default_factory=set)  # READ_FILE requests, by real path

    def mark_changed(self, path: str) -> str:
        rel = self.workspace.relpath(path)
        if rel not in self.outcome.changed:
            self.outcome.changed.append(rel)
        return rel


def execute(
    commands: Sequence[Command],
    workspace: Workspace,
    shell: Shell,
    on_result: Callable[[CommandResult], None] | None = None,
    preceding: Sequence[CommandResult] = (),
    shown: Mapping[str, str] | None = None,
) -> TurnOutcome:
    """Run ``commands`` in order; ``on_result`` sees each result as soon as it exists.

    ``preceding`` are results the turn already has (a problem with the reply itself); they
    come first and count as failures for DONE. ``shown`` maps a workspace path to the sha256
    of the content the LLM last saw; with it, an EDIT_FILE run on a file that changed since
    warns that its line numbers may be stale.
    """
    targets = [_target(command, workspace) for command in commands]
    turn = _Turn(
        workspace,
        shell,
        TurnOutcome(results=list(preceding), shown=dict(shown or {})),
        track_shown=shown is not None,
        targets=targets,
        last_writes={path: i for i, path in enumerate(targets) if path is not None},
    )
    for index, command in enumerate(commands):
        turn.index = index
        turn.remaining = len(commands) - index - 1
        started = time.perf_counter()
        verdict = _run_one(command, turn)
        result = CommandResult(
            command=command.name,
            success=verdict.success,
            summary=verdict.summary,
            output=verdict.output,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
        turn.outcome.results.append(result)
        if on_result is not None:
            on_result(result)
    return turn.outcome


def _target(command: Command, workspace: Workspace) -> str | None:
    """The real relative path a file-writing command names, or None."""
    if not isinstance(command, CreateFile | EditFile | Replace | DeleteFile):
        return None
    try:
        return workspace.relpath(command.path)
    except (PathRejected, OSError):
        return None


def _run_one(command: Command, turn: _Turn) -> _Verdict:
    handler = _HANDLERS[type(command)]
    target = turn.targets[turn.index]
    if target is not None and not isinstance(command, EditFile):
        turn.runs.pop(target, None)  # another command writes the file: the run is over
    try:
        verdict = handler(command, turn)
        if target is not None and target.endswith(".py") and turn.last_writes[target] == turn.index:
            verdict = verdict.noted(_syntax_warning(target, turn))
        return verdict
    except PathRejected as e:
        return _Verdict(False, f"REJECTED: {e}")
    except OSError as e:
        path = getattr(command, "path", None) or e.filename
        reason = e.strerror or str(e)
        return _Verdict(False, f"{reason} ('{path}')" if path else reason)


# --- writing, and what the LLM knows -----------------------------------------------------------


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(path: str, text: str, turn: _Turn) -> bool:
    """Write a file for the LLM; True if it is new. The LLM knows what it wrote."""
    created = turn.workspace.write_text(path, text)
    rel = turn.mark_changed(path)
    turn.outcome.shown[rel] = _digest(text.encode("utf-8"))
    return created


def _read_text(path: str, turn: _Turn, missing_ok: bool = False) -> str | _Verdict | None:
    """The file's text (None if it is missing and ``missing_ok``), or the failed verdict
    saying why it cannot be edited."""
    if turn.workspace.is_dir(path):
        return _Verdict(False, f"'{path}' is a directory")
    try:
        return turn.workspace.read_bytes(path).decode("utf-8")
    except FileNotFoundError:
        if missing_ok:
            return None
        return _Verdict(False, f"File '{path}' not found")
    except UnicodeDecodeError:
        return _Verdict(False, f"'{path}' is not a UTF-8 text file")


SYNTAX_CHECK_CAP = 1024 * 1024  # bytes of a .py file the syntax check compiles


def _syntax_warning(rel: str, turn: _Turn) -> str:
    """A warning if the ``.py`` file the reply just wrote for the last time does not compile,
    so that the LLM fixes it next turn instead of finding out from a failing run."""
    if rel not in turn.outcome.changed:
        return ""
    try:
        data = turn.workspace.read_bytes(rel, limit=SYNTAX_CHECK_CAP + 1)
    except (OSError, PathRejected):
        return ""  # deleted again: nothing to check
    if len(data) > SYNTAX_CHECK_CAP:  # compiling 1 MB of Python takes ~0.4 s here: not per edit
        return "note: not syntax-checked, the file is over 1 MB"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings would go to the console
        try:
            compile(data, rel, "exec", dont_inherit=True)
        except SyntaxError as e:
            return (
                f"warning: Python cannot compile it: {type(e).__name__} at line {e.lineno}: {e.msg}"
            )
        except (ValueError, RecursionError, MemoryError) as e:
            return f"warning: Python cannot compile it: {e or type(e).__name__}"
    return ""


# --- CREATE_FILE -------------------------------------------------------------------------------

_FENCE_NOTE = "removed the code fence around the content"

# Lines LLMs write instead of code they left out. A comment is judged by its words alone; other
# lines only when they also carry an ellipsis or are wrapped in <...> or [...], so that Python's
# `...`, JS spreads (`...args`) and prose in text files are never taken for placeholders.
_COMMENT = re.compile(r"(#+|//+|/\*+|<!--|\{/\*|--|;+|%)\s*")
_COMMENT_END = re.compile(r"\s*(\*/\}?|-->)$")
_EDGES = " \t.\u2026:;,-\u2013\u2014*<>[](){}\"'`"
_NOUN = (
    r"(code|codes|content|contents|file|class|classes|module|function|functions|methods?|"
    r"implementation|imports|logic|script|component|body|tests?|helpers|handlers|routes|"
    r"fields|styles|config|properties|lines|cases|setup|program)"
)
_KEPT = (
    r"(is |are )?(unchanged|the same|same|as before|as is|omitted|here|untouched|not shown|"
    r"elided|goes here|go here|remains? (the same|unchanged|as is)|stays? (the same|unchanged))"
)
_STRONG_PLACEHOLDERS = [
    r"keep(ing)? (the |all )?(existing|previous|original|other|remaining|same|rest)\b.*",
    rf"(the )?(rest|remainder) of (the |this |your )?{_NOUN}( {_KEPT})?",
    rf"(\w+ )?(existing|previous|original|unchanged|remaining) {_NOUN}( {_KEPT})?",
    rf"((the |all |other )?(\w+ )?{_NOUN} )?(unchanged|same as before|as before|"
    r"remains? unchanged|stays? the same|remains? the same)",
    r".*\b(same as before|unchanged from before|omitted for brevity|for brevity|code omitted|"
    r"omitted code|truncated for brevity)\b.*",
]
_WEAK_PLACEHOLDERS = [
    r"(the )?(rest|remainder) of .*",
    r"(existing|previous|original|other|remaining|unchanged|more|old|same|your) \w+.*",
    r".*\b(unchanged|as before|omitted|elided|not shown|remains the same|stays the same|"
    r"no changes?)\b.*",
    r"keep(ing)? .*",
]
_STRONG = [re.compile(p, re.IGNORECASE) for p in _STRONG_PLACEHOLDERS]
_WEAK = [re.compile(p, re.IGNORECASE) for p in _WEAK_PLACEHOLDERS + _STRONG_PLACEHOLDERS]


def _placeholder(line: str) -> bool:
    """Whether ``line`` stands for left-out code (``# ... rest of the code unchanged``)."""
    text = line.strip()
    if not text or len(text) > 120:
        return False
    comment = _COMMENT.match(text)
    ellipsis = "..." in text or "\u2026" in text
    wrapped = text[0] + text[-1] in ("<>", "[]")
    if comment is None and not (ellipsis or wrapped):
        return False
    words = _COMMENT_END.sub("", text[comment.end() :] if comment else text)
    words = " ".join(words.strip(_EDGES).split())
    patterns = _WEAK if ellipsis or wrapped else _STRONG
    return any(p.fullmatch(words) for p in patterns)


def _elision(content: str) -> tuple[int, str] | None:
    """The first placeholder line of ``content`` (1-based number and text), if any."""
    for number, line in enumerate(content.split("\n"), 1):
        if _placeholder(line):
            return number, line.strip()
    return None


def _create_file(cmd: CreateFile, turn: _Turn) -> _Verdict:
    found = _elision(cmd.content)
    if found is not None and turn.workspace.is_file(cmd.path):
        number, line = found
        return _Verdict(
            False,
            f"Not written: line {number} of the new content of '{cmd.path}' ('{_clip(line)}') "
            "stands for code that was left out, and CREATE_FILE replaces the whole file; send "
            "the complete content, or change only some lines with REPLACE",
        )
    try:
        created = _write(cmd.path, cmd.content, turn)
    except IsADirectoryError:
        return _Verdict(False, f"'{cmd.path}' is a directory")
    verdict = _Verdict(True, f"{'Created' if created else 'Overwrote'} '{cmd.path}'")
    return verdict.noted(_FENCE_NOTE if cmd.fence_removed else "", parenthesis=True)


# --- EDIT_FILE ---------------------------------------------------------------------------------


def _edit_file(cmd: EditFile, turn: _Turn) -> _Verdict:
    text = _read_text(cmd.path, turn)
    if not isinstance(text, str):
        return text or _Verdict(False, f"File '{cmd.path}' not found")
    rel = turn.workspace.relpath(cmd.path)
    run = turn.runs.get(rel)
    if run is None or run.text != text:
        lines = _split_lines(text)
        warning = _stale_warning(rel, cmd.path, text, turn)
        run = turn.runs[rel] = _EditRun(len(lines), _style(lines), text, warning)
    new = _block_lines(cmd.content)
    start, end = cmd.start_line, cmd.end_line
    verdict = _judge_edit(cmd.path, start, end, run.lines_before, len(new), bool(run.edits))
    if verdict.success and run.edits:
        verdict = _judge_clash(cmd.path, start, end, run) or verdict
    if verdict.success:
        shift = run.shift(start)
        run.text = "".join(_splice(_split_lines(text), start + shift, end + shift, new, run.style))
        _write(cmd.path, run.text, turn)
        run.edits.append((start, end, len(new)))
    verdict = verdict.noted(_FENCE_NOTE if cmd.fence_removed else "", parenthesis=True)
    warning, run.warning = run.warning, ""  # said once, on the command that starts the run
    return verdict.noted(warning)


def _stale_warning(rel: str, path: str, text: str, turn: _Turn) -> str:
    """Why the line numbers of an EDIT_FILE run may be wrong, or ""."""
    seen = turn.outcome.shown.get(rel)
    if not turn.track_shown or seen is None or seen == _digest(text.encode("utf-8")):
        return ""
    return (
        f"warning: '{path}' changed since you last saw it, so these line numbers may be "
        "stale; READ_FILE it and check"
    )


def _judge_edit(
    path: str, start: int, end: int, n: int, added: int, edited: bool = False
) -> _Verdict:
    """Whether ``start..end`` is a valid range of an ``n``-line file, and what the edit does.

    ``edited``: earlier edits of the run changed the file, whose line count ``n`` was before.
    """
    if end == start - 1 and start == n + 1:
        return _Verdict(True, f"Appended {_count(added)} to '{path}'")
    if end == start - 1 and 1 <= start <= n:
        return _Verdict(True, f"Inserted {_count(added)} before line {start} of '{path}'")
    if 1 <= start <= end <= n:
        replaced = f"{_count(end - start + 1)} replaced by {added}"
        return _Verdict(True, f"Replaced {_lines_name(start, end)} of '{path}' ({replaced})")
    had = "had" if edited else "has"
    return _Verdict(
        False, f"Invalid line range {start}-{end} for '{path}' (the file {had} {_count(n)})"
    )


def _judge_clash(path: str, start: int, end: int, run: _EditRun) -> _Verdict | None:
    """The failure of an edit whose range overlaps an earlier one of its run, or None."""
    clash = run.clash(start, end)
    if clash is None:
        return None
    return _Verdict(
        False,
        f"Not applied: {_range_name(start, end)} of '{path}' and {_range_name(*clash)}, "
        "changed by an earlier EDIT_FILE of this reply, overlap; all EDIT_FILE line numbers of "
        "one reply refer to the file as you saw it, so give each line to one EDIT_FILE only",
    )


def _lines_name(start: int, end: int) -> str:
    return f"line {start}" if start == end else f"lines {start}-{end}"


def _range_name(start: int, end: int) -> str:
    return f"the insertion before line {start}" if end == start - 1 else _lines_name(start, end)


# --- REPLACE -----------------------------------------------------------------------------------

_VIEW_NUMBER = re.compile(r" *\d+ \| ?")


class _Match(NamedTuple):
    """Where a SEARCH text matched (0-based line index) and how the replacement is adapted."""

    index: int
    how: str  # "" (exactly), or what had to be ignored
    adapt: Callable[[list[str]], list[str] | None]


class _Step(NamedTuple):
    """One applied block: the file's lines after it, and what it did."""

    lines: list[str]
    where: str  # "lines 12-14"; "" when an empty SEARCH filled an empty or new file
    detail: str  # "3 lines replaced by 5, matched ignoring trailing whitespace"


def _same(lines: list[str]) -> list[str]:
    return lines


def _replace(cmd: Replace, turn: _Turn) -> _Verdict:
    text = _read_text(cmd.path, turn, missing_ok=True)
    if isinstance(text, _Verdict):
        return text
    if text is None and any(line.strip() for line in _block_lines(cmd.blocks[0].search)):
        return _Verdict(False, f"File '{cmd.path}' not found")
    lines = _split_lines(text or "")
    style = _style(lines)
    steps: list[_Step] = []
    for number, block in enumerate(cmd.blocks, 1):
        step = _apply_block(cmd.path, lines, block, style)
        if isinstance(step, _Verdict):
            where = f"Block {number} of {len(cmd.blocks)} (reply line {block.line})"
            if len(cmd.blocks) == 1:
                where = f"The block at reply line {block.line}"
            return step._replace(summary=f"{where}: {step.summary}")
        lines = step.lines
        steps.append(step)
    created = _write(cmd.path, "".join(lines), turn)
    return _Verdict(True, _replaced(cmd.path, steps, created))


def _replaced(path: str, steps: list[_Step], created: bool) -> str:
    """The summary of a successful REPLACE: where each block landed, and how it matched."""
    if len(steps) == 1:
        (step,) = steps
        if not step.where:
            return f"{'Created' if created else 'Filled the empty file'} '{path}' ({step.detail})"
        return f"Replaced {step.where} of '{path}' ({step.detail})"
    parts = [f"{step.where or 'filled the empty file'} ({step.detail})" for step in steps]
    verb = "Created" if created else "Changed"
    return f"{verb} '{path}' with {len(steps)} blocks: {'; '.join(parts)}"


def _apply_block(
    path: str, lines: list[str], block: ReplaceBlock, style: _Style
) -> _Step | _Verdict:
    """``lines`` with one block applied and what it did, or why it could not be applied."""
    search = _block_lines(block.search)
    replace = _block_lines(block.replace)
    if not any(line.strip() for line in search):
        if any(line.strip() for line in lines):
            return _Verdict(
                False,
                f"the SEARCH part is empty, but '{path}' is not; an empty SEARCH only fills a "
                "new or empty file. To add lines, SEARCH for the lines next to them and repeat "
                "them in REPLACE; nothing was changed",
            )
        return _Step(_splice([], 1, 0, replace, style), "", _count(len(replace)))
    contents = [_strip_eol(line) for line in lines]
    found = _find(path, contents, search)
    note = ""
    if isinstance(found, _Verdict) and _has_view_numbers(search):
        search = [_drop_view_number(line) for line in search]
        replace = [_drop_view_number(line) for line in replace]
        retry = _find(path, contents, search)
        if not isinstance(retry, _Verdict):
            found, note = retry, "removed the line numbers copied from the file view"
    if isinstance(found, _Verdict):
        return found
    start, end = found.index + 1, found.index + len(search)
    new = found.adapt(replace)
    if new is None:
        return _Verdict(
            False,
            f"the SEARCH text matches {_lines_name(start, end)} of '{path}' only with less "
            "indentation, and the REPLACE lines are not indented enough to take that much "
            "away; copy the lines exactly; nothing was changed",
        )
    detail = ", ".join(
        n for n in (f"{_count(end - start + 1)} replaced by {len(new)}", found.how, note) if n
    )
    return _Step(_splice(lines, start, end, new, style), _lines_name(start, end), detail)


def _has_view_numbers(search: list[str]) -> bool:
    return all(_VIEW_NUMBER.match(line) for line in search if line.strip())


def _drop_view_number(line: str) -> str:
    match = _VIEW_NUMBER.match(line)
    return line[match.end() :] if match else line


def _block_lines(text: str) -> list[str]:
    """The lines of an EDIT_FILE body or a SEARCH/REPLACE part."""
    return file_lines(text.replace("\r\n", "\n"))


def _find(path: str, contents: list[str], search: list[str]) -> _Match | _Verdict:
    """The one place ``search`` matches, trying ever looser layers: exact, then ignoring
    trailing whitespace, then ignoring a uniform difference in indentation. Several matches
    in the first layer that has any is an error; no match at all offers the closest lines."""
    for layer in (_exact, _loose_trailing, _loose_indent):
        matches = layer(contents, search)
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(str(m.index + 1) for m in matches[:10])
            more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
            return _Verdict(
                False,
                f"the SEARCH text matches {len(matches)} places in '{path}' (starting at lines "
                f"{shown}{more}); add lines around it so that it matches one place only; "
                "nothing was changed",
            )
    return _not_found(path, contents, search)


def _exact(contents: list[str], search: list[str]) -> list[_Match]:
    k = len(search)
    return [
        _Match(i, "", _same)
        for i in range(len(contents) - k + 1)
        if contents[i] == search[0] and contents[i : i + k] == search
    ]


def _loose_trailing(contents: list[str], search: list[str]) -> list[_Match]:
    how = "matched ignoring trailing whitespace"
    return [_Match(m.index, how, _same) for m in _exact(_rstripped(contents), _rstripped(search))]


def _rstripped(lines: list[str]) -> list[str]:
    return [line.rstrip() for line in lines]


def _loose_indent(contents: list[str], search: list[str]) -> list[_Match]:
    """Matches where every non-blank line differs only by the same leading whitespace."""
    k = len(search)
    bare = [line.strip() for line in contents]
    wanted = [line.strip() for line in search]
    first = next(i for i, line in enumerate(wanted) if line)
    matches = []
    for i in range(len(contents) - k + 1):
        if bare[i + first] != wanted[first] or bare[i : i + k] != wanted:
            continue
        adapt = _reindent(contents[i : i + k], search)
        if adapt is not None:
            matches.append(_Match(i, "matched with other indentation, REPLACE re-indented", adapt))
    return matches


def _reindent(
    found: list[str], search: list[str]
) -> Callable[[list[str]], list[str] | None] | None:
    """How to re-indent the replacement, if the file's lines have a uniform extra (or missing)
    indentation compared with the SEARCH lines; None if the difference is not uniform."""
    extra: set[str] = set()
    missing: set[str] = set()
    for have, want in zip(found, search, strict=True):
        if not want.strip():
            continue
        have_indent = have[: len(have) - len(have.lstrip())]
        want_indent = want[: len(want) - len(want.lstrip())]
        if have_indent.endswith(want_indent):
            extra.add(have_indent[: len(have_indent) - len(want_indent)])
        elif want_indent.endswith(have_indent):
            missing.add(want_indent[: len(want_indent) - len(have_indent)])
        else:
            return None
    if len(extra) == 1 and not missing:
        (prefix,) = extra
        return lambda lines: [prefix + line if line.strip() else line for line in lines]
    if len(missing) == 1 and not extra:
        (prefix,) = missing

        def dedent(lines: list[str]) -> list[str] | None:
            if any(line.strip() and not line.startswith(prefix) for line in lines):
                return None
            return [line[len(prefix) :] if line.strip() else line for line in lines]

        return dedent
    return None


def _not_found(path: str, contents: list[str], search: list[str]) -> _Verdict:
    closest = _closest(contents, search)
    if closest is None:
        return _Verdict(
            False,
            f"the SEARCH text is not in '{path}', and no lines there are similar; "
            f"READ_FILE '{path}' to see it as it is now; nothing was changed",
        )
    start, end = closest + 1, closest + len(search)
    shown = "\n".join(numbered(contents[closest : closest + len(search)], start))
    return _Verdict(
        False,
        f"the SEARCH text is not in '{path}'; did you mean {_lines_name(start, end)} (shown "
        "below)? SEARCH must repeat the file's lines exactly; nothing was changed",
        shown,
    )


def _closest(contents: list[str], search: list[str]) -> int | None:
    """The start of the window of the file most like ``search``, if it is alike enough to be
    worth offering ("did you mean").

    Comparing every window would be quadratic, so only likely windows are compared: where a
    SEARCH line stands exactly, and where the lines most like its longest lines stand. A
    window's score is the mean difflib ratio of its lines with the SEARCH lines.
    """
    bare = [line.strip()[:CLOSEST_CHARS] for line in contents[:CLOSEST_LINES]]
    wanted = [line.strip()[:CLOSEST_CHARS] for line in search]
    last = max(0, len(bare) - len(wanted))
    starts = dict.fromkeys(min(max(i, 0), last) for i in _anchors(bare, wanted))
    best, where = CLOSEST_RATIO, None
    for i in starts:
        window = bare[i : i + len(wanted)]
        # A window cut short by the end of the file scores nothing for its missing lines.
        pairs = zip(window, wanted, strict=False)
        score = sum(_similarity(a, b) for a, b in pairs) / len(wanted)
        if score > best or (where is None and score == best):
            best, where = score, i
    return where


def _anchors(bare: list[str], wanted: list[str]) -> Iterator[int]:
    """At most CLOSEST_WINDOWS window starts worth comparing: half where SEARCH lines stand
    exactly (most of them first), half where the lines most like its two longest lines stand.
    Lines that occur everywhere (``}``, ``return``) anchor nothing."""
    found: dict[str, list[int]] = {}
    for i, line in enumerate(bare):
        if line:
            found.setdefault(line, []).append(i)
    exact = Counter(
        i - j
        for j, line in enumerate(wanted)
        if line and len(found.get(line, ())) <= CLOSEST_WINDOWS
        for i in found.get(line, ())
    )
    yield from (i for i, _ in exact.most_common(CLOSEST_WINDOWS // 2))
    longest = sorted((j for j, line in enumerate(wanted) if line), key=lambda j: -len(wanted[j]))
    for j in longest[:2]:
        matcher = SequenceMatcher(autojunk=False)
        matcher.set_seq2(wanted[j])
        ranked = []
        for i, line in enumerate(bare):
            matcher.set_seq1(line)
            ranked.append((matcher.quick_ratio(), i))
        yield from (i - j for _, i in heapq.nlargest(CLOSEST_WINDOWS // 4, ranked))


def _similarity(a: str, b: str) -> float:
    return 1.0 if a == b else SequenceMatcher(None, a, b, autojunk=False).ratio()


# --- DELETE_FILE / READ_FILE / SEARCH ----------------------------------------------------------


def _delete_file(cmd: DeleteFile, turn: _Turn) -> _Verdict:
    try:
        turn.workspace.delete(cmd.path)
    except FileNotFoundError:
        return _Verdict(False, f"File '{cmd.path}' not found")
    except IsADirectoryError:
        return _Verdict(False, f"'{cmd.path}' is a directory")
    rel = turn.mark_changed(cmd.path)
    turn.outcome.shown.pop(rel, None)
    return _Verdict(True, f"Deleted '{cmd.path}'")


# A READ_FILE request by the file it really names: (real relative path, start, end).
_ReadKey = tuple[str, int | None, int | None]


def _read_file(cmd: ReadFile, turn: _Turn) -> _Verdict:
    folder = turn.workspace.is_dir(cmd.path)
    if folder and (cmd.start_line is not None or cmd.end_line is not None):
        return _Verdict(False, f"'{cmd.path}' is a folder: READ_FILE lists it without lines")
    if not folder and not turn.workspace.is_file(cmd.path):
        return _Verdict(False, f"File '{cmd.path}' not found")
    start, end = cmd.start_line, cmd.end_line
    first = 1 if start is None else start
    if first < 1 or (end is not None and end < first):
        last = "end" if end is None else end
        return _Verdict(False, f"Invalid line range {first}-{last} for '{cmd.path}'")
    rel = PurePosixPath(cmd.path).as_posix()
    request: ReadRequest = rel
    what = f"'{cmd.path}' is"
    if start is not None or end is not None:
        request = FileRange(path=rel, start_line=start, end_line=end)
        what = f"{_lines_name(first, end).capitalize()} of '{cmd.path}' are"
        if first == end:
            what = f"Line {first} of '{cmd.path}' is"
        if end is None:
            what = f"'{cmd.path}' from line {start} on is"
    # One file under many spellings (`a/../big.txt`, `./big.txt`, a symlink) is one request,
    # shown once under the first spelling: otherwise each copy would fill the outbox again.
    key = (turn.workspace.relpath(cmd.path), start, end)
    if key not in turn.reads:
        turn.reads.add(key)
        turn.outcome.read_requests.append(request)
    if folder:
        return _Verdict(True, f"The files in '{cmd.path}' are listed under Requested File Contents")
    return _Verdict(True, f"{what} shown under Requested File Contents")


def _search(cmd: Search, turn: _Turn) -> _Verdict:
    """Grep the workspace; the hits go to the next outbox, the counts into the result."""
    if not cmd.query:
        return _Verdict(False, "The query is empty")
    flags = 0 if cmd.case_sensitive else re.IGNORECASE
    try:
        pattern = re.compile(cmd.query if cmd.regex else re.escape(cmd.query), flags)
    except re.error as e:
        return _Verdict(False, f"Invalid regular expression '{_clip(cmd.query)}': {e}")
    globs = _expand_braces(cmd.glob) if cmd.glob else []
    found = _grep(turn.workspace, pattern, globs, guarded=cmd.regex)
    query = _clip(cmd.query)
    if found is None:
        return _Verdict(
            False,
            f"The regular expression '{query}' took longer than {SEARCH_REGEX_SECONDS:g} s; "
            "simplify it",
        )
    where = f" in files matching '{cmd.glob}'" if cmd.glob else ""
    files = plural(len(found.files), "file")
    searched = f"{plural(found.searched, 'file')} searched"
    counts = f"{_matches(found.total)} in {files}" if found.total else f"no matches ({searched})"
    header = f'SEARCH "{query}"{where}: {counts}'
    turn.outcome.searches.append("\n".join([header, *found.hits, *found.notes()]))
    if not found.total:
        return _Verdict(True, f"No matches for '{query}'{where} ({searched})")
    shown = "shown" if found.total <= SEARCH_HITS else f"the first {SEARCH_HITS} shown"
    return _Verdict(
        True,
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
    workspace: Workspace, pattern: re.Pattern[str], globs: list[str], guarded: bool
) -> _Grep | None:
    """Search the files the LLM sees in the listing (no .git, agent or heavy folders) line by
    line, numbering lines as EDIT_FILE does; binary files are skipped.

    A ``guarded`` search (the LLM's own regex, which may backtrack for ever: ``(a+)+$``) runs
    in a child process and is None if it takes longer than SEARCH_REGEX_SECONDS. A plain-text
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
    return _within(SEARCH_REGEX_SECONDS, scan) if guarded else scan()


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


def _within(seconds: float, action: Callable[[], _T]) -> _T | None:
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


# --- RUN_COMMAND / MESSAGE / DONE / parse errors -----------------------------------------------


def _run_command(cmd: RunCommand, turn: _Turn) -> _Verdict:
    shown = cmd.command.strip()
    if not shown:
        return _Verdict(False, "No command given")
    first, _, more = shown.partition("\n")
    shown = f"{first} ..." if more else first
    result = turn.shell.run(cmd.command, turn.workspace.root)
    if not result.approved:
        return _Verdict(False, "not approved by the user")
    output = result.output or "(no output)"
    if result.timed_out:
        return _Verdict(False, f"'{shown}' timed out after {turn.shell.timeout:g} s", output)
    ran = f"Ran '{shown}' (exit code {result.exit_code})"
    return _Verdict(result.exit_code == 0, ran, output)


def _message(cmd: Message, turn: _Turn) -> _Verdict:
    turn.outcome.messages.append(cmd.text)
    return _Verdict(True, "Shown to the user")


def _done(cmd: Done, turn: _Turn) -> _Verdict:
    # A session must not end on results the LLM has not seen yet: DONE comes last, after
    # commands that all worked.
    if turn.remaining:
        return _Verdict(
            False,
            f"Not accepted: {plural(turn.remaining, 'command')} came after [DONE]; "
            "send [DONE] alone, as the last command, once the work is finished",
        )
    failed = sum(not r.success for r in turn.outcome.results)
    if failed:
        return _Verdict(
            False,
            f"Not accepted: {failed} command(s) above failed; fix them, then send [DONE] again",
        )
    turn.outcome.done = cmd.summary
    return _Verdict(True, "Task marked complete")


def _parse_error(cmd: ParseError, turn: _Turn) -> _Verdict:
    return _Verdict(False, f"reply line {cmd.line}: {cmd.message}")


_HANDLERS: dict[type[Any], Callable[[Any, _Turn], _Verdict]] = {
    CreateFile: _create_file,
    EditFile: _edit_file,
    Replace: _replace,
    DeleteFile: _delete_file,
    ReadFile: _read_file,
    Search: _search,
    RunCommand: _run_command,
    Message: _message,
    Done: _done,
    ParseError: _parse_error,
}


# --- lines -------------------------------------------------------------------------------------


def _split_lines(text: str) -> list[str]:
    """The file's lines as :func:`file_lines` counts them, each with its ending kept: the
    last one has none when the file does not end with a newline."""
    lines = [f"{line}\n" for line in file_lines(text)]
    if lines and not text.endswith("\n"):
        lines[-1] = lines[-1][:-1]
    return lines


class _Style(NamedTuple):
    """How a file ends its lines: what edits keep, even when they empty it on the way."""

    eol: str  # taken from the first line ending
    final_newline: bool  # an empty file counts as ending with one


def _style(lines: list[str]) -> _Style:
    eol = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    return _Style(eol, not lines or lines[-1].endswith("\n"))


def _splice(
    lines: list[str], start: int, end: int, new: list[str], style: _Style | None = None
) -> list[str]:
    """Replace 1-based lines ``start..end`` (``end = start - 1``: insert) by ``new``.

    New lines take the file's newline style (``style``, or the one ``lines`` have).  A file
    that did not end with a newline still does not, whatever the edit did at its end.
    """
    style = style or _style(lines)
    result = lines[: start - 1] + [line + style.eol for line in new] + lines[end:]
    if not style.final_newline and result:
        result = [line if line.endswith("\n") else line + style.eol for line in result]
        result[-1] = _strip_eol(result[-1])
    return result


def _strip_eol(line: str) -> str:
    return line[:-2] if line.endswith("\r\n") else line.removesuffix("\n")


def _count(n: int) -> str:
    return plural(n, "line")


def _clip(text: str) -> str:
    """Quote at most ``_CLIP`` characters of the LLM's text back to it."""
    text = " ".join(text.split())
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."
