"""The workspace's instructions for coding agents, shown under ``## Project Instructions``
(docs/prompts.md, "Project instructions").

Which files: the ``instructions`` setting when it names some (``[]``: none); else every
``AGENTS.md`` that applies, the nearest first, as the AGENTS.md convention says: the one of
each folder the model works in (the folders of the files named up front and of the files it
has seen) and of the folders above it, the root's last; else the first of ``CLAUDE.md``,
``GEMINI.md``, ``CONVENTIONS.md`` and ``.github/copilot-instructions.md`` the root holds.

The section fits ``instructions_chars`` (the rest is cut, with a note saying how to read it),
is masked with the rest of the prompt, and is shown in the first prompt, in a prompt written
again for the same message, for ``show --full``, and whenever its text changed (by a reply, a
command or the user: its digest is kept in the session state); never repeated otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from posixpath import dirname

from codingagent.state import SessionState
from codingagent.workspace import PathRejected, Workspace
from codingagent.workspace.text import decoded

AGENTS = "AGENTS.md"
FALLBACKS = ("CLAUDE.md", "GEMINI.md", "CONVENTIONS.md", ".github/copilot-instructions.md")
HEADING = "## Project Instructions"


def instruction_files(
    files: Iterable[str], working: Iterable[str], names: Sequence[str] | None
) -> list[str]:
    """The instruction files among the workspace's ``files`` (posix paths from the root),
    for the model working on the paths ``working``, or as ``names`` (the setting) says."""
    present = set(files)
    if names is not None:
        return [name.strip("/") for name in names if name.strip("/") in present]
    chosen: list[str] = []
    for path in sorted({p.strip("/") for p in working}):
        # a file's folder; a folder (a path that is no file: a named folder, a listing asked
        # for) is its own
        folder = dirname(path) if path in present else path
        nested = []
        while folder not in ("", "."):
            candidate = f"{folder}/{AGENTS}"
            if candidate in present:
                nested.append(candidate)
            folder = dirname(folder)
        chosen += [p for p in nested if p not in chosen]
    if AGENTS in present:
        chosen.append(AGENTS)
    if chosen:
        return sorted(chosen, key=lambda p: -p.count("/"))  # the nearest (deepest) first
    return next(([name] for name in FALLBACKS if name in present), [])


def instructions_text(ws: Workspace, paths: list[str], budget: int) -> str | None:
    """The section's body: each file whole, within ``budget`` characters in all."""
    if not paths:
        return None
    parts = []
    room = budget
    for path in paths:
        limit = max(room, 0) * 4 + 4
        try:
            data = ws.read_bytes(path, limit=limit)
        except (OSError, PathRejected) as e:
            parts.append(f"--- {path} ---\n(cannot be shown: {getattr(e, 'strerror', None) or e})")
            continue
        found = decoded(data, whole=len(data) < limit)
        text = (f"({found.note})\n" if found.encoding else "") + found.text.rstrip("\n")
        if len(text) > room:
            try:
                size = ws.file_size(path)
            except (OSError, PathRejected):
                size = len(data)
            cut = text[: max(room, 0)]
            cut = cut[: cut.rfind("\n") + 1] if "\n" in cut else cut
            text = (
                f"{cut.rstrip()}\n(cut here to keep the prompt small: the file has {size:,} "
                f'bytes; READ_FILE path="{path}" shows the rest)'
            )
        room -= len(text)
        parts.append(f"--- {path} ---\n{text}\n--- end {path} ---")
    return "\n".join(parts)


def working_paths(state: SessionState) -> list[str]:
    """The paths the model works on: the files named up front, the files it has seen, the
    files and folders it asked for."""
    asked = [r if isinstance(r, str) else r.path for r in state.read_file_requests]
    return [*state.named_files, *state.shown_files, *asked]


_CHECK_LINE = re.compile(
    r"^\s*(?:[-*]\s+)?(?:\*\*)?(?:check|Check|CHECK)(?: command)?:(?:\*\*)?\s*(.+?)\s*$"
)


def named_check(ws: Workspace, names: Sequence[str] | None = None) -> tuple[str, str] | None:
    """The check command the workspace's instruction files name, and the file naming it
    (docs/prompts.md, "The check"): the first line ``check: COMMAND`` (lower case; ``- `` or
    ``**`` around the key allowed, ``Check command:`` too), or ``Check: `COMMAND``` in any
    case with the command in backticks, in the ``instructions`` setting's files (``names``),
    else the root's AGENTS.md, else the first of its kin the root holds."""
    candidates = [n.strip("/") for n in names] if names is not None else [AGENTS, *FALLBACKS]
    for name in candidates:
        try:  # as the section reads them: a link out of the workspace is not followed
            text = ws.read_bytes(name, limit=1 << 20).decode("utf-8", errors="replace")
        except (OSError, PathRejected):
            continue
        for line in text.splitlines():
            match = _CHECK_LINE.match(line)
            if match is None:
                continue
            key, command = line.strip(" -*").split(":", 1)[0], match.group(1).strip("* ")
            if command.startswith("`") and command.endswith("`") and len(command) > 2:
                return name, command.strip("`").strip()
            if key.startswith("check") and "`" not in command:
                return name, command
        if names is None:
            return None  # the first file present is the one read, as for the instructions
    return None
