"""The one diff engine: the change from one text to another as unified-diff hunks, the old
text with only some of them applied, and the hunks as unified-diff text. Pure.

Every diff the agent shows or writes comes from here: a review's hunks (``review/``), the
page's diff of each turn and ``codingagent diff``'s patch (:mod:`.changeset`). difflib's
matcher runs on the lines between the common head and tail only, so its cost follows the
change, not the file; its groups are ``diff -u``'s: three lines of context, and changes closer
than six lines share a hunk, so no two hunks share an old line. Only ``\\n`` ends a line, as in
a patch; lines keep their endings (``\\r\\n`` too), so applying every hunk to the old text gives
the new one byte for byte, applying none gives the old one (tests/test_review.py checks both,
and that each hunk alone changes its own lines only, with hypothesis), and :func:`unified`
writes a patch that ``patch -R`` takes back (tests/test_session_diff.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

CONTEXT = 3
NO_NEWLINE = "\\ No newline at end of file"


@dataclass(frozen=True)
class Hunk:
    """One hunk: the old lines it covers (context and removed) from ``old_start``, the new
    lines it leaves (context and added) from ``new_start`` (0-based line indexes), each with its
    ending, and its lines as a unified diff shows them (``' '``, ``'-'``, ``'+'``)."""

    old_start: int
    old: tuple[str, ...]
    new_start: int
    new: tuple[str, ...]
    body: tuple[str, ...]

    @property
    def header(self) -> str:
        """``@@ -10,7 +10,9 @@``: 1-based, as ``diff -u`` writes it (an empty side names the
        line before it); "" for a hunk with no lines on either side (a file not text)."""
        if not self.old and not self.new:
            return ""
        old, new = _span(self.old_start, len(self.old)), _span(self.new_start, len(self.new))
        return f"@@ -{old} +{new} @@"

    def changed_lines(self) -> tuple[int, int] | None:
        """The first and last line (1-based, of the new text) the hunk adds; None when it only
        removes lines."""
        added = [n for n, line in enumerate(self._side("+")) if line]
        if not added:
            return None
        return self.new_start + added[0] + 1, self.new_start + added[-1] + 1

    def removed_lines(self) -> tuple[int, int] | None:
        """The first and last line (1-based, of the old text) the hunk removes, or None."""
        removed = [n for n, line in enumerate(self._side("-")) if line]
        if not removed:
            return None
        return self.old_start + removed[0] + 1, self.old_start + removed[-1] + 1

    def _side(self, mark: str) -> list[bool]:
        """For each line of one side (``+``: new, ``-``: old), whether it is ``mark``'s."""
        return [
            line[:1] == mark for line in self.body if line[:1] in (" ", mark) and line != NO_NEWLINE
        ]


def hunks(before: str, after: str) -> list[Hunk]:
    """The hunks that make ``after`` of ``before``, in file order (none when they are equal)."""
    if before == after:
        return []
    old, new = _lines(before), _lines(after)
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    skip, keep = max(0, head - CONTEXT), max(0, tail - CONTEXT)
    a, b = old[skip : len(old) - keep], new[skip : len(new) - keep]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    found = []
    for group in matcher.get_grouped_opcodes(CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        body: list[str] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                body += _marked(" ", a[a1:a2])
                continue
            if tag in ("replace", "delete"):
                body += _marked("-", a[a1:a2])
            if tag in ("replace", "insert"):
                body += _marked("+", b[b1:b2])
        found.append(Hunk(skip + i1, tuple(a[i1:i2]), skip + j1, tuple(b[j1:j2]), tuple(body)))
    return found


def apply(before: str, found: Sequence[Hunk], accepted: Collection[int]) -> str:
    """``before`` with the hunks whose indexes (0-based, into ``found``) are ``accepted``
    applied and the others not: a ValueError if ``before`` is not the text they were made of."""
    old = _lines(before)
    out: list[str] = []
    at = 0
    for index, hunk in enumerate(found):
        end = hunk.old_start + len(hunk.old)
        if hunk.old_start < at or tuple(old[hunk.old_start : end]) != hunk.old:
            raise ValueError(f"hunk {index + 1} does not fit the text it is applied to")
        out += old[at : hunk.old_start]
        out += hunk.new if index in accepted else hunk.old
        at = end
    return "".join(out + old[at:])


def _marked(mark: str, lines: Sequence[str]) -> list[str]:
    """Unified-diff lines: each line after its mark, without its ending; a line without one
    (the text's last) is followed by ``\\ No newline at end of file``."""
    shown = []
    for line in lines:
        shown.append(mark + (line[:-2] if line.endswith("\r\n") else line.removesuffix("\n")))
        if not line.endswith("\n"):
            shown.append(NO_NEWLINE)
    return shown


def _span(start: int, length: int) -> str:
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def unified(fromfile: str, tofile: str, found: Sequence[Hunk]) -> str:
    """``found`` as a unified diff from ``fromfile`` to ``tofile`` (``a/path``, ``/dev/null``):
    each line with its own ending, a line without one followed by ``\\ No newline at end of
    file``; "" when there is no hunk."""
    if not found:
        return ""
    out = [f"--- {fromfile}\n", f"+++ {tofile}\n"]
    for hunk in found:
        out.append(f"{hunk.header}\n")
        old, new = iter(hunk.old), iter(hunk.new)
        for shown in hunk.body:
            if shown == NO_NEWLINE or shown[:1] not in (" ", "-", "+"):
                continue
            line = next(new) if shown[0] == "+" else next(old)
            if shown[0] == " ":
                next(new)
            out.append(
                shown[0] + line if line.endswith("\n") else f"{shown[0]}{line}\n{NO_NEWLINE}\n"
            )
    return "".join(out)


def _lines(text: str) -> list[str]:
    """The lines of ``text``, each with its ending; only ``\\n`` ends a line, and the last one
    has none when the text does not end with a newline."""
    pieces = text.split("\n")
    return [piece + "\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
