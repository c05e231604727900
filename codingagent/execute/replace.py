"""REPLACE: SEARCH/REPLACE blocks applied in order, all or nothing, with explained failures.

Where a block's SEARCH text stands is :mod:`matching`'s job; this module applies the blocks and
says to the LLM what happened, in its words.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from codingagent.execute.context import (
    CommandFailed,
    Success,
    Turn,
    not_found,
    read_text_if_any,
    unmasked,
    write,
)
from codingagent.execute.lines import (
    Style,
    block_lines,
    count,
    lines_name,
    splice,
    split_lines,
    strip_eol,
    style,
)
from codingagent.execute.matching import Ambiguous, Layer, Match, NotFound, find
from codingagent.protocol.commands import Replace, ReplaceBlock, numbered

_VIEW_NUMBER = re.compile(r" *\d+ \| ?")
HOW = {
    Layer.EXACT: "",
    Layer.TRAILING_WHITESPACE: "matched ignoring trailing whitespace",
    Layer.INDENTATION: "matched with other indentation, REPLACE re-indented",
    Layer.TABS: "matched the file's tab indentation, REPLACE indented with tabs",
}
UNCHANGED = "nothing was changed"


class _Step(NamedTuple):
    """One applied block: the file's lines after it, and what it did."""

    lines: list[str]
    where: str  # "lines 12-14"; "" when an empty SEARCH filled an empty or new file
    detail: str  # "3 lines replaced by 5, matched ignoring trailing whitespace"


def replace(cmd: Replace, turn: Turn) -> Success:
    text = read_text_if_any(cmd.path, turn)
    if text is None and any(line.strip() for line in block_lines(cmd.blocks[0].search)):
        raise not_found(cmd.path)
    lines = split_lines(text or "")
    kept = style(lines)
    steps: list[_Step] = []
    for number, block in enumerate(cmd.blocks, 1):
        try:
            search = unmasked(cmd.path, block.search, turn, "the SEARCH text")
            step = _apply_block(cmd.path, lines, block.model_copy(update={"search": search}), kept)
        except CommandFailed as failed:
            where = f"Block {number} of {len(cmd.blocks)} (reply line {block.line})"
            if len(cmd.blocks) == 1:
                where = f"The block at reply line {block.line}"
            raise CommandFailed(f"{where}: {failed.summary}", failed.output) from None
        lines = step.lines
        steps.append(step)
    created = write(cmd.path, "".join(lines), turn)
    return Success(_replaced(cmd.path, steps, created))


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


def _apply_block(path: str, lines: list[str], block: ReplaceBlock, kept: Style) -> _Step:
    """``lines`` with one block applied and what it did; fails if it cannot be applied."""
    search = block_lines(block.search)
    replace = block_lines(block.replace)
    if not any(line.strip() for line in search):
        if any(line.strip() for line in lines):
            raise CommandFailed(
                f"the SEARCH part is empty, but '{path}' is not; an empty SEARCH only fills a "
                "new or empty file. To add lines, SEARCH for the lines next to them and repeat "
                f"them in REPLACE; {UNCHANGED}",
            )
        detail = ", ".join([count(len(replace)), *block.tolerated])
        return _Step(splice([], 1, 0, replace, kept), "", detail)
    contents = [strip_eol(line) for line in lines]
    found = find(contents, search)
    notes = list(block.tolerated)
    if not isinstance(found, Match) and _has_view_numbers(search):
        search = [_drop_view_number(line) for line in search]
        replace = [_drop_view_number(line) for line in replace]
        retry = find(contents, search)
        if isinstance(retry, Match):
            found = retry
            notes.append("removed the line numbers copied from the file view")
    if not isinstance(found, Match) and _blank_edges(search):
        trimmed, kept_replace = _trim_blank_edges(search, replace)
        retry = find(contents, trimmed)
        if isinstance(retry, Match):
            found, search, replace = retry, trimmed, kept_replace
            notes.append("ignored the blank lines at the edges of SEARCH")
    if not isinstance(found, Match):
        raise unmatched(path, contents, search, found)
    start, end = found.start + 1, found.start + len(search)
    new = found.adapt(replace)
    if new is None:
        raise CommandFailed(
            f"the SEARCH text matches {lines_name(start, end)} of '{path}' only with less "
            "indentation, and the REPLACE lines are not indented enough to take that much "
            f"away; copy the lines exactly; {UNCHANGED}",
        )
    how = HOW[found.layer]
    detail = ", ".join(
        n for n in (f"{count(end - start + 1)} replaced by {len(new)}", how, *notes) if n
    )
    return _Step(splice(lines, start, end, new, kept), lines_name(start, end), detail)


def unmatched(
    path: str,
    contents: list[str],
    search: list[str],
    found: Ambiguous | NotFound,
    what: str = "the SEARCH text",
    fix: str = "SEARCH must repeat the file's lines exactly",
) -> CommandFailed:
    """Why lines to find (``what``: a SEARCH text, a hunk's lines) that stand in no one place
    were not applied."""
    if isinstance(found, Ambiguous):
        starts = found.starts
        shown = ", ".join(str(i + 1) for i in starts[:10])
        more = f" and {len(starts) - 10} more" if len(starts) > 10 else ""
        return CommandFailed(
            f"{what} matches {len(starts)} places in '{path}' (starting at lines "
            f"{shown}{more}); add lines around it so that it matches one place only; "
            f"{UNCHANGED}",
        )
    if found.closest is None:
        return CommandFailed(
            f"{what} is not in '{path}', and no lines there are similar; "
            f"READ_FILE '{path}' to see it as it is now; {UNCHANGED}",
        )
    first, stop = found.closest
    shown = "\n".join(numbered(contents[first:stop], first + 1))
    only = _only_blanks_differ(contents[first:stop], search)
    if only:
        return CommandFailed(
            f"{what} is not in '{path}': {lines_name(first + 1, stop)} (shown below) differ "
            f"from it only in {only}; {fix}, tabs and spaces included; {UNCHANGED}",
            shown,
        )
    return CommandFailed(
        f"{what} is not in '{path}'; did you mean {lines_name(first + 1, stop)} (shown "
        f"below)? {fix}; {UNCHANGED}",
        shown,
    )


def _only_blanks_differ(found: list[str], search: list[str]) -> str:
    """How ``found`` differs from ``search`` when only tabs and spaces do ("" otherwise):
    tabs against spaces, and/or blanks at line ends."""
    if len(found) != len(search):
        return ""
    pairs = list(zip(found, search, strict=True))
    if any(_BLANKS.sub(" ", a).strip() != _BLANKS.sub(" ", b).strip() for a, b in pairs):
        return ""
    inner = [(a.rstrip(), b.rstrip()) for a, b in pairs if a.rstrip() != b.rstrip()]
    differs = []
    if any("\t" in a for a, _ in inner):
        differs.append("tabs against spaces (the file has tabs where SEARCH has spaces)")
    elif any("\t" in b for _, b in inner):
        differs.append("tabs against spaces (SEARCH has tabs where the file has spaces)")
    elif inner:
        differs.append("the number of spaces")
    if any(a[len(a.rstrip()) :] != b[len(b.rstrip()) :] for a, b in pairs):
        differs.append("blanks at line ends")
    return " and ".join(differs)


_BLANKS = re.compile(r"[ \t]+")


def _blank_edges(search: list[str]) -> bool:
    return not search[0].strip() or not search[-1].strip()


def _trim_blank_edges(search: list[str], replace: list[str]) -> tuple[list[str], list[str]]:
    """SEARCH without its blank first and last lines, and REPLACE without as many blank lines
    at the same edges (a blank line REPLACE adds elsewhere stays)."""
    head = next(i for i, line in enumerate(search) if line.strip())
    tail = next(i for i, line in enumerate(reversed(search)) if line.strip())
    cut_head = 0
    while cut_head < min(head, len(replace)) and not replace[cut_head].strip():
        cut_head += 1
    rest = replace[cut_head:]
    cut_tail = 0
    while cut_tail < min(tail, len(rest)) and not rest[len(rest) - 1 - cut_tail].strip():
        cut_tail += 1
    return search[head : len(search) - tail], rest[: len(rest) - cut_tail]


def _has_view_numbers(search: list[str]) -> bool:
    return all(_VIEW_NUMBER.match(line) for line in search if line.strip())


def _drop_view_number(line: str) -> str:
    match = _VIEW_NUMBER.match(line)
    return line[match.end() :] if match else line
