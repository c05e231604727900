"""What changed in the workspace listing since the model last saw it (docs/prompts.md).

A chat keeps its history: a listing the model has already read is not sent again. The state
keeps what the model knows of the workspace (each file with the size it was last shown with)
and the message that told it; the next prompt says "unchanged since message N" in one line,
or lists the files added, removed and changed. A size counts as changed only when it moved
by ``NOISE`` of itself and at least ``NOISE_BYTES`` (or to or from empty): a line added here and
there is noise, and the model knows what it wrote. The full listing comes back in the first
prompt, a prompt written again for the same message, ``show --full``, after more than
``CHANGES_SHOWN`` changes, and when the model asks for it (READ_FILE "."). Pure: (path, size)
pairs and the state's fields in, lines out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codingagent.prompt.overview import human_size
from codingagent.workspace.listing import UNSIZED

LISTED_FILES = 2000  # files the state keeps to list changes; beyond, a change lists them all
CHANGES_SHOWN = 40  # more changed files than this: the full listing again
NOISE = 0.1  # a size that moved by less than this share of itself is not a change ...
NOISE_BYTES = 16  # ... nor one that moved by fewer bytes


def resized(before: int, now: int) -> bool:
    """Whether a file's size moved enough to be told (see the module doc)."""
    if before == now or UNSIZED in (before, now):
        return False
    if 0 in (before, now):
        return True
    return abs(now - before) >= max(NOISE * before, NOISE_BYTES)


def fingerprint(files: Mapping[str, int]) -> str:
    """A short digest of (path, size) pairs, to tell "unchanged" without keeping many."""
    text = "\n".join(f"{path}\t{size}" for path, size in sorted(files.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ListingChange:
    """What the Workspace Files section of a prompt shows: ``lines`` (None: the full
    listing), and what the state keeps afterwards: the sizes the model knows (None when the
    workspace has more than ``LISTED_FILES`` files) and their digest."""

    lines: list[str] | None
    known: dict[str, int] | None
    digest: str


def listing_change(
    files: Sequence[tuple[str, int]],
    before: Mapping[str, int] | None,
    before_digest: str | None,
    since: int | None,
) -> ListingChange:
    """The Workspace Files lines for ``files``, given what the model knew (``before``, or
    only its digest ``before_digest`` for a large workspace) since message ``since``;
    ``since`` None: the full listing."""
    now = dict(files)
    if since is None:
        return _whole(now)
    unchanged = [f"(unchanged since message {since})"]
    if before is None:
        digest = fingerprint(now)
        if digest != before_digest:
            return _whole(now, digest)
        return ListingChange(unchanged, None, digest)
    added = [path for path in now if path not in before]
    removed = [path for path in before if path not in now]
    changed = [path for path in now if path in before and resized(before[path], now[path])]
    if not (added or removed or changed):  # the digest kept is that of ``before``
        return ListingChange(unchanged, dict(before), before_digest or fingerprint(before))
    known = {path: now[path] if path in added or path in changed else before[path] for path in now}
    if len(added) + len(removed) + len(changed) > CHANGES_SHOWN or len(known) > LISTED_FILES:
        return _whole(now)
    lines = [f'(changes since message {since}; READ_FILE path="." lists every file)']
    lines += [f"  added: {path}{_size(now[path])}" for path in sorted(added)]
    lines += [f"  removed: {path}" for path in sorted(removed)]
    lines += [f"  changed: {path}{_size(now[path])}" for path in sorted(changed)]
    return ListingChange(lines, known, fingerprint(known))


def _whole(now: dict[str, int], digest: str | None = None) -> ListingChange:
    """The full listing: the state keeps every file's size (None past ``LISTED_FILES``)."""
    known = now if len(now) <= LISTED_FILES else None
    return ListingChange(None, known, digest or fingerprint(now))


def _size(size: int) -> str:
    return "" if size == UNSIZED else f" ({human_size(size)})"
