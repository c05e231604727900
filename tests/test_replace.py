"""REPLACE: SEARCH/REPLACE blocks, matched exactly or loosely, all or nothing, with explained
failures."""

from __future__ import annotations

import time

import pytest
from executing import headlines, put, replace, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sampling import examples

from codingagent.execute import execute
from codingagent.execute.matching import Ambiguous, Layer, Match, NotFound, find
from codingagent.sandbox.shell import Shell

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
    found = headlines(run(ws, replace("d", ("a\n", "b\n")), replace("b.bin", ("a\n", "b\n"))))
    assert found[0] == "[FAILED] REPLACE: 'd' is a directory"
    assert found[1].startswith("[FAILED] REPLACE: 'b.bin' is not a UTF-8 text file (from line 1")
    assert (ws.root / "b.bin").read_bytes() == b"\xff\xfe"


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
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
def test_replace_never_changes_a_file_when_a_block_fails(module_ws, lines, blocks) -> None:
    text = "".join(f"{x}\n" for x in lines)
    path = put(module_ws, "r.txt", text)
    command = replace(
        "r.txt", *[("".join(f"{x}\n" for x in s), "".join(f"{x}\n" for x in r)) for s, r in blocks]
    )
    outcome = execute([command], module_ws, Shell())
    (result,) = outcome.results
    if not result.success:
        assert path.read_bytes() == text.encode()
        assert outcome.changed == []
    else:
        assert outcome.changed == ["r.txt"]


def test_matching_answers_with_data_not_wording() -> None:
    lines = ["def f():", "    return 1", "", "def g():", "    return 1  "]
    found = find(lines, ["    return 1"])
    assert isinstance(found, Match)
    assert (found.start, found.layer) == (1, Layer.EXACT)
    found = find(lines, ["def g():", "    return 1"])
    assert isinstance(found, Match)
    assert (found.start, found.layer) == (3, Layer.TRAILING_WHITESPACE)
    found = find(lines, ["  def g():", "      return 1"])
    assert isinstance(found, Match)
    assert (found.start, found.layer) == (3, Layer.INDENTATION)
    assert found.adapt(["  x", "", "    y"]) == ["x", "", "  y"]
    assert find(lines, ["return 1"]) == Ambiguous([1, 4])
    assert find(lines, ["def gg():"]) == NotFound((3, 4))
    assert find(lines, ["class Unrelated(Base):"]) == NotFound(None)
