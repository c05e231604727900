"""READ_FILE: whole files and line ranges, one request per file whatever its spelling."""

from __future__ import annotations

import sys

from executing import TEN, headlines, put, run

from codingagent.protocol.commands import ReadFile
from codingagent.state import FileRange
from codingagent.workspace import Workspace


def test_read_requests_are_normalised_and_deduplicated(ws: Workspace) -> None:
    put(ws, "src/a.py", "x")
    put(ws, "b.txt", "y")
    outcome = run(
        ws,
        ReadFile(line=1, path="./src//a.py"),
        ReadFile(line=2, path="b.txt"),
        ReadFile(line=3, path="src/a.py"),
        ReadFile(line=4, path="missing.py"),
    )
    assert headlines(outcome) == [
        "[OK] READ_FILE: './src//a.py' is shown under Requested File Contents",
        "[OK] READ_FILE: 'b.txt' is shown under Requested File Contents",
        "[OK] READ_FILE: 'src/a.py' is shown under Requested File Contents",
        "[FAILED] READ_FILE: File 'missing.py' not found",
    ]
    assert outcome.read_requests == ["src/a.py", "b.txt"]
    assert outcome.changed == []


def test_read_file_ranges(ws):
    put(ws, "a.txt", TEN)
    outcome = run(
        ws,
        ReadFile(line=1, path="a.txt", start_line=3, end_line=5),
        ReadFile(line=2, path="a.txt", start_line=8),
        ReadFile(line=3, path="a.txt", end_line=2),
        ReadFile(line=3, path="a.txt", start_line=4, end_line=4),
        ReadFile(line=4, path="a.txt", start_line=5, end_line=4),
        ReadFile(line=5, path="a.txt", start_line=0),
        ReadFile(line=6, path="a.txt", start_line=3, end_line=5),
        ReadFile(line=7, path="a.txt"),
    )
    assert headlines(outcome) == [
        "[OK] READ_FILE: Lines 3-5 of 'a.txt' are shown under Requested File Contents",
        "[OK] READ_FILE: 'a.txt' from line 8 on is shown under Requested File Contents",
        "[OK] READ_FILE: Lines 1-2 of 'a.txt' are shown under Requested File Contents",
        "[OK] READ_FILE: Line 4 of 'a.txt' is shown under Requested File Contents",
        "[FAILED] READ_FILE: Invalid line range 5-4 for 'a.txt'",
        "[FAILED] READ_FILE: Invalid line range 0-end for 'a.txt'",
        "[OK] READ_FILE: Lines 3-5 of 'a.txt' are shown under Requested File Contents",
        "[OK] READ_FILE: 'a.txt' is shown under Requested File Contents",
    ]
    assert outcome.read_requests == [
        FileRange(path="a.txt", start_line=3, end_line=5),
        FileRange(path="a.txt", start_line=8),
        FileRange(path="a.txt", end_line=2),
        FileRange(path="a.txt", start_line=4, end_line=4),
        "a.txt",
    ]


def test_read_file_requests_are_one_per_file_whatever_the_spelling(ws):
    put(ws, "big.txt", TEN)
    (ws.root / "sub").mkdir()
    spellings = ["x1/../big.txt", "big.txt", "./big.txt", "sub/../big.txt", "sub//..//big.txt"]
    if sys.platform != "win32":
        (ws.root / "link.txt").symlink_to("big.txt")
        spellings.append("link.txt")
    outcome = run(
        ws,
        *(ReadFile(line=i, path=p) for i, p in enumerate(spellings, 1)),
        ReadFile(line=10, path="sub/../big.txt", start_line=2, end_line=3),
        ReadFile(line=11, path="big.txt", start_line=2, end_line=3),
        ReadFile(line=12, path="big.txt", start_line=2),
    )
    assert headlines(outcome) == [
        *(f"[OK] READ_FILE: '{p}' is shown under Requested File Contents" for p in spellings),
        "[OK] READ_FILE: Lines 2-3 of 'sub/../big.txt' are shown under Requested File Contents",
        "[OK] READ_FILE: Lines 2-3 of 'big.txt' are shown under Requested File Contents",
        "[OK] READ_FILE: 'big.txt' from line 2 on is shown under Requested File Contents",
    ]
    assert outcome.read_requests == [
        "x1/../big.txt",  # the first spelling is the one shown
        FileRange(path="sub/../big.txt", start_line=2, end_line=3),
        FileRange(path="big.txt", start_line=2),
    ]
