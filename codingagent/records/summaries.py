"""The sessions of a run directory, most recent first, and the few fields a list of them shows.

``codingagent sessions`` and its shell completion read only these fields from each state file,
as plain JSON: validating whole states (pydantic) would cost more than listing them, and a
damaged file is one row saying so, never a stop. docs/performance.md has the measures.

This module imports nothing that loads pydantic, so the command starts fast.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

# A session id's shape: ``codingagent.state.SESSION_ID``, which is not imported (pydantic).
_ID = re.compile(r"^[0-9a-f]{8}$")


@dataclass(frozen=True)
class Summary:
    """One row of the sessions list; ``damaged`` says why the state file could not be read."""

    session_id: str
    task: str = ""
    sequence: int = 0
    complete: bool = False
    question: str | None = None
    updated_at: datetime | None = None
    damaged: str | None = None

    @property
    def status(self) -> str:
        if self.damaged:
            return "damaged"
        return "done" if self.complete else "asks" if self.question else "open"


def id_files(folder: Path) -> list[Path]:
    """The files named by an id in ``folder`` (``{id}.json``: a session's state, a queue),
    most recently written first."""
    if not folder.is_dir():
        return []
    found = [(p.stat().st_mtime_ns, p) for p in folder.glob("*.json") if _ID.match(p.stem)]
    found.sort(reverse=True)
    return [p for _, p in found]


def read_summary(path: Path) -> Summary:
    """The listed fields of one state file."""
    try:
        data = json.loads(path.read_bytes())
        return Summary(
            session_id=path.stem,
            task=str(data["task"]),
            sequence=int(data.get("sequenceNumber", 1)),
            complete=bool(data.get("isComplete", False)),
            question=data.get("question"),
            updated_at=_moment(data.get("updatedAt")),
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        return Summary(session_id=path.stem, damaged=f"{path}: {type(e).__name__}: {e}")


def summaries(sessions: Path) -> list[Summary]:
    """Every session's summary, most recently updated first."""
    return [read_summary(path) for path in id_files(sessions)]


def _moment(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def age(moment: datetime | None, now: datetime | None = None) -> str:
    """``3m``, ``5h``, ``2d``: how long ago, for tables; ``?`` when unknown."""
    if moment is None:
        return "?"
    seconds = max(0, int(((now or datetime.now(UTC)) - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
