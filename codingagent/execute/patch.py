"""PATCH: unified diffs and ``*** Begin Patch`` envelopes, applied all or nothing.

:mod:`codingagent.protocol.patches` reads the body into file sections; here each hunk is
placed by its lines, not its numbers: the ``' '`` and ``'-'`` lines are found in the file by
:func:`matching.find` (exactly, or ignoring trailing whitespace, indentation or tabs, never by
similarity), after the previous hunk's place first. An ``@@`` line number only decides between
several places that match equally (the one it names is taken; any other choice fails). Every
file's new content is worked out before any file is written, so a hunk that does not apply
leaves every file unchanged.
"""

from __future__ import annotations

from codingagent.execute.context import (
    CommandFailed,
    Success,
    Turn,
    noted,
    read_text_if_any,
    remove,
    unmasked,
    write,
)
from codingagent.execute.lines import count, lines_name, splice, split_lines, strip_eol, style
from codingagent.execute.matching import Ambiguous, Match, NotFound, find
from codingagent.execute.placeholders import syntax_warning
from codingagent.execute.replace import HOW, UNCHANGED, unmatched
from codingagent.protocol.commands import Patch, plural
from codingagent.protocol.patches import DiffError, FilePatch, Hunk, read_patch

_WHAT = "the hunk's text (its ' ' and '-' lines)"
_FIX = "the ' ' and '-' lines of a hunk must repeat the file's lines"


def patch(cmd: Patch, turn: Turn) -> Success:
    try:
        sections = read_patch(cmd.text, cmd.body_line)
    except DiffError as e:
        raise CommandFailed(f"{e}; {UNCHANGED}") from None
    # By real path: the path as the LLM wrote it, whether it existed, and its new text (None:
    # deleted), in the order the patch names them.
    planned: dict[str, tuple[str, bool, str | None]] = {}
    parts = []
    for section in sections:
        rel = turn.workspace.relpath(section.path)  # a forbidden path fails before any write
        if rel in planned:
            path, existed, text = planned[rel]
        else:
            path, text = section.path, read_text_if_any(section.path, turn)
            existed = text is not None
        for hunk in section.hunks:  # the lines it expects, as the file holds them
            hunk.old = [unmasked(path, line, turn, "a '-' or context line") for line in hunk.old]
        new, part = _plan(section, text)
        planned[rel] = (path, existed, new)  # named by its first spelling
        parts.append(part)
    warnings = []
    for rel, (path, existed, new) in planned.items():
        if new is None:
            if existed:
                remove(path, turn)
            continue
        write(path, new, turn)
        turn.runs.pop(rel, None)  # an EDIT_FILE run on the file is over
        warning = syntax_warning(rel, turn) if rel.endswith(".py") else ""
        if warning:
            warnings.append(f"'{path}': {warning}")
    summary = "; ".join(parts)
    return Success(noted(summary[0].upper() + summary[1:], "; ".join(warnings)))


def _plan(section: FilePatch, text: str | None) -> tuple[str | None, str]:
    """The file's new text (None: delete it) and what the result says about it."""
    path = section.path
    if section.action == "add":
        if text:
            raise CommandFailed(
                f"'{path}' already exists, so the patch cannot create it; write a diff against "
                f"its content (READ_FILE it first); {UNCHANGED}"
            )
        new = [line for hunk in section.hunks for line in hunk.new]
        if any(hunk.old for hunk in section.hunks):
            raise CommandFailed(f"the new file '{path}' has lines to remove; {UNCHANGED}")
        ends = not any(h.new_ends_file_without_newline for h in section.hunks) and new
        return "\n".join(new) + ("\n" if ends else ""), f"created '{path}' ({count(len(new))})"
    if text is None:
        raise CommandFailed(f"File '{path}' not found; {UNCHANGED}")
    if section.action == "delete":
        removed = [line.rstrip() for hunk in section.hunks for line in hunk.old]
        have = [strip_eol(line).rstrip() for line in split_lines(text)]
        if section.hunks and removed != have:
            raise CommandFailed(
                f"the lines the patch removes from '{path}' are not its content, so it was not "
                f"deleted; READ_FILE it, or use DELETE_FILE; {UNCHANGED}"
            )
        return None, f"deleted '{path}'"
    return _update(section, text)


def _update(section: FilePatch, text: str) -> tuple[str, str]:
    lines = split_lines(text)
    kept = style(lines)
    floor = 0  # hunks go in file order: the next one is looked for from here first
    offset = 0  # how many lines the hunks so far added (negative: removed)
    places = []
    for number, hunk in enumerate(section.hunks, 1):
        contents = [strip_eol(line) for line in lines]
        try:
            start, new, how = _place(section.path, contents, hunk, floor, offset)
        except CommandFailed as failed:
            where = f"Hunk {number} of {len(section.hunks)} for '{section.path}'"
            raise CommandFailed(
                f"{where} (reply line {hunk.line}): {failed.summary}", failed.output
            ) from None
        lines = splice(lines, start + 1, start + len(hunk.old), new, kept)
        first = start - offset + 1  # in the file as it was before the patch
        place = (
            lines_name(first, first + len(hunk.old) - 1) if hunk.old else f"after line {first - 1}"
        )
        said = f"@@ said line {hunk.hint}" if hunk.hint not in (None, first) and hunk.old else ""
        extras = [n for n in (how, said) if n]
        places.append(f"{place} ({', '.join(extras)})" if extras else place)
        floor = start + len(new)
        offset += len(new) - len(hunk.old)
    result = "".join(lines)
    if any(h.new_ends_file_without_newline for h in section.hunks):
        result = strip_eol(result)
    elif any(h.old_ends_file_without_newline for h in section.hunks) and result:
        result = result if result.endswith("\n") else result + kept.eol
    hunks = plural(len(section.hunks), "hunk")
    return result, f"changed '{section.path}': {hunks}, {', '.join(places)}"


def _place(
    path: str, contents: list[str], hunk: Hunk, floor: int, offset: int
) -> tuple[int, list[str], str]:
    """Where ``hunk`` goes (0-based index of its first old line), its new lines adapted to
    the place, and how it matched; fails if it has no one place."""
    if not any(line.strip() for line in hunk.old):
        return _by_number(contents, hunk, offset), hunk.new, ""
    found = find(contents[floor:], hunk.old)
    if isinstance(found, Match):
        found = found._replace(start=floor + found.start)
    else:  # before the previous hunk (hunks out of order), or nowhere
        found = find(contents, hunk.old)
    if isinstance(found, Ambiguous):
        found = _disambiguate(contents, hunk, found, floor, offset)
    if not isinstance(found, Match):
        raise _unplaced(path, contents, hunk, found)
    new = found.adapt(hunk.new)
    if new is not None:  # context lines stay as the file has them (whitespace and all)
        for new_index, old_index in hunk.kept:
            new[new_index] = contents[found.start + old_index]
    if new is None:
        raise CommandFailed(
            f"its lines match {lines_name(found.start + 1, found.start + len(hunk.old))} only "
            f"with less indentation, and its '+' lines are not indented enough to take that "
            f"much away; {UNCHANGED}"
        )
    return found.start, new, HOW[found.layer]


def _disambiguate(
    contents: list[str], hunk: Hunk, found: Ambiguous, floor: int, offset: int
) -> Match | Ambiguous:
    """Of several places, the one the hunk's ``@@`` names: the first after its anchor line
    (``@@ def g():``), else the one at its line number; if it names none, still several."""
    if hunk.anchor:
        after = next(
            (i + 1 for i in range(floor, len(contents)) if contents[i].strip() == hunk.anchor),
            None,
        )
        if after is not None:
            rest = find(contents[after:], hunk.old)
            if isinstance(rest, Match):
                return rest._replace(start=after + rest.start)
    if hunk.hint is not None and hunk.hint - 1 + offset in found.starts:
        expected = hunk.hint - 1 + offset
        window = find(contents[expected : expected + len(hunk.old)], hunk.old)
        if isinstance(window, Match):
            return window._replace(start=expected)
    return found


def _by_number(contents: list[str], hunk: Hunk, offset: int) -> int:
    """Where a hunk with nothing but blank lines to place it by goes: into an empty file, or
    where its ``@@`` line number says, if the file has its (blank) lines there."""
    if not contents and not hunk.old:
        return 0
    if hunk.hint is None:
        raise CommandFailed(
            "it has no ' ' or '-' lines with text to place it by, and no @@ line numbers; add "
            f"a few unchanged lines around it; {UNCHANGED}"
        )
    # "@@ -N,0": the lines go after line N; otherwise the old lines start at line N.
    at = hunk.hint + offset - (1 if hunk.old else 0)
    there = [line.strip() for line in contents[at : at + len(hunk.old)]]
    if not 0 <= at <= len(contents) or there != [line.strip() for line in hunk.old]:
        raise CommandFailed(
            f"it has no ' ' or '-' lines with text to place it by, and the file does not have "
            f"its lines where its @@ line numbers say; {UNCHANGED}"
        )
    return at


def _unplaced(
    path: str, contents: list[str], hunk: Hunk, found: Ambiguous | NotFound
) -> CommandFailed:
    return unmatched(path, contents, hunk.old, found, _WHAT, _FIX)
