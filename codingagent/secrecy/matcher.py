"""Many patterns, one pass: where each of a set of patterns matches in a buffer.

Hyperscan (Intel's multi-pattern matcher, the ``hyperscan`` package) runs a whole set at
memory speed, whatever its size: the workspace scan's prefilter (:mod:`.prefilter`) and the
disguises of known secrets (:mod:`.disguises`) each compile one set. Where hyperscan cannot be
loaded (no wheel for the platform, a CPU without what it needs), the same set runs as Python
regular expressions or ``bytes.find``: the same answers, slower (docs/secrets.md).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

Ends = Callable[[bytes], "list[tuple[int, int]] | None"]


def compile_set(patterns: Sequence[tuple[bytes, bool]], literal: bool, limit: int = 0) -> Ends:
    """A function giving (pattern index, end) of each match of ``patterns`` ((pattern,
    caseless) pairs; literal bytes if ``literal``) in a buffer, overlapping matches included
    (hyperscan) or not (the fallback); ``None`` past ``limit`` matches (0: no limit)."""
    if not patterns:
        return lambda data: []
    try:
        return _hyperscan(patterns, literal, limit)
    except Exception:  # not installed, or this CPU lacks what it needs: the slow way
        return _python(patterns, literal, limit)


def _hyperscan(patterns: Sequence[tuple[bytes, bool]], literal: bool, limit: int) -> Ends:
    import hyperscan

    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[pattern for pattern, _ in patterns],
        ids=list(range(len(patterns))),
        elements=len(patterns),
        flags=[hyperscan.HS_FLAG_CASELESS if caseless else 0 for _, caseless in patterns],
        literal=literal,
    )
    scratch = hyperscan.Scratch(database)
    lock = threading.Lock()  # a scratch space serves one scan at a time

    def ends(data: bytes) -> list[tuple[int, int]] | None:
        found: list[tuple[int, int]] = []

        def on_match(index: int, _start: int, end: int, _flags: int, _context: Any) -> bool:
            found.append((index, end))
            return bool(limit) and len(found) > limit  # True stops the scan

        if not data:
            return found
        try:
            with lock:
                database.scan(data, match_event_handler=on_match, scratch=scratch)
        except hyperscan.ScanTerminated:
            return None
        return found

    return ends


def _python(patterns: Sequence[tuple[bytes, bool]], literal: bool, limit: int) -> Ends:
    if literal:
        return _finds(patterns, limit)
    compiled = [re.compile(p, re.IGNORECASE if caseless else 0) for p, caseless in patterns]

    def ends(data: bytes) -> list[tuple[int, int]] | None:
        found = [(i, m.end()) for i, each in enumerate(compiled) for m in each.finditer(data)]
        return None if limit and len(found) > limit else found

    return ends


def _finds(patterns: Sequence[tuple[bytes, bool]], limit: int) -> Ends:
    words = [(word.lower() if caseless else word, caseless) for word, caseless in patterns]

    def ends(data: bytes) -> list[tuple[int, int]] | None:
        lowered = data.lower() if any(caseless for _, caseless in words) else data
        found = []
        for index, (word, caseless) in enumerate(words):
            where = lowered if caseless else data
            at = where.find(word)
            while at >= 0:
                found.append((index, at + len(word)))
                at = where.find(word, at + 1)
        return None if limit and len(found) > limit else found

    return ends
