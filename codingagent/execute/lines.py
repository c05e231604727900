"""A file's lines as EDIT_FILE and REPLACE see them: endings kept, the file's style kept."""

from __future__ import annotations

from typing import NamedTuple

from codingagent.protocol.commands import file_lines, plural


def split_lines(text: str) -> list[str]:
    """The file's lines as :func:`file_lines` counts them, each with its ending kept: the
    last one has none when the file does not end with a newline."""
    lines = [f"{line}\n" for line in file_lines(text)]
    if lines and not text.endswith("\n"):
        lines[-1] = lines[-1][:-1]
    return lines


def block_lines(text: str) -> list[str]:
    """The lines of an EDIT_FILE body or a SEARCH/REPLACE part."""
    return file_lines(text.replace("\r\n", "\n"))


class Style(NamedTuple):
    """How a file ends its lines: what edits keep, even when they empty it on the way."""

    eol: str  # taken from the first line ending
    final_newline: bool  # an empty file counts as ending with one


def style(lines: list[str]) -> Style:
    eol = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    return Style(eol, not lines or lines[-1].endswith("\n"))


def splice(
    lines: list[str], start: int, end: int, new: list[str], kept: Style | None = None
) -> list[str]:
    """Replace 1-based lines ``start..end`` (``end = start - 1``: insert) by ``new``.

    New lines take the file's newline style (``kept``, or the one ``lines`` have).  A file
    that did not end with a newline still does not, whatever the edit did at its end.
    """
    kept = kept or style(lines)
    result = lines[: start - 1] + [line + kept.eol for line in new] + lines[end:]
    if not kept.final_newline and result:
        result = [line if line.endswith("\n") else line + kept.eol for line in result]
        result[-1] = strip_eol(result[-1])
    return result


def strip_eol(line: str) -> str:
    return line[:-2] if line.endswith("\r\n") else line.removesuffix("\n")


def count(n: int) -> str:
    """``1 line``, ``3 lines``."""
    return plural(n, "line")


def lines_name(start: int, end: int) -> str:
    """``line 3``, ``lines 3-5``."""
    return f"line {start}" if start == end else f"lines {start}-{end}"
