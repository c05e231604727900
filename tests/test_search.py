"""SEARCH: grep over the files the LLM sees; its own regex cannot hang the turn."""

from __future__ import annotations

import functools
import multiprocessing
import os
import time

import pytest
from executing import headlines, put, run

from codingagent.execute import search as searching
from codingagent.execute.search import SEARCH_HITS
from codingagent.protocol.commands import Search
from codingagent.state import CommandResult


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


can_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="regex guard needs fork"
)


def test_search_is_case_insensitive_by_default_and_skips_binary_and_hidden_places(project):
    result, text = search(project, query="main")
    assert result.headline == (
        "[OK] SEARCH: 3 matches for 'main' in 3 files (shown under Search Results)"
    )
    assert text == (
        'SEARCH "main":\n'
        "README.md:1: Run main() to start.\n"
        "--\n"
        "src/app.py-1- import os\n"
        "src/app.py-2-\n"
        "src/app.py:3: def Main():\n"
        "src/app.py-4-     return os.getcwd()\n"
        "--\n"
        "src/util.py:1: def main_helper():\n"
        "src/util.py-2-     pass"
    )


def test_search_shows_context_lines_and_merges_close_hits(ws):
    put(ws, "a.py", "".join(f"line {n}{' hit' if n in (5, 8, 20) else ''}\n" for n in range(1, 31)))
    result, text = search(ws, query="hit", context=1)
    assert result.summary == "3 matches for 'hit' in 1 file (shown under Search Results)"
    assert text.split("\n") == [
        'SEARCH "hit":',
        "a.py-4- line 4",
        "a.py:5: line 5 hit",
        "a.py-6- line 6",
        "a.py-7- line 7",
        "a.py:8: line 8 hit",
        "a.py-9- line 9",
        "--",
        "a.py-19- line 19",
        "a.py:20: line 20 hit",
        "a.py-21- line 21",
    ]
    assert search(ws, query="hit", context=0)[1].split("\n")[1:] == [
        "a.py:5: line 5 hit",
        "a.py:8: line 8 hit",
        "a.py:20: line 20 hit",
    ]
    assert search(ws, query="hit")[1].split("\n")[1:3] == ["a.py-3- line 3", "a.py-4- line 4"]
    assert search(ws, query="hit", context=21)[0].headline == (
        "[FAILED] SEARCH: context must be 0 to 20 lines, got 21"
    )


def test_search_case_sensitive_glob_and_regex(project):
    assert search(project, query="main", case_sensitive=True, glob="*.py", context=0)[1] == (
        "SEARCH \"main\" in files matching '*.py':\nsrc/util.py:1: def main_helper():"
    )
    assert search(project, query=r"^def \w+\(\):$", regex=True, glob="src/*.{py,md}", context=0)[
        1
    ] == (
        "SEARCH \"^def \\w+\\(\\):$\" in files matching 'src/*.{py,md}':\n"
        "src/app.py:3: def Main():\n"
        "src/util.py:1: def main_helper():"
    )
    result, text = search(project, query=r"^def M", regex=True, case_sensitive=True, context=0)
    assert result.summary == "1 match for '^def M' in 1 file (shown under Search Results)"
    assert text == 'SEARCH "^def M":\nsrc/app.py:3: def Main():'


def test_search_with_no_match_and_with_a_bad_regex(project):
    result, text = search(project, query="zebra", glob="*.md")
    assert (
        result.headline
        == "[OK] SEARCH: No matches for 'zebra' in files matching '*.md' (1 file searched)"
    )
    assert text == "", "no block for no matches: the result says it"
    result, text = search(project, query="(unclosed", regex=True)
    assert result.headline == (
        "[FAILED] SEARCH: Invalid regular expression '(unclosed': missing ), unterminated "
        "subpattern at position 0"
    )
    assert text == ""
    assert search(project, query="")[0].headline == "[FAILED] SEARCH: The query is empty"


def test_search_caps_hits_and_clips_long_lines(ws):
    put(ws, "many.txt", "hit\n" * (SEARCH_HITS + 50) + "hit " + "x" * 500 + "\n")
    result, text = search(ws, query="hit", context=0)
    assert result.summary == (
        f"{SEARCH_HITS + 51} matches for 'hit' in 1 file (the first {SEARCH_HITS} shown under "
        "Search Results)"
    )
    lines = text.split("\n")
    assert len(lines) == 1 + SEARCH_HITS + 1
    assert lines[-1] == "(51 more matches not shown; narrow the query or the glob)"
    put(ws, "many.txt", "hit " + "x" * 500 + "\n")
    assert search(ws, query="hit", context=0)[1].split("\n")[1] == (
        "many.txt:1: hit " + "x" * 196 + " [... 304 more characters]"
    )


@pytest.mark.slow  # real time: a time limit, a kill or a poll
@can_fork
def test_a_catastrophic_regex_is_stopped_and_the_turn_goes_on(ws, monkeypatch):
    monkeypatch.setattr(searching, "SEARCH_REGEX_SECONDS", 1.0)
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
    assert outcome.searches == [f'SEARCH "a+b$":\na.txt:1: {"a" * 40}b']
    assert multiprocessing.active_children() == []  # the runaway search was killed and reaped


@can_fork
def test_a_regex_search_counts_and_notes_like_a_plain_one(ws):
    put(ws, "many.txt", "hit\n" * (SEARCH_HITS + 5))
    put(ws, "huge.txt", "hit\n" * (searching.SEARCH_FILE_BYTES // 4 + 1))
    plain, regex = (search(ws, query=q, regex=r)[1] for q, r in (("hit", False), ("^h.t$", True)))
    assert regex.split("\n")[0] == 'SEARCH "^h.t$":'
    assert regex.split("\n")[1:] == plain.split("\n")[1:]
    assert regex.endswith(
        "(5 more matches not shown; narrow the query or the glob)\n(1 file over 1 MB not searched)"
    )


@can_fork
def test_the_regex_child_reports_its_failures_to_the_parent():
    assert searching.within(5, lambda: "answer") == "answer"
    with pytest.raises(ValueError, match="from the child"):
        searching.within(5, functools.partial(int, "from the child"))
    with pytest.raises(ChildProcessError, match=r"without an answer \(exit code 3\)"):
        searching.within(5, functools.partial(os._exit, 3))
    assert multiprocessing.active_children() == []
