"""Protocol 1.1 in the executor and the turn (SPEC 2.2-2.4): EDIT_FILE runs, stale warnings,
REPLACE, SEARCH, READ_FILE ranges, the guards, and what the next outbox shows."""

from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing
import os
import sys
import time

import pytest
from executing import edit, headlines, put, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codingagent import executor
from codingagent.commands import (
    CommandResult,
    CreateFile,
    DeleteFile,
    FileRange,
    ReadFile,
    Replace,
    ReplaceBlock,
    RunCommand,
    Search,
)
from codingagent.executor import SEARCH_HITS, execute
from codingagent.parser import parse
from codingagent.session import SessionState, SessionStore
from codingagent.shell import Shell
from codingagent.turn import apply_reply, apply_reply_file, start_session

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")
TEN = "".join(f"line {i}\n" for i in range(1, 11))


def sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def replace(path: str, *blocks: tuple[str, str]) -> Replace:
    return Replace(
        line=1,
        path=path,
        blocks=tuple(
            ReplaceBlock(line=2 + 4 * i, search=s, replace=r) for i, (s, r) in enumerate(blocks)
        ),
    )


# --- EDIT_FILE runs: line numbers of the file as the LLM saw it -------------------------------


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


# --- stale line numbers -------------------------------------------------------------------------

STALE = (
    "warning: 'a.txt' changed since you last saw it, so these line numbers may be stale; "
    "READ_FILE it and check"
)


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


# --- REPLACE ------------------------------------------------------------------------------------

CALC = "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    return a / b\n"


def test_replace_exact_block(ws) -> None:
    path = put(ws, "calc.py", CALC)
    outcome = run(
        ws,
        replace(
            "calc.py",
            (
                "def divide(a, b):\n    return a / b\n",
                "def divide(a, b):\n    if b == 0:\n        raise ValueError\n    return a / b\n",
            ),
        ),
    )
    assert headlines(outcome) == [
        "[OK] REPLACE: Replaced lines 5-6 of 'calc.py' (2 lines replaced by 4)"
    ]
    assert path.read_text().endswith("    if b == 0:\n        raise ValueError\n    return a / b\n")
    assert outcome.changed == ["calc.py"]


def test_replace_ignoring_trailing_whitespace(ws) -> None:
    path = put(ws, "a.txt", "alpha   \nbeta\t\ngamma\n")
    outcome = run(ws, replace("a.txt", ("alpha\nbeta  \n", "ALPHA\n")))
    assert outcome.results[0].summary == (
        "Replaced lines 1-2 of 'a.txt' (2 lines replaced by 1, matched ignoring trailing "
        "whitespace)"
    )
    assert path.read_text() == "ALPHA\ngamma\n"


@pytest.mark.parametrize(
    ("search", "new", "expected"),
    [
        # SEARCH lost the file's indentation: the replacement gets it back.
        (
            "def g(self):\n    return 1\n",
            "def g(self):\n\n    return 2\n",
            "class A:\n    def g(self):\n\n        return 2\n",
        ),
        # SEARCH has more indentation than the file: the replacement loses it.
        (
            "        def g(self):\n            return 1\n",
            "        def g(self):\n            return 3\n",
            "class A:\n    def g(self):\n        return 3\n",
        ),
    ],
)
def test_replace_ignoring_a_uniform_indentation_difference(ws, search, new, expected) -> None:
    path = put(ws, "m.py", "class A:\n    def g(self):\n        return 1\n")
    outcome = run(ws, replace("m.py", (search, new)))
    assert outcome.results[0].summary.endswith(
        "(2 lines replaced by " + str(new.count("\n")) + ", matched with other indentation, "
        "REPLACE re-indented)"
    )
    assert path.read_text() == expected


def test_replace_refuses_an_indentation_difference_that_is_not_uniform(ws) -> None:
    path = put(ws, "m.py", "class A:\n    def g(self):\n        return 1\n")
    outcome = run(ws, replace("m.py", ("  def g(self):\n  return 1\n", "x\n")))
    assert not outcome.results[0].success
    assert path.read_text() == "class A:\n    def g(self):\n        return 1\n"


def test_replace_several_matches_lists_them(ws) -> None:
    path = put(ws, "a.py", "x = 1\ny = 2\nx = 1\nx = 1  \n")
    outcome = run(ws, replace("a.py", ("x = 1\n", "x = 3\n")))
    assert headlines(outcome) == [
        "[FAILED] REPLACE: The block at reply line 2: the SEARCH text matches 2 places in "
        "'a.py' (starting at lines 1, 3); add lines around it so that it matches one place "
        "only; nothing was changed"
    ]
    assert path.read_text() == "x = 1\ny = 2\nx = 1\nx = 1  \n"


def test_replace_not_found_offers_the_closest_lines(ws) -> None:
    put(ws, "calc.py", CALC)
    result = run(
        ws, replace("calc.py", ("def divide(a, b):\n    return a // b\n", "pass\n"))
    ).results[0]
    assert result.lines() == [
        "[FAILED] REPLACE: The block at reply line 2: the SEARCH text is not in 'calc.py'; did "
        "you mean lines 5-6 (shown below)? SEARCH must repeat the file's lines exactly; nothing "
        "was changed",
        "  Output:",
        "       5 | def divide(a, b):",
        "       6 |     return a / b",
    ]


def test_replace_not_found_and_nothing_similar(ws) -> None:
    put(ws, "calc.py", CALC)
    result = run(ws, replace("calc.py", ("import numpy as np\n", "x\n"))).results[0]
    assert result.summary == (
        "The block at reply line 2: the SEARCH text is not in 'calc.py', and no lines there are "
        "similar; READ_FILE 'calc.py' to see it as it is now; nothing was changed"
    )
    assert result.output is None


def test_did_you_mean_on_a_large_file_is_quick_and_finds_the_near_copy(ws) -> None:
    rows = [f"    value_{i % 97} = compute(row_{i}, limit={i % 13})" for i in range(20_000)]
    put(ws, "big.py", "\n".join(rows) + "\n")
    near = rows[12_345:12_375]
    near[7] = near[7].replace("compute", "calculate")
    started = time.perf_counter()
    result = run(ws, replace("big.py", ("\n".join(near) + "\n", "x\n"))).results[0]
    assert time.perf_counter() - started < 3
    assert "did you mean lines 12346-12375 (shown below)?" in result.summary


def test_replace_blocks_apply_in_order_and_a_failed_block_changes_nothing(ws) -> None:
    path = put(ws, "a.txt", "one\ntwo\nthree\n")
    good = run(ws, replace("a.txt", ("one\n", "ONE\n"), ("ONE\ntwo\n", "1\n2\n")))
    assert good.results[0].summary == (
        "Changed 'a.txt' with 2 blocks: line 1 (1 line replaced by 1); lines 1-2 (2 lines "
        "replaced by 2)"
    )
    assert path.read_text() == "1\n2\nthree\n"
    bad = run(ws, replace("a.txt", ("1\n", "uno\n"), ("no such line at all\n", "x\n")))
    assert bad.results[0].headline.startswith(
        "[FAILED] REPLACE: Block 2 of 2 (reply line 6): the SEARCH text is not in 'a.txt'"
    )
    assert path.read_text() == "1\n2\nthree\n"
    assert bad.changed == []


def test_replace_with_an_empty_search_creates_or_fills_a_file(ws) -> None:
    put(ws, "empty.txt", "")
    put(ws, "full.txt", "content\n")
    outcome = run(
        ws,
        replace("new/file.py", ("", "print('hi')\n")),
        replace("empty.txt", ("", "a\nb\n")),
        replace("full.txt", ("", "x\n")),
        replace("missing.txt", ("content\n", "x\n")),
    )
    assert headlines(outcome) == [
        "[OK] REPLACE: Created 'new/file.py' (1 line)",
        "[OK] REPLACE: Filled the empty file 'empty.txt' (2 lines)",
        "[FAILED] REPLACE: The block at reply line 2: the SEARCH part is empty, but 'full.txt' "
        "is not; an empty SEARCH only fills a new or empty file. To add lines, SEARCH for the "
        "lines next to them and repeat them in REPLACE; nothing was changed",
        "[FAILED] REPLACE: File 'missing.txt' not found",
    ]
    assert (ws.root / "new/file.py").read_text() == "print('hi')\n"
    assert (ws.root / "empty.txt").read_text() == "a\nb\n"


def test_replace_keeps_crlf_and_a_missing_final_newline(ws) -> None:
    path = put(ws, "w.txt", "a\r\nb\r\nc")
    run(ws, replace("w.txt", ("b\nc\n", "B\nC\n")))
    assert path.read_bytes() == b"a\r\nB\r\nC"


def test_replace_tolerates_line_numbers_copied_from_the_file_view(ws) -> None:
    path = put(ws, "calc.py", CALC)
    outcome = run(
        ws,
        replace(
            "calc.py",
            ("   5 | def divide(a, b):\n   6 |     return a / b\n", "   6 |     return a / b\n"),
        ),
    )
    assert outcome.results[0].summary == (
        "Replaced lines 5-6 of 'calc.py' (2 lines replaced by 1, removed the line numbers "
        "copied from the file view)"
    )
    assert path.read_text().endswith("\n\n    return a / b\n")


def test_replace_on_a_directory_or_binary_file(ws) -> None:
    (ws.root / "d").mkdir()
    put(ws, "b.bin", b"\xff\xfe")
    assert headlines(run(ws, replace("d", ("a\n", "b\n")), replace("b.bin", ("a\n", "b\n")))) == [
        "[FAILED] REPLACE: 'd' is a directory",
        "[FAILED] REPLACE: 'b.bin' is not a UTF-8 text file",
    ]


# --- guards: placeholders in CREATE_FILE, Python that does not compile -------------------------

PLACEHOLDERS = [
    "# ... rest of the code unchanged",
    "    # ... (same as before)",
    "// existing code",
    "// ... existing code ...",
    "<rest of file>",
    "# Rest of the file remains the same",
    "/* ... other methods unchanged ... */",
    "<!-- ... existing content ... -->",
    "... rest of the implementation",
    "    # (keep the existing handlers here)",
    "# imports unchanged",
    "# ... omitted for brevity ...",
    "[... remaining tests ...]",
    "  // … previous code …",
]


@pytest.mark.parametrize("placeholder", PLACEHOLDERS)
def test_create_file_with_a_placeholder_over_an_existing_file_is_refused(ws, placeholder) -> None:
    path = put(ws, "app.py", "import os\n\n\ndef main():\n    print(os.getcwd())\n")
    content = f"import os\nimport sys\n\n{placeholder}\n"
    result = run(ws, CreateFile(line=1, path="app.py", content=content)).results[0]
    assert result.headline == (
        f"[FAILED] CREATE_FILE: Not written: line 4 of the new content of 'app.py' "
        f"('{placeholder.strip()}') stands for code that was left out, and CREATE_FILE replaces "
        "the whole file; send the complete content, or change only some lines with REPLACE"
    )
    assert path.read_text() == "import os\n\n\ndef main():\n    print(os.getcwd())\n"


def test_a_placeholder_in_a_new_file_is_written(ws) -> None:
    content = "def main():\n    # ... rest of the code unchanged\n    pass\n"
    outcome = run(ws, CreateFile(line=1, path="new.py", content=content))
    assert headlines(outcome) == ["[OK] CREATE_FILE: Created 'new.py'"]


LEGIT = [
    "def stub(self) -> int: ...",
    "    ...",
    "const all = [...items, ...more];",
    "function f(...args) { return g(...args); }",
    "const merged = { ...defaults, ...options };",
    "# TODO: handle the rest of the input",
    "// see the rest of the file for the parser",
    "## Rest of the API",
    "# Other methods",
    "print('...')",
    "The rest of the story is told in chapter 2.",
    "x = y[...]",
    "# existing users keep their settings",
    "# leave the buffer unchanged when empty",
    "raise NotImplementedError  # ...",
]


@pytest.mark.parametrize("line", LEGIT)
def test_legit_code_is_never_taken_for_a_placeholder(ws, line) -> None:
    put(ws, "f.txt", "old\n")
    outcome = run(ws, CreateFile(line=1, path="f.txt", content=f"start\n{line}\nend\n"))
    assert headlines(outcome) == ["[OK] CREATE_FILE: Overwrote 'f.txt'"]


def test_python_that_does_not_compile_is_reported_after_the_last_write(ws) -> None:
    outcome = run(
        ws,
        CreateFile(line=1, path="bad.py", content="def f(:\n    pass\n"),
        CreateFile(line=4, path="fixed.py", content="if x\n    pass\n"),
        edit("fixed.py", 1, 1, "if x:\n"),
        CreateFile(line=9, path="indent.py", content="def f():\nreturn 1\n"),
        CreateFile(line=12, path="notes.txt", content="def f(:\n"),
        replace("fixed.py", ("    pass\n", "  pass\n    pass\n")),
    )
    assert headlines(outcome) == [
        "[OK] CREATE_FILE: Created 'bad.py'; warning: Python cannot compile it: SyntaxError at "
        "line 1: invalid syntax",
        "[OK] CREATE_FILE: Created 'fixed.py'",
        "[OK] EDIT_FILE: Replaced line 1 of 'fixed.py' (1 line replaced by 1)",
        "[OK] CREATE_FILE: Created 'indent.py'; warning: Python cannot compile it: "
        "IndentationError at line 2: expected an indented block after function definition on "
        "line 1",
        "[OK] CREATE_FILE: Created 'notes.txt'",
        "[OK] REPLACE: Replaced line 2 of 'fixed.py' (1 line replaced by 2); warning: Python "
        "cannot compile it: IndentationError at line 3: unexpected indent",
    ]


def test_fence_removal_is_said_in_the_result(ws) -> None:
    reply = (
        '[CREATE_FILE path="a.py"]\n```python\nx = 1\n```\n[/CREATE_FILE]\n'
        '[EDIT_FILE path="a.py" start_line="1" end_line="1"]\n~~~\nx = 2\n~~~\n[/EDIT_FILE]\n'
    )
    outcome = execute(parse(reply), ws, Shell())
    assert headlines(outcome) == [
        "[OK] CREATE_FILE: Created 'a.py' (removed the code fence around the content)",
        "[OK] EDIT_FILE: Replaced line 1 of 'a.py' (1 line replaced by 1) (removed the code "
        "fence around the content)",
    ]
    assert (ws.root / "a.py").read_text() == "x = 2\n"


# --- SEARCH -------------------------------------------------------------------------------------


@pytest.fixture
def project(ws):
    put(ws, "src/app.py", "import os\n\ndef Main():\n    return os.getcwd()\n")
    put(ws, "src/util.py", "def main_helper():\n    pass\n")
    put(ws, "README.md", "Run main() to start.\n")
    put(ws, "data.bin", b"main\0main\n")
    put(ws, ".git/config", "main = yes\n")
    put(ws, "node_modules/x/index.js", "main()\n")
    put(ws, "outbox/s_seq0001.txt", "main\n")
    return ws


def search(ws, **fields) -> tuple[CommandResult, str]:
    outcome = run(ws, Search(line=1, **fields))
    return outcome.results[0], "\n".join(outcome.searches)


def test_search_is_case_insensitive_by_default_and_skips_binary_and_hidden_places(project):
    result, text = search(project, query="main")
    assert result.headline == (
        "[OK] SEARCH: 3 matches for 'main' in 3 files (shown under Search Results)"
    )
    assert text == (
        'SEARCH "main": 3 matches in 3 files\n'
        "README.md:1: Run main() to start.\n"
        "src/app.py:3: def Main():\n"
        "src/util.py:1: def main_helper():"
    )


def test_search_case_sensitive_glob_and_regex(project):
    assert search(project, query="main", case_sensitive=True, glob="*.py")[1] == (
        "SEARCH \"main\" in files matching '*.py': 1 match in 1 file\n"
        "src/util.py:1: def main_helper():"
    )
    assert search(project, query=r"^def \w+\(\):$", regex=True, glob="src/*.{py,md}")[1] == (
        "SEARCH \"^def \\w+\\(\\):$\" in files matching 'src/*.{py,md}': 2 matches in 2 files\n"
        "src/app.py:3: def Main():\n"
        "src/util.py:1: def main_helper():"
    )
    assert search(project, query=r"^def M", regex=True, case_sensitive=True)[1] == (
        'SEARCH "^def M": 1 match in 1 file\nsrc/app.py:3: def Main():'
    )


def test_search_with_no_match_and_with_a_bad_regex(project):
    result, text = search(project, query="zebra", glob="*.md")
    assert (
        result.headline
        == "[OK] SEARCH: No matches for 'zebra' in files matching '*.md' (1 file searched)"
    )
    assert text == "SEARCH \"zebra\" in files matching '*.md': no matches (1 file searched)"
    result, text = search(project, query="(unclosed", regex=True)
    assert result.headline == (
        "[FAILED] SEARCH: Invalid regular expression '(unclosed': missing ), unterminated "
        "subpattern at position 0"
    )
    assert text == ""
    assert search(project, query="")[0].headline == "[FAILED] SEARCH: The query is empty"


def test_search_caps_hits_and_clips_long_lines(ws):
    put(ws, "many.txt", "hit\n" * (SEARCH_HITS + 50) + "hit " + "x" * 500 + "\n")
    result, text = search(ws, query="hit")
    assert result.summary == (
        f"{SEARCH_HITS + 51} matches for 'hit' in 1 file (the first {SEARCH_HITS} shown under "
        "Search Results)"
    )
    lines = text.split("\n")
    assert len(lines) == 1 + SEARCH_HITS + 1
    assert lines[-1] == "(51 more matches not shown; narrow the query or the glob)"
    put(ws, "many.txt", "hit " + "x" * 500 + "\n")
    assert search(ws, query="hit")[1].split("\n")[1] == (
        "many.txt:1: hit " + "x" * 196 + " [... 304 more characters]"
    )


# --- READ_FILE ranges ---------------------------------------------------------------------------


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


# --- hypothesis: EDIT_FILE runs equal a list model; REPLACE is all or nothing -------------------


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
    ends with an empty line, so such files read back as one line fewer (test_executor covers
    that one edit at a time)."""
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


@pytest.fixture(scope="module")
def shared_ws(tmp_path_factory):
    from codingagent.workspace import Workspace

    return Workspace(tmp_path_factory.mktemp("runs"))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edit_runs())
def test_edit_runs_equal_a_list_model(shared_ws, case) -> None:
    lines, trailing, edits = case
    text = "".join(f"{x}\n" for x in lines) if trailing else "\n".join(lines)
    path = put(shared_ws, "run.txt", text)
    commands = [edit("run.txt", s, e, "".join(f"{x}\n" for x in new)) for s, e, new in edits]
    outcome = execute(commands, shared_ws, Shell())
    expected, ok = model_edits(lines, edits)
    assert [r.success for r in outcome.results] == ok
    want = "".join(f"{x}\n" for x in expected) if trailing else "\n".join(expected)
    assert path.read_bytes().decode() == want


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.sampled_from(["a", "b", "  a", "c ", ""]), max_size=8),
    st.lists(
        st.tuples(
            st.lists(
                st.sampled_from(["a", "b", "  a", "c", "d", " b", ""]), min_size=1, max_size=3
            ),
            st.lists(st.sampled_from(["x", "  y", ""]), max_size=2),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_replace_never_changes_a_file_when_a_block_fails(shared_ws, lines, blocks) -> None:
    text = "".join(f"{x}\n" for x in lines)
    path = put(shared_ws, "r.txt", text)
    command = replace(
        "r.txt", *[("".join(f"{x}\n" for x in s), "".join(f"{x}\n" for x in r)) for s, r in blocks]
    )
    outcome = execute([command], shared_ws, Shell())
    (result,) = outcome.results
    if not result.success:
        assert path.read_bytes() == text.encode()
        assert outcome.changed == []
    else:
        assert outcome.changed == ["r.txt"]


# --- the turn: what the next outbox shows, and what the session remembers -----------------------


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path)


@pytest.fixture
def sid(store) -> str:
    return start_session(store, "task")[0].session_id


def step(store, sid, text: str, **options):
    return apply_reply(
        store, sid, text.encode(), source="r.txt", shell=Shell(timeout=10), **options
    )


def outbox(store, sid, sequence: int) -> str:
    return store.outbox_path(sid, sequence).read_text()


def test_the_header_names_protocol_1_2(store, sid):
    assert outbox(store, sid, 1).startswith(
        f"=== HEADER ===\nSession: {sid}\nSequence: 1\nTask: (given under PROMPT below)\n"
        "Protocol: 1.2\n\n"
    )


def test_requested_files_are_numbered_and_large_ones_windowed(store, sid):
    (store.workspace / "small.py").write_text("a = 1\n\nb = 2\n")
    (store.workspace / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 1001)))
    step(store, sid, '[READ_FILE path="small.py"]\n[READ_FILE path="big.txt"]\n')
    text = outbox(store, sid, 2)
    assert "--- small.py ---\n   1 | a = 1\n   2 |\n   3 | b = 2\n--- end small.py ---" in text
    assert "--- big.txt ---\n   1 | row 1\n   2 | row 2\n" in text
    assert (
        ' 400 | row 400\n(600 more lines below; READ_FILE with start_line="401" to see them)\n'
        "--- end big.txt ---"
    ) in text
    step(store, sid, '[READ_FILE path="big.txt" start_line="998"]\n')
    assert (
        "--- big.txt ---\n 998 | row 998\n 999 | row 999\n1000 | row 1000\n--- end big.txt ---"
        in (outbox(store, sid, 3))
    )


def test_shown_files_remember_views_and_writes_and_warn_about_hand_edits(store, sid):
    (store.workspace / "a.txt").write_text("1\n2\n3\n")
    step(store, sid, '[READ_FILE path="a.txt"]\n[CREATE_FILE path="b.txt"]\nb\n[/CREATE_FILE]\n')
    state = store.load(sid)
    assert state.shown_files == {"a.txt": sha("1\n2\n3\n"), "b.txt": sha("b\n")}
    assert json.loads(store.state_path(sid).read_text())["shownFiles"] == state.shown_files
    (store.workspace / "a.txt").write_text("0\n1\n2\n3\n")  # the user edits it by hand
    report = step(
        store,
        sid,
        '[EDIT_FILE path="a.txt" start_line="2" end_line="2"]\nTWO\n[/EDIT_FILE]\n'
        '[EDIT_FILE path="b.txt" start_line="1" end_line="1"]\nB\n[/EDIT_FILE]\n',
    )
    assert [r.summary for r in report.outcome.results] == [
        f"Replaced line 2 of 'a.txt' (1 line replaced by 1); {STALE}",
        "Replaced line 1 of 'b.txt' (1 line replaced by 1)",
    ]
    assert store.load(sid).shown_files["a.txt"] == sha("0\nTWO\n2\n3\n")


def test_search_results_are_shown_in_the_next_outbox_only(store, sid):
    (store.workspace / "a.py").write_text("def parse():\n    pass\n")
    step(store, sid, '[SEARCH query="def parse"]\n')
    assert outbox(store, sid, 2).endswith(
        "## Search Results\n"
        'SEARCH "def parse": 1 match in 1 file\n'
        "a.py:1: def parse():\n\n"
        "=== PROMPT ===\n"
        "Continue working on the task based on the results above. If the task is complete, "
        "send [DONE] with a summary.\n"
    )
    step(store, sid, "[MESSAGE]\nnext\n[/MESSAGE]\n")
    assert "## Search Results" not in outbox(store, sid, 3)


def test_a_reply_for_another_session_is_not_applied_and_kept(store, sid):
    reply = store.inbox / "other.txt"
    reply.write_text(
        'Session: 0badc0de Sequence: 1\n[CREATE_FILE path="x.txt"]\nx\n[/CREATE_FILE]\n'
    )
    report = apply_reply_file(store, sid, reply, shell=Shell())
    assert report.skipped and report.outcome.results == []
    kept = report.history / "reply.txt"
    assert report.notes == [
        f"The reply other.txt was not applied: it names session 0badc0de, but it was given to "
        f"session {sid}. It is kept as {kept}; if it is right after all, apply it with "
        f"'codingagent step {sid} {kept} --force'."
    ]
    assert (report.history / "reply.txt").read_text().startswith("Session: 0badc0de")
    assert not reply.exists() and not (store.workspace / "x.txt").exists()
    assert store.load(sid).sequence_number == 1


def test_a_reply_to_an_older_prompt_is_not_applied_unless_forced(store, sid):
    step(store, sid, "[MESSAGE]\nhi\n[/MESSAGE]\n")
    old = f'Session: {sid} Sequence: 1\n[CREATE_FILE path="x.txt"]\nx\n[/CREATE_FILE]\n'
    report = step(store, sid, old)
    assert report.skipped
    assert "it answers prompt 1, but the session is at prompt 2" in report.notes[0]
    assert not (store.workspace / "x.txt").exists()
    assert not step(store, sid, old, force=True).skipped
    assert (store.workspace / "x.txt").read_text() == "x\n"


def test_a_reply_naming_the_current_prompt_or_nothing_is_applied(store, sid):
    current = f'**Session:** {sid} **Sequence:** 1\n[CREATE_FILE path="a.txt"]\na\n[/CREATE_FILE]\n'
    assert not step(store, sid, current).skipped
    # Words after the first command are file content, not an echo.
    body = '[CREATE_FILE path="b.txt"]\nSession: 0badc0de Sequence: 1\n[/CREATE_FILE]\n'
    assert not step(store, sid, body).skipped
    assert (store.workspace / "b.txt").read_text() == "Session: 0badc0de Sequence: 1\n"


def test_a_1_0_state_file_loads_and_ranges_round_trip(store, sid):
    path = store.state_path(sid)
    data = json.loads(path.read_text())
    for key in ("shownFiles", "searchResults"):
        data.pop(key)
    data["readFileRequests"] = ["src/a.py"]
    path.write_text(json.dumps(data))
    state = store.load(sid)
    assert state.read_file_requests == ["src/a.py"] and state.shown_files == {}
    state.read_file_requests = ["a.py", FileRange(path="b.py", start_line=3, end_line=9)]
    store.save(state)
    assert json.loads(path.read_text())["readFileRequests"] == [
        "a.py",
        {"path": "b.py", "startLine": 3, "endLine": 9},
    ]
    assert store.load(sid).read_file_requests == state.read_file_requests
    assert SessionState.model_validate_json(path.read_bytes()) == state


# --- SEARCH with the LLM's regex cannot hang the turn; READ_FILE by file, not spelling ----------

can_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="regex guard needs fork"
)


@can_fork
def test_a_catastrophic_regex_is_stopped_and_the_turn_goes_on(ws, monkeypatch):
    monkeypatch.setattr(executor, "SEARCH_REGEX_SECONDS", 1.0)
    put(ws, "a.txt", "a" * 40 + "b\n")  # (a+)+$ would backtrack 2**40 times on this line
    started = time.monotonic()
    outcome = run(
        ws,
        Search(line=1, query="(a+)+$", regex=True),
        Search(line=2, query="(a+)+$"),  # the same text, plain: a literal, searched at once
        Search(line=3, query="a+b$", regex=True),
    )
    assert time.monotonic() - started < 6
    assert headlines(outcome) == [
        "[FAILED] SEARCH: The regular expression '(a+)+$' took longer than 1 s; simplify it",
        "[OK] SEARCH: No matches for '(a+)+$' (1 file searched)",
        "[OK] SEARCH: 1 match for 'a+b$' in 1 file (shown under Search Results)",
    ]
    assert outcome.searches[0] == 'SEARCH "(a+)+$": no matches (1 file searched)'
    assert outcome.searches[1] == f'SEARCH "a+b$": 1 match in 1 file\na.txt:1: {"a" * 40}b'
    assert multiprocessing.active_children() == []  # the runaway search was killed and reaped


@can_fork
def test_a_regex_search_counts_and_notes_like_a_plain_one(ws):
    put(ws, "many.txt", "hit\n" * (SEARCH_HITS + 5))
    put(ws, "huge.txt", "hit\n" * (executor.SEARCH_FILE_BYTES // 4 + 1))
    plain, regex = (search(ws, query=q, regex=r)[1] for q, r in (("hit", False), ("^h.t$", True)))
    assert regex.split("\n")[0] == f'SEARCH "^h.t$": {SEARCH_HITS + 5} matches in 1 file'
    assert regex.split("\n")[1:] == plain.split("\n")[1:]
    assert regex.endswith(
        "(5 more matches not shown; narrow the query or the glob)\n(1 file over 1 MB not searched)"
    )


@can_fork
def test_the_regex_child_reports_its_failures_to_the_parent():
    assert executor._within(5, lambda: "answer") == "answer"
    with pytest.raises(ValueError, match="from the child"):
        executor._within(5, functools.partial(int, "from the child"))
    with pytest.raises(ChildProcessError, match=r"without an answer \(exit code 3\)"):
        executor._within(5, functools.partial(os._exit, 3))
    assert multiprocessing.active_children() == []


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


def test_a_file_read_under_many_spellings_is_shown_once(store, sid):
    (store.workspace / "a.txt").write_text("only once\n")
    step(store, sid, "".join(f'[READ_FILE path="x{i}/../a.txt"]\n' for i in range(40)))
    text = outbox(store, sid, 2)
    assert text.count("only once") == 1
    assert "--- x0/../a.txt ---\n   1 | only once\n--- end x0/../a.txt ---" in text
