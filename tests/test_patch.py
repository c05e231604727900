"""PATCH: unified diffs and ``*** Begin Patch`` envelopes, parsed from real replies and applied
by the real executor to real files: hunks placed by their lines, all or nothing."""

from __future__ import annotations

import difflib

from executing import headlines, put, run_reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sampling import examples

TEN = "".join(f"line {i}\n" for i in range(1, 11))


def patch(body: str) -> str:
    return f"[PATCH]\n{body}[/PATCH]\n"


def test_a_git_diff_of_two_files_with_several_hunks(ws) -> None:
    a = put(ws, "a.txt", TEN)
    b = put(ws, "src/b.py", "def f():\n    return 1\n")
    body = (
        "diff --git a/a.txt b/a.txt\nindex 3b18e51..a5c1966 100644\n"
        "--- a/a.txt\n+++ b/a.txt\n"
        "@@ -2,3 +2,3 @@\n line 2\n-line 3\n+LINE 3\n line 4\n"
        "@@ -8,3 +8,4 @@\n line 8\n line 9\n+line 9.5\n line 10\n"
        "diff --git a/src/b.py b/src/b.py\n--- a/src/b.py\n+++ b/src/b.py\n"
        "@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
    )
    outcome = run_reply(ws, patch(body))
    assert headlines(outcome) == [
        "[OK] PATCH: Changed 'a.txt': 2 hunks, lines 2-4, lines 8-10; changed 'src/b.py': "
        "1 hunk, lines 1-2"
    ]
    assert a.read_text() == TEN.replace("line 3\n", "LINE 3\n").replace(
        "line 10\n", "line 9.5\nline 10\n"
    )
    assert b.read_text() == "def f():\n    return 2\n"
    assert outcome.changed == ["a.txt", "src/b.py"]


def test_new_and_deleted_files(ws) -> None:
    gone = put(ws, "old.txt", "bye\nnow\n")
    body = (
        "--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n+# New\n+text\n"
        "--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-bye\n-now\n"
    )
    outcome = run_reply(ws, patch(body))
    assert headlines(outcome) == ["[OK] PATCH: Created 'docs/new.md' (2 lines); deleted 'old.txt'"]
    assert (ws.root / "docs/new.md").read_text() == "# New\ntext\n"
    assert not gone.exists()


def test_a_deletion_whose_lines_are_not_the_file_deletes_nothing(ws) -> None:
    kept = put(ws, "old.txt", "changed since\n")
    outcome = run_reply(ws, patch("--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"))
    assert headlines(outcome) == [
        "[FAILED] PATCH: the lines the patch removes from 'old.txt' are not its content, so it "
        "was not deleted; READ_FILE it, or use DELETE_FILE; nothing was changed"
    ]
    assert kept.read_text() == "changed since\n"


def test_hunks_are_placed_by_their_lines_whatever_the_numbers_say(ws) -> None:
    path = put(ws, "a.txt", "new first\nnew second\n" + TEN)
    body = "--- a/a.txt\n+++ b/a.txt\n@@ -4,3 +4,3 @@\n line 4\n-line 5\n+LINE 5\n line 6\n"
    assert headlines(run_reply(ws, patch(body))) == [
        "[OK] PATCH: Changed 'a.txt': 1 hunk, lines 6-8 (@@ said line 4)"
    ]
    assert "LINE 5\nline 6\n" in path.read_text()


def test_bare_hunk_headers_and_miscounted_hunks(ws) -> None:
    path = put(ws, "a.txt", TEN)
    body = "--- a.txt\n+++ a.txt\n@@\n line 1\n-line 2\n+two\n@@ -9,1 +9,7 @@\n line 9\n+nine\n"
    assert headlines(run_reply(ws, patch(body))) == [
        "[OK] PATCH: Changed 'a.txt': 2 hunks, lines 1-2, line 9"
    ]
    assert path.read_text().startswith("line 1\ntwo\nline 3\n")
    assert "line 9\nnine\nline 10\n" in path.read_text()


def test_whitespace_drift_is_tolerated_and_said(ws) -> None:
    path = put(ws, "a.py", "class A:\n    def f(self):   \n        return 1\n")
    body = "--- a/a.py\n+++ b/a.py\n@@ -2,2 +2,2 @@\n def f(self):\n-    return 1\n+    return 2\n"
    assert headlines(run_reply(ws, patch(body))) == [
        "[OK] PATCH: Changed 'a.py': 1 hunk, lines 2-3 (matched with other indentation, "
        "REPLACE re-indented)"
    ]
    # The context line stays as the file has it, trailing spaces and all.
    assert path.read_text() == "class A:\n    def f(self):   \n        return 2\n"


def test_trailing_whitespace_and_blank_context_lines_without_their_space(ws) -> None:
    path = put(ws, "a.txt", "one  \n\ntwo\n")
    body = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n\n-two\n+TWO\n"
    assert headlines(run_reply(ws, patch(body))) == [
        "[OK] PATCH: Changed 'a.txt': 1 hunk, lines 1-3 (matched ignoring trailing whitespace)"
    ]
    assert path.read_text() == "one  \n\nTWO\n"


def test_a_hunk_that_does_not_apply_leaves_every_file_unchanged(ws) -> None:
    a = put(ws, "a.txt", TEN)
    b = put(ws, "b.txt", "def divide(a, b):\n    return a / b\n")
    body = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n line 1\n-line 2\n+two\n"
        "--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+c\n"
        "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n def divide(a, b):\n-    return a // b\n"
        "+    return a / b if b else 0\n"
    )
    (result,) = run_reply(ws, patch(body)).results
    assert result.lines() == [
        "[FAILED] PATCH: Hunk 1 of 1 for 'b.txt' (reply line 14): the hunk's text (its ' ' and "
        "'-' lines) is not in 'b.txt'; did you mean lines 1-2 (shown below)? the ' ' and '-' "
        "lines of a hunk must repeat the file's lines; nothing was changed",
        "  Output:",
        "       1 | def divide(a, b):",
        "       2 |     return a / b",
    ]
    assert a.read_text() == TEN
    assert b.read_text() == "def divide(a, b):\n    return a / b\n"
    assert not (ws.root / "c.txt").exists()


def test_an_ambiguous_hunk_takes_the_place_its_number_names_or_fails(ws) -> None:
    path = put(ws, "a.txt", "x = 1\ny\nx = 1\ny\n")
    numbered = "--- a/a.txt\n+++ b/a.txt\n@@ -3,2 +3,2 @@\n x = 1\n-y\n+z\n"
    assert headlines(run_reply(ws, patch(numbered))) == [
        "[OK] PATCH: Changed 'a.txt': 1 hunk, lines 3-4"
    ]
    assert path.read_text() == "x = 1\ny\nx = 1\nz\n"
    put(ws, "a.txt", "x = 1\ny\nx = 1\ny\n")
    bare = "--- a/a.txt\n+++ b/a.txt\n@@\n x = 1\n-y\n+z\n"
    assert headlines(run_reply(ws, patch(bare))) == [
        "[FAILED] PATCH: Hunk 1 of 1 for 'a.txt' (reply line 4): the hunk's text (its ' ' and "
        "'-' lines) matches 2 places in 'a.txt' (starting at lines 1, 3); add lines around it "
        "so that it matches one place only; nothing was changed"
    ]


def test_the_begin_patch_envelope(ws) -> None:
    a = put(ws, "a.py", "def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    put(ws, "gone.txt", "x\n")
    body = (
        "*** Begin Patch\n*** Update File: a.py\n@@ def g():\n-    return 1\n+    return 2\n"
        "*** Add File: b.py\n+print('b')\n*** Delete File: gone.txt\n*** End Patch\n"
    )
    assert headlines(run_reply(ws, patch(body))) == [
        "[OK] PATCH: Changed 'a.py': 1 hunk, line 6; created 'b.py' (1 line); deleted 'gone.txt'"
    ]
    assert a.read_text().endswith("def g():\n    return 2\n")
    assert (ws.root / "b.py").read_text() == "print('b')\n"
    assert not (ws.root / "gone.txt").exists()


def test_a_patch_body_in_a_diff_fence_and_no_newline_at_end(ws) -> None:
    path = put(ws, "a.txt", "a\nb")
    body = (
        "```diff\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
        "+B\n```\n"
    )
    assert headlines(run_reply(ws, patch(body))) == [
        "[OK] PATCH: Changed 'a.txt': 1 hunk, lines 1-2"
    ]
    assert path.read_text() == "a\nB\n"


def test_text_that_is_not_a_diff_is_refused_with_its_line(ws) -> None:
    outcome = run_reply(ws, "[PATCH]\nHere is my change:\n--- a/x\n+++ b/x\n[/PATCH]\n")
    assert headlines(outcome) == [
        "[FAILED] PATCH: reply line 2: 'Here is my change:' is not part of a diff; a file "
        "section starts with '--- a/path' and '+++ b/path' lines; nothing was changed"
    ]


def test_a_patch_outside_the_workspace_is_rejected_before_anything_is_written(ws) -> None:
    body = "--- /dev/null\n+++ b/ok.txt\n@@ -0,0 +1 @@\n+x\n--- /dev/null\n+++ b/../evil\n@@\n+x\n"
    (result,) = run_reply(ws, patch(body)).results
    assert result.headline.startswith("[FAILED] PATCH: REJECTED: ")
    assert not (ws.root / "ok.txt").exists()


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    lines=st.lists(st.sampled_from(["a", "b", "c", "", "  d", "\te", "f  "]), max_size=30),
    edits=st.lists(
        st.tuples(
            st.integers(0, 30),
            st.integers(0, 3),
            st.lists(st.text("abxyz \t", max_size=6), max_size=3),
        ),
        min_size=1,
        max_size=4,
    ),
    context=st.integers(0, 3),
)
def test_a_difflib_diff_of_any_edit_applies_back_to_the_edited_file(
    ws, lines, edits, context
) -> None:
    before = [f"{line}\n" for line in lines]
    after = list(before)
    for at, removed, added in edits:
        at = min(at, len(after))
        after[at : at + removed] = [f"{text}\n" for text in added]
    diff = "".join(difflib.unified_diff(before, after, "a/f.txt", "b/f.txt", n=context))
    path = put(ws, "f.txt", "".join(before))
    if not diff:
        return  # no change: nothing to apply
    outcome = run_reply(ws, patch(diff))
    assert [r.success for r in outcome.results] == [True], outcome.results
    assert path.read_text() == "".join(after)


def test_a_patch_turn_is_journaled_and_undone_like_any_other(tmp_path) -> None:
    from invoking import run as cli

    cli(tmp_path, "start", "Edit", "--no-watch")
    put_a = tmp_path / "workspace/a.txt"
    put_a.write_text(TEN)
    (tmp_path / "workspace/gone.txt").write_text("x\n")
    body = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n line 1\n-line 2\n+two\n"
        "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n"
        "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    stepped = cli(tmp_path, "step", "latest", "-", input=patch(body))
    assert "[OK] PATCH: Changed 'a.txt'" in stepped.stderr
    assert cli(tmp_path, "undo").exit_code == 0
    assert put_a.read_text() == TEN
    assert (tmp_path / "workspace/gone.txt").read_text() == "x\n"
    assert not (tmp_path / "workspace/new.txt").exists()


def test_two_sections_for_one_file_apply_one_after_the_other(ws) -> None:
    path = put(ws, "a.py", TEN)
    body = (
        "--- a/a.py\n+++ b/a.py\n@@\n line 1\n-line 2\n+two\n"
        "--- a/./a.py\n+++ b/./a.py\n@@\n two\n-line 3\n+three(\n"
    )
    assert headlines(run_reply(ws, patch(body))) == [
        "[OK] PATCH: Changed 'a.py': 1 hunk, lines 1-2; changed './a.py': 1 hunk, lines 2-3; "
        "'a.py': warning: Python cannot compile it: SyntaxError at line 1: invalid syntax"
    ]
    assert path.read_text().startswith("line 1\ntwo\nthree(\nline 4\n")
