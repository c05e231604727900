"""DELETE_FILE."""

from __future__ import annotations

from executing import headlines, put, run

from codingagent.protocol.commands import DeleteFile
from codingagent.workspace import Workspace


def test_delete(ws: Workspace) -> None:
    put(ws, "a.txt", "x")
    (ws.root / "d").mkdir()
    outcome = run(
        ws,
        DeleteFile(line=1, path="a.txt"),
        DeleteFile(line=2, path="a.txt"),
        DeleteFile(line=3, path="d"),
    )
    assert headlines(outcome) == [
        "[OK] DELETE_FILE: Deleted 'a.txt'",
        "[FAILED] DELETE_FILE: File 'a.txt' not found",
        "[FAILED] DELETE_FILE: 'd' is a directory",
    ]
    assert not (ws.root / "a.txt").exists()
    assert (ws.root / "d").is_dir()
    assert outcome.changed == ["a.txt"]
