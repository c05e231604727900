"""Where a SEARCH text stands in a file's lines: pure, and without a word for the LLM.

:func:`find` tries ever looser layers (exact, then ignoring trailing whitespace, then ignoring a
uniform difference in indentation, then reading the file's indenting tabs as spaces) and answers
with a :class:`Match`, an :class:`Ambiguous` (several places in the first layer that has any) or
a :class:`NotFound` (with the closest window, if one is alike enough to offer).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterator
from difflib import SequenceMatcher
from enum import Enum
from typing import NamedTuple

CLOSEST_RATIO = 0.6  # how similar lines must be to be offered as "did you mean"
CLOSEST_LINES = 20_000  # lines of a file compared with an unmatched SEARCH text
CLOSEST_CHARS = 200  # characters of each line compared
CLOSEST_WINDOWS = 40  # windows of the file compared
TAB_WIDTHS = (4, 8, 2)  # how many spaces a tab in the file may stand for, most likely first
MATCH_BUDGET = 10_000_000  # lines compared to check the indentation of the places found

# How the replacement lines are adapted to the place found; None: they cannot be.
Adapt = Callable[[list[str]], list[str] | None]


class Layer(Enum):
    """What a match had to ignore."""

    EXACT = "exact"
    TRAILING_WHITESPACE = "trailing whitespace"
    INDENTATION = "indentation"
    TABS = "tabs"  # the file indents with tabs where SEARCH has spaces


class Match(NamedTuple):
    """The one place the SEARCH text stands (0-based line index)."""

    start: int
    layer: Layer
    adapt: Adapt


class Ambiguous(NamedTuple):
    """The SEARCH text stands in several places (0-based line indexes, in file order)."""

    starts: list[int]


class NotFound(NamedTuple):
    """The SEARCH text stands nowhere; ``closest`` is the window of the file most like it
    (0-based start, exclusive stop), if any is alike enough."""

    closest: tuple[int, int] | None


def find(contents: list[str], search: list[str]) -> Match | Ambiguous | NotFound:
    """Where ``search`` (lines without endings, one not blank) stands in ``contents``."""
    for layer in (_exact, _loose_trailing, _loose_indent, _tab_indent):
        matches = layer(contents, search)
        if len(matches) == 1:
            return matches[0]
        if matches:
            return Ambiguous([m.start for m in matches])
    return NotFound(_closest(contents, search))


def _same(lines: list[str]) -> list[str]:
    return lines


def _exact(contents: list[str], search: list[str]) -> list[Match]:
    return [Match(i, Layer.EXACT, _same) for i in _occurrences(contents, search)]


def _occurrences(contents: list[str], search: list[str]) -> list[int]:
    """Every start (overlapping ones too) where ``search`` stands in ``contents``, in order.

    Knuth-Morris-Pratt over lines: linear in both, where comparing a slice at every place the
    first line stands is quadratic (60,000 identical lines against 200,000: minutes).
    """
    k = len(search)
    fallback = [0] * k  # fallback[j]: length of the longest proper border of search[: j + 1]
    border = 0
    for j in range(1, k):
        while border and search[j] != search[border]:
            border = fallback[border - 1]
        if search[j] == search[border]:
            border += 1
        fallback[j] = border
    starts = []
    matched = 0
    for i, line in enumerate(contents):
        while matched and line != search[matched]:
            matched = fallback[matched - 1]
        if line == search[matched]:
            matched += 1
            if matched == k:
                starts.append(i - k + 1)
                matched = fallback[matched - 1]
    return starts


def _loose_trailing(contents: list[str], search: list[str]) -> list[Match]:
    layer = Layer.TRAILING_WHITESPACE
    return [Match(m.start, layer, _same) for m in _exact(_rstripped(contents), _rstripped(search))]


def _rstripped(lines: list[str]) -> list[str]:
    return [line.rstrip() for line in lines]


def _loose_indent(contents: list[str], search: list[str]) -> list[Match]:
    """Matches where every non-blank line differs only by the same leading whitespace."""
    k = len(search)
    places = _occurrences([line.strip() for line in contents], [line.strip() for line in search])
    if len(places) * k > MATCH_BUDGET:  # too many to check each one's indentation: ambiguous
        return [Match(i, Layer.INDENTATION, _same) for i in places]
    matches = []
    for i in places:
        adapt = _reindent(contents[i : i + k], search)
        if adapt is not None:
            matches.append(Match(i, Layer.INDENTATION, adapt))
    return matches


def _reindent(found: list[str], search: list[str]) -> Adapt | None:
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


def _tab_indent(contents: list[str], search: list[str]) -> list[Match]:
    """Matches where the file indents with tabs and SEARCH with spaces (chat UIs turn tabs
    into spaces): tabs are read as 4, 8 or 2 spaces, the first width that matches anywhere
    counts, and the replacement is indented with tabs of that width again."""
    if not any(line.startswith("\t") for line in contents) or any("\t" in s for s in search):
        return []
    wanted = _rstripped(search)
    for width in TAB_WIDTHS:
        spaced = [_untab(line, width) for line in contents]
        matches = _exact(spaced, wanted)
        if matches:
            adapt = _retab(width)
            return [Match(m.start, Layer.TABS, adapt) for m in matches]
    return []


def _untab(line: str, width: int) -> str:
    """The line with its leading tabs as spaces, trailing whitespace dropped."""
    body = line.lstrip(" \t")
    return line[: len(line) - len(body)].expandtabs(width) + body.rstrip()


def _retab(width: int) -> Adapt:
    def retab(lines: list[str]) -> list[str]:
        out = []
        for line in lines:
            body = line.lstrip(" ")
            tabs, spaces = divmod(len(line) - len(body), width)
            out.append("\t" * tabs + " " * spaces + body)
        return out

    return retab


def _closest(contents: list[str], search: list[str]) -> tuple[int, int] | None:
    """The window of the file most like ``search``, if it is alike enough to be worth offering
    ("did you mean").

    Blank lines count on neither side: a SEARCH that lacks (or adds) a blank line still finds
    its place. Comparing every window would be quadratic, so only likely windows are compared:
    where a SEARCH line stands exactly, and where the lines most like its longest lines stand.
    A window's score is the mean difflib ratio of its lines with the SEARCH lines.
    """
    kept = [i for i, line in enumerate(contents[:CLOSEST_LINES]) if line.strip()]
    bare = [contents[i].strip()[:CLOSEST_CHARS] for i in kept]
    wanted = [line.strip()[:CLOSEST_CHARS] for line in search if line.strip()]
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
    if where is None:
        return None
    return kept[where], kept[min(where + len(wanted), len(kept)) - 1] + 1


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
