"""EDIT_FILE: line ranges, line endings, and runs of edits that use the line numbers the LLM
saw (docs/protocol.md §5.1), with a warning when those may be stale."""

from __future__ import annotations

import pytest
from executing import STALE, TEN, edit, headlines, only, posix_only, put, run, sha
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sampling import examples

from codingagent.execute import execute
from codingagent.protocol.commands import CreateFile, DeleteFile, RunCommand
from codingagent.sandbox.shell import Shell
from codingagent.workspace import Workspace

_LINE = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\n\r"), max_size=4
)


def model_edits(
    lines: list[str], edits: list[tuple[int, int, list[str]]]
) -> tuple[list[str], list[bool]]:
    """The protocol's meaning of a run: every range refers to the original lines; an edit is
    applied when its range is valid and shares no line with an earlier applied one. Insertions
    at one place keep their order and come before a replaced block that starts there."""
    n = len(lines)
    accepted: list[tuple[int, int, list[str]]] = []
    ok = []
    for s, e, new in edits:
        valid = (1 <= s <= e <= n) or (e == s - 1 and 1 <= s <= n + 1)
        good = valid and not any(s <= e2 and s2 <= e for s2, e2, _ in accepted)
        ok.append(good)
        if good:
            accepted.append((s, e, new))
    out: list[str] = []
    i = 1
    while True:
        for s, e, new in accepted:
            if s == i and e == s - 1:
                out.extend(new)
        if i > n:
            return out, ok
        block = next(((e, new) for s, e, new in accepted if s == i and e >= s), None)
        if block is None:
            out.append(lines[i - 1])
            i += 1
        else:
            out.extend(block[1])
            i = block[0] + 1


@st.composite
def edit_runs(draw: st.DrawFn) -> tuple[list[str], bool, list[tuple[int, int, list[str]]]]:
    """A file (as lines, with or without a final newline) and a run of EDIT_FILE ranges on it,
    valid or not. Without a final newline no line is empty: a file "a\\n" cannot say that it
    ends with an empty line, so such files read back as one line fewer (test_edit_line_endings
    covers that one edit at a time)."""
    trailing = draw(st.booleans())
    line = st.text(alphabet="xyz \t", min_size=0 if trailing else 1, max_size=3)
    lines = draw(st.lists(line, max_size=8))
    trailing = trailing or not lines  # an empty file gets a newline after its first line
    n = len(lines)
    edits = []
    for _ in range(draw(st.integers(0, 6))):
        start = draw(st.integers(0, n + 2))
        end = draw(st.integers(start - 2, n + 1))
        edits.append((start, end, draw(st.lists(line, max_size=3))))
    return lines, trailing, edits


@pytest.mark.parametrize(
    ("start", "end", "content", "summary", "expected_lines"),
    [
        (
            3,
            5,
            "a\nb\nc\nd\n",
            "Replaced lines 3-5 of 'p' (3 lines replaced by 4)",
            [1, 2, "a", "b", "c", "d", 6, 7, 8, 9, 10],
        ),
        (2, 2, "", "Replaced line 2 of 'p' (1 line replaced by 0)", [1, 3, 4, 5, 6, 7, 8, 9, 10]),
        (
            4,
            3,
            "x\ny\n",
            "Inserted 2 lines before line 4 of 'p'",
            [1, 2, 3, "x", "y", 4, 5, 6, 7, 8, 9, 10],
        ),
        (1, 0, "x\n", "Inserted 1 line before line 1 of 'p'", ["x", *range(1, 11)]),
        (11, 10, "x\ny\n", "Appended 2 lines to 'p'", [*range(1, 11), "x", "y"]),
        (
            10,
            10,
            "last\n",
            "Replaced line 10 of 'p' (1 line replaced by 1)",
            [*range(1, 10), "last"],
        ),
    ],
)
def test_edit_ranges(
    ws: Workspace, start: int, end: int, content: str, summary: str, expected_lines: list[object]
) -> None:
    put(ws, "p", TEN)
    outcome = run(ws, edit("p", start, end, content))
    assert only(outcome).headline == f"[OK] EDIT_FILE: {summary}"
    expected = "".join(f"line {x}\n" if isinstance(x, int) else f"{x}\n" for x in expected_lines)
    assert (ws.root / "p").read_text() == expected
    assert outcome.changed == ["p"]


@pytest.mark.parametrize(
    ("start", "end"), [(7, 5), (0, 1), (0, -1), (11, 11), (12, 11), (5, 11), (-1, 2), (3, 1)]
)
def test_edit_invalid_range_leaves_the_file_alone(ws: Workspace, start: int, end: int) -> None:
    path = put(ws, "p", TEN)
    outcome = run(ws, edit("p", start, end, "x\n"))
    assert only(outcome).headline == (
        f"[FAILED] EDIT_FILE: Invalid line range {start}-{end} for 'p' (the file has 10 lines)"
    )
    assert path.read_text() == TEN
    assert outcome.changed == []


def test_edit_invalid_range_counts_one_line(ws: Workspace) -> None:
    put(ws, "one.txt", "only\n")
    result = only(run(ws, edit("one.txt", 2, 2, "x\n")))
    assert result.summary == "Invalid line range 2-2 for 'one.txt' (the file has 1 line)"


def test_edit_missing_file(ws: Workspace) -> None:
    (ws.root / "d").mkdir()
    outcome = run(ws, edit("nope.py", 1, 1, "x\n"), edit("d", 1, 1, "x\n"))
    assert headlines(outcome) == [
        "[FAILED] EDIT_FILE: File 'nope.py' not found",
        "[FAILED] EDIT_FILE: 'd' is a directory",
    ]
    assert not (ws.root / "nope.py").exists()


def test_edit_refuses_non_utf8(ws: Workspace) -> None:
    path = put(ws, "latin1.txt", b"caf\xe9\n")
    result = only(run(ws, edit("latin1.txt", 1, 1, "x\n")))
    assert result.headline == (
        "[FAILED] EDIT_FILE: 'latin1.txt' is not a UTF-8 text file (from line 1; it reads as "
        "cp1252): EDIT_FILE, REPLACE and PATCH never re-encode a file. Change it with a "
        "RUN_COMMAND that keeps its encoding, or write it whole with CREATE_FILE (it is then "
        "UTF-8)"
    )
    assert path.read_bytes() == b"caf\xe9\n"


@pytest.mark.parametrize(
    ("before", "start", "end", "content", "after"),
    [
        # CRLF files get CRLF lines, whatever the reply used.
        ("a\r\nb\r\nc\r\n", 2, 2, "X\nY\n", "a\r\nX\r\nY\r\nc\r\n"),
        ("a\r\nb\r\nc\r\n", 4, 3, "d\r\n", "a\r\nb\r\nc\r\nd\r\n"),
        # The style comes from the first line ending; other lines keep theirs.
        ("a\nb\r\nc\n", 3, 3, "X\n", "a\nb\r\nX\n"),
        ("a\r\nb\nc\n", 3, 3, "X\n", "a\r\nb\nX\r\n"),
        # No newline at the end of the file stays that way.
        ("a\nb\nc", 3, 3, "Z\n", "a\nb\nZ"),
        ("a\nb\nc", 2, 3, "Z\n", "a\nZ"),
        ("a\nb\nc", 2, 2, "X\n", "a\nX\nc"),
        ("a\nb\nc", 4, 3, "d\n", "a\nb\nc\nd"),
        ("a\nb\nc", 1, 0, "new\n", "new\na\nb\nc"),
        ("a\nb\nc", 3, 3, "", "a\nb"),
        ("a\r\nb", 3, 2, "c\n", "a\r\nb\r\nc"),
        ("a\r\nb", 2, 2, "B\n", "a\r\nB"),
        ("only", 1, 1, "", ""),
        # Empty files and bodies without a final newline.
        ("", 1, 0, "x\n", "x\n"),
        ("", 1, 0, "x", "x\n"),
        ("a\n", 1, 1, "b\nc", "b\nc\n"),
        ("a\n", 1, 1, "\n", "\n"),
        # Only \n ends a line: form feeds and other separators are text.
        ("a\fb\nc\u2028d\ne\n", 2, 2, "X\n", "a\fb\nX\ne\n"),
        # A byte order mark survives.
        ("\ufeffa\nb\n", 2, 2, "B\n", "\ufeffa\nB\n"),
    ],
)
def test_edit_line_endings(
    ws: Workspace, before: str, start: int, end: int, content: str, after: str
) -> None:
    path = put(ws, "f.txt", before)
    result = only(run(ws, edit("f.txt", start, end, content)))
    assert result.success, result.summary
    assert path.read_bytes() == after.encode()


def test_edit_keeps_the_file_mode(ws: Workspace) -> None:
    path = put(ws, "run.sh", "#!/bin/sh\necho a\n")
    path.chmod(0o755)
    run(ws, edit("run.sh", 2, 2, "echo b\n"))
    assert path.stat().st_mode & 0o777 == 0o755
    assert path.read_text() == "#!/bin/sh\necho b\n"


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), lines=st.lists(_LINE, max_size=8), new=st.lists(_LINE, max_size=4))
def test_edit_matches_a_list_model(
    module_ws: Workspace, data: st.DataObject, lines: list[str], new: list[str]
) -> None:
    # A file without a final newline must end in a non-empty line, or it reads as other lines.
    trailing = not lines or not lines[-1] or data.draw(st.booleans(), label="trailing newline")
    text = "".join(f"{line}\n" for line in lines) if trailing else "\n".join(lines)
    start = data.draw(st.integers(1, len(lines) + 1), label="start")
    end = data.draw(st.integers(start - 1, len(lines)), label="end")
    path = put(module_ws, "model.txt", text)

    outcome = run(module_ws, edit("model.txt", start, end, "".join(f"{x}\n" for x in new)))

    assert only(outcome).success
    model = lines[: start - 1] + new + lines[end:]
    expected = "".join(f"{x}\n" for x in model) if trailing else "\n".join(model)
    assert path.read_bytes().decode() == expected


@settings(max_examples=examples(100), deadline=None)
@given(n=st.integers(0, 6), start=st.integers(-2, 9), end=st.integers(-2, 9))
def test_edit_accepts_exactly_the_documented_ranges(
    module_ws: Workspace, n: int, start: int, end: int
) -> None:
    text = "".join(f"{i}\n" for i in range(n))
    path = put(module_ws, "range.txt", text)
    result = only(run(module_ws, edit("range.txt", start, end, "x\n")))
    valid = (1 <= start <= end <= n) or (end == start - 1 and 1 <= start <= n + 1)
    assert result.success == valid
    if not valid:
        assert path.read_text() == text
        assert result.summary.startswith(f"Invalid line range {start}-{end} for 'range.txt'")


def test_a_run_of_edits_uses_the_line_numbers_of_the_file_before_the_run(ws) -> None:
    path = put(ws, "notes.txt", TEN)
    outcome = run(
        ws,
        edit("notes.txt", 2, 3, "TWO-THREE\n"),
        edit("notes.txt", 5, 4, "before 5\nalso before 5\n"),
        edit("notes.txt", 7, 7, ""),
        edit("notes.txt", 11, 10, "appended\n"),
    )
    assert headlines(outcome) == [
        "[OK] EDIT_FILE: Replaced lines 2-3 of 'notes.txt' (2 lines replaced by 1)",
        "[OK] EDIT_FILE: Inserted 2 lines before line 5 of 'notes.txt'",
        "[OK] EDIT_FILE: Replaced line 7 of 'notes.txt' (1 line replaced by 0)",
        "[OK] EDIT_FILE: Appended 1 line to 'notes.txt'",
    ]
    assert path.read_text().splitlines() == [
        "line 1",
        "TWO-THREE",
        "line 4",
        "before 5",
        "also before 5",
        "line 5",
        "line 6",
        "line 8",
        "line 9",
        "line 10",
        "appended",
    ]


def test_bottom_up_edits_give_the_same_file_as_top_down_ones(ws) -> None:
    top_down = [edit("a.txt", 2, 2, "B\nB2\n"), edit("a.txt", 6, 8, "F\n")]
    put(ws, "a.txt", TEN)
    run(ws, *top_down)
    first = (ws.root / "a.txt").read_text()
    put(ws, "a.txt", TEN)
    run(ws, *reversed(top_down))
    assert (ws.root / "a.txt").read_text() == first
    assert first.splitlines()[1:7] == ["B", "B2", "line 3", "line 4", "line 5", "F"]


def test_overlapping_ranges_fail_for_the_later_command_only(ws) -> None:
    path = put(ws, "a.txt", TEN)
    outcome = run(
        ws,
        edit("a.txt", 3, 5, "x\n"),
        edit("a.txt", 5, 6, "y\n"),
        edit("a.txt", 4, 3, "inside\n"),
        edit("a.txt", 3, 2, "before the range\n"),
        edit("a.txt", 6, 5, "after the range\n"),
    )
    assert headlines(outcome) == [
        "[OK] EDIT_FILE: Replaced lines 3-5 of 'a.txt' (3 lines replaced by 1)",
        "[FAILED] EDIT_FILE: Not applied: lines 5-6 of 'a.txt' and lines 3-5, changed by an "
        "earlier EDIT_FILE of this reply, overlap; all EDIT_FILE line numbers of one reply "
        "refer to the file as you saw it, so give each line to one EDIT_FILE only",
        "[FAILED] EDIT_FILE: Not applied: the insertion before line 4 of 'a.txt' and lines "
        "3-5, changed by an earlier EDIT_FILE of this reply, overlap; all EDIT_FILE line "
        "numbers of one reply refer to the file as you saw it, so give each line to one "
        "EDIT_FILE only",
        "[OK] EDIT_FILE: Inserted 1 line before line 3 of 'a.txt'",
        "[OK] EDIT_FILE: Inserted 1 line before line 6 of 'a.txt'",
    ]
    assert path.read_text().splitlines()[1:6] == [
        "line 2",
        "before the range",
        "x",
        "after the range",
        "line 6",
    ]


def test_two_insertions_at_one_place_keep_their_reply_order(ws) -> None:
    path = put(ws, "a.txt", "a\nb\n")
    run(ws, edit("a.txt", 2, 1, "first\n"), edit("a.txt", 2, 1, "second\n"))
    assert path.read_text() == "a\nfirst\nsecond\nb\n"


def test_an_invalid_range_in_a_run_counts_the_lines_the_llm_saw(ws) -> None:
    put(ws, "a.txt", "1\n2\n3\n")
    outcome = run(ws, edit("a.txt", 1, 1, "a\nb\nc\n"), edit("a.txt", 5, 5, "x\n"))
    assert outcome.results[1].summary == "Invalid line range 5-5 for 'a.txt' (the file had 3 lines)"


def test_a_run_goes_on_across_commands_on_other_files(ws) -> None:
    put(ws, "a.txt", TEN)
    outcome = run(
        ws,
        edit("a.txt", 1, 1, "one\nuno\n"),
        CreateFile(line=4, path="b.txt", content="b\n"),
        edit("b.txt", 1, 1, "B\n"),
        edit("./a.txt", 3, 3, "three\n"),
    )
    assert all(r.success for r in outcome.results)
    assert (ws.root / "a.txt").read_text().splitlines()[:4] == ["one", "uno", "line 2", "three"]


def test_another_command_writing_the_file_ends_the_run(ws) -> None:
    put(ws, "a.txt", TEN)
    outcome = run(
        ws,
        edit("a.txt", 1, 1, "one\nuno\n"),
        CreateFile(line=4, path="a.txt", content="fresh 1\nfresh 2\nfresh 3\n"),
        edit("a.txt", 3, 3, "three\n"),
    )
    assert all(r.success for r in outcome.results)
    assert (ws.root / "a.txt").read_text() == "fresh 1\nfresh 2\nthree\n"


@posix_only
def test_a_run_command_that_changes_the_file_ends_the_run_and_warns(ws) -> None:
    put(ws, "a.txt", "1\n2\n3\n")
    outcome = run(
        ws,
        edit("a.txt", 1, 1, "one\n"),
        RunCommand(line=4, command="printf 'zero\\n' | cat - a.txt > t && mv t a.txt"),
        edit("a.txt", 2, 2, "ONE\n"),
        shown={"a.txt": sha("1\n2\n3\n")},
    )
    assert [r.success for r in outcome.results] == [True, True, True]
    assert outcome.results[2].summary == (
        "Replaced line 2 of 'a.txt' (1 line replaced by 1); warning: 'a.txt' changed since you "
        "last saw it, so these line numbers may be stale; READ_FILE it and check"
    )
    assert (ws.root / "a.txt").read_text() == "zero\nONE\n2\n3\n"


@pytest.mark.parametrize(
    ("shown", "warned"),
    [
        ({"a.txt": sha(TEN)}, False),  # the LLM saw exactly this file
        ({"a.txt": sha("something else\n")}, True),  # it changed since
        ({}, False),  # never shown in this session: nothing to compare with
        (None, False),  # the caller keeps no record (protocol 1.0 callers)
    ],
)
def test_stale_warning_on_the_first_edit_of_a_run(ws, shown, warned) -> None:
    put(ws, "a.txt", TEN)
    outcome = run(ws, edit("a.txt", 1, 1, "x\n"), edit("a.txt", 2, 2, "y\n"), shown=shown)
    first = "Replaced line 1 of 'a.txt' (1 line replaced by 1)"
    assert outcome.results[0].summary == (f"{first}; {STALE}" if warned else first)
    assert outcome.results[1].summary == "Replaced line 2 of 'a.txt' (1 line replaced by 1)"


def test_what_the_llm_wrote_counts_as_seen(ws) -> None:
    put(ws, "a.txt", "old\n")
    put(ws, "gone.txt", "x\n")
    outcome = run(
        ws,
        CreateFile(line=1, path="a.txt", content="new 1\nnew 2\n"),
        edit("a.txt", 2, 2, "NEW 2\n"),
        DeleteFile(line=7, path="gone.txt"),
        shown={"a.txt": sha("old\n"), "gone.txt": sha("x\n"), "other.txt": "abc"},
    )
    assert [r.headline for r in outcome.results][1] == (
        "[OK] EDIT_FILE: Replaced line 2 of 'a.txt' (1 line replaced by 1)"
    )
    assert outcome.shown == {"a.txt": sha("new 1\nNEW 2\n"), "other.txt": "abc"}


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(edit_runs())
def test_edit_runs_equal_a_list_model(module_ws, case) -> None:
    lines, trailing, edits = case
    text = "".join(f"{x}\n" for x in lines) if trailing else "\n".join(lines)
    path = put(module_ws, "run.txt", text)
    commands = [edit("run.txt", s, e, "".join(f"{x}\n" for x in new)) for s, e, new in edits]
    outcome = execute(commands, module_ws, Shell())
    expected, ok = model_edits(lines, edits)
    assert [r.success for r in outcome.results] == ok
    want = "".join(f"{x}\n" for x in expected) if trailing else "\n".join(expected)
    assert path.read_bytes().decode() == want
