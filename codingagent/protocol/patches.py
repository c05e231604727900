"""The body of a PATCH read into file sections and hunks: pure, and total for any text.

Two formats: unified diffs (``--- a/p`` / ``+++ b/p`` / ``@@ -10,3 +10,4 @@``, as ``git diff``
and ``diff -u`` write them, ``/dev/null`` for new and deleted files) and the ``*** Begin Patch``
envelope (``*** Update File: p``, ``*** Add File: p``, ``*** Delete File: p``) that models
trained on it write.

Written here rather than with unidiff or whatthepatch: both silently drop a hunk whose header
is a bare ``@@`` (the envelope's, and common in model output), and unidiff refuses a hunk whose
line counts are off ("Hunk is shorter than expected"), which models get wrong all the time.
Here the counts and line numbers are hints only; a hunk ends where the next one, the next
file or the text ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK_HEADER = re.compile(r"@@+ *(?:-(\d+)(?:,\d+)? +\+\d+(?:,\d+)? *@@+)?(.*)")
_ENVELOPE = re.compile(r"\*\*\* (Update|Add|Delete) File: *(.+)")
_ENVELOPE_END = ("*** End Patch", "*** End of File")
_GIT_NOISE = ("diff --git ", "index ", "new file mode", "deleted file mode", "old mode", "new mode")
_NO_NEWLINE = "\\"  # "\ No newline at end of file"
NULL = "/dev/null"


class DiffError(Exception):
    """The text is not a diff this module can read; the message says where and why."""


@dataclass
class Hunk:
    """One hunk: the lines it expects (context and removed) and the lines it leaves (context
    and added), without line endings."""

    line: int  # reply line of its @@ (or of its first line)
    hint: int | None  # the old-file line number its @@ gives (1-based), if any
    anchor: str = ""  # the text after its @@ (``@@ def g():``): a line the hunk comes after
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    kept: list[tuple[int, int]] = field(default_factory=list)  # context: (new index, old index)
    old_ends_file_without_newline: bool = False
    new_ends_file_without_newline: bool = False


@dataclass
class FilePatch:
    """What one file section does: update ``path``, or create it, or delete it."""

    line: int  # reply line where the section starts
    path: str
    action: str  # "update", "add" or "delete"
    hunks: list[Hunk] = field(default_factory=list)


def read_patch(text: str, first_line: int) -> list[FilePatch]:
    """The file sections of a PATCH body; ``first_line`` is the reply line of its first line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    numbered = list(enumerate((line.rstrip("\r") for line in lines), first_line))
    start = next((i for i, (_, line) in enumerate(numbered) if line.strip()), len(numbered))
    if start < len(numbered) and numbered[start][1].strip() == "*** Begin Patch":
        files = _envelope(numbered[start + 1 :])
    else:
        files = _diff_sections(numbered)
    if not files:
        raise DiffError(
            "no file in the patch; write a unified diff ('--- a/path', '+++ b/path', '@@' "
            "hunks) or a '*** Begin Patch' envelope"
        )
    return files


def _diff_sections(lines: list[tuple[int, str]]) -> list[FilePatch]:
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        number, line = lines[i]
        if _is_file_header(lines, i):
            old, new = _header_path(line[4:]), _header_path(lines[i + 1][1][4:])
            if old == NULL and new == NULL:
                raise DiffError(f"reply line {number}: both sides of the file are {NULL}")
            action = "add" if old == NULL else "delete" if new == NULL else "update"
            section = FilePatch(number, old if new == NULL else new, action)
            files.append(section)
            i = _hunks(lines, i + 2, section)
        elif not line.strip() or line.startswith(_GIT_NOISE):
            i += 1
        else:
            raise DiffError(
                f"reply line {number}: '{_clip(line)}' is not part of a diff; a file section "
                "starts with '--- a/path' and '+++ b/path' lines"
            )
    return files


def _is_file_header(lines: list[tuple[int, str]], i: int) -> bool:
    return (
        lines[i][1].startswith("--- ") and i + 1 < len(lines) and lines[i + 1][1].startswith("+++ ")
    )


def _header_path(text: str) -> str:
    """``a/src/x.py`` -> ``src/x.py``; a tab-separated timestamp is dropped."""
    path = text.split("\t")[0].strip()
    if path.startswith(('"', "'")) and path.endswith(path[0]) and len(path) > 1:
        path = path[1:-1]
    if path != NULL and path[:2] in ("a/", "b/"):
        path = path[2:]
    return path


def _hunks(lines: list[tuple[int, str]], i: int, section: FilePatch) -> int:
    """Read ``section``'s hunks from line ``i``; the index of the first line after them."""
    while i < len(lines):
        number, line = lines[i]
        if _is_file_header(lines, i) or line.startswith(_GIT_NOISE):
            break
        if line.startswith("@@"):
            match = _HUNK_HEADER.fullmatch(line)
            hint = int(match.group(1)) if match and match.group(1) else None
            hunk = Hunk(number, hint, match.group(2).strip() if match else "")
            section.hunks.append(hunk)
            i = _hunk_lines(lines, i + 1, hunk)
        elif not line.strip():
            i += 1
        else:
            raise DiffError(f"reply line {number}: '{_clip(line)}' stands before any '@@' line")
    if section.action != "delete" and not section.hunks:
        raise DiffError(f"reply line {section.line}: '{section.path}' has no '@@' hunk")
    return i


def _hunk_lines(lines: list[tuple[int, str]], i: int, hunk: Hunk) -> int:
    """Read one hunk's lines from ``i``: context (`` ``), removed (``-``), added (``+``), and
    blank lines as blank context (chat UIs drop the space). Blank lines at its end are not
    part of it."""
    end = i
    while end < len(lines):
        number, line = lines[end]
        if line.startswith("@@") or _is_file_header(lines, end) or line.startswith(_GIT_NOISE):
            break
        if line.startswith(_ENVELOPE_END) or _ENVELOPE.fullmatch(line):
            break
        if line and line[0] not in " -+" + _NO_NEWLINE:
            raise DiffError(
                f"reply line {number}: '{_clip(line)}' in a hunk starts with neither ' ', "
                "'-' nor '+'"
            )
        end += 1
    body = [line for _, line in lines[i:end]]
    while body and not body[-1]:
        body.pop()
    previous = ""
    for line in body:
        kind, text = (line[0], line[1:]) if line else (" ", "")
        if kind == _NO_NEWLINE:
            if previous in " -":
                hunk.old_ends_file_without_newline = True
            if previous in " +":
                hunk.new_ends_file_without_newline = True
            continue
        if kind == " ":
            hunk.kept.append((len(hunk.new), len(hunk.old)))
        if kind in " -":
            hunk.old.append(text)
        if kind in " +":
            hunk.new.append(text)
        previous = kind
    return end


def _envelope(lines: list[tuple[int, str]]) -> list[FilePatch]:
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        number, line = lines[i]
        match = _ENVELOPE.fullmatch(line.strip())
        if line.strip() == "*** End Patch":
            return files
        if match is None:
            if line.strip() and not line.startswith("*** End of File"):
                raise DiffError(
                    f"reply line {number}: '{_clip(line)}' is not part of the patch; a file "
                    "starts with '*** Update File: path', '*** Add File: path' or "
                    "'*** Delete File: path'"
                )
            i += 1
            continue
        verb, path = match.groups()
        section = FilePatch(number, path.strip(), verb.lower())
        files.append(section)
        i += 1
        if verb == "Add":
            hunk = Hunk(number, None)
            section.hunks.append(hunk)
            i = _hunk_lines(lines, i, hunk)
        elif verb == "Update":
            if i < len(lines) and lines[i][1].startswith("*** Move to:"):
                raise DiffError(f"reply line {lines[i][0]}: '*** Move to' is not supported")
            i = _hunks_in_envelope(lines, i, section)
    raise DiffError("no '*** End Patch' line; the patch may have been cut off")


def _hunks_in_envelope(lines: list[tuple[int, str]], i: int, section: FilePatch) -> int:
    """An envelope's Update hunks: ``@@`` lines (bare, or with a line of context) separate
    them; the first may go without one."""
    while i < len(lines):
        number, line = lines[i]
        if _ENVELOPE.fullmatch(line.strip()) or line.strip() == "*** End Patch":
            break
        if line.startswith("*** End of File"):
            i += 1
            continue
        header = line.startswith("@@")
        hunk = Hunk(number, None, line.strip().strip("@").strip() if header else "")
        section.hunks.append(hunk)
        i = _hunk_lines(lines, i + 1 if header else i, hunk)
    if not section.hunks:
        raise DiffError(f"reply line {section.line}: '{section.path}' has no hunk")
    return i


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
