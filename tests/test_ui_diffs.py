"""The page's per-turn diffs (codingagent.records.changeset) and session views, from real
turns."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from codingagent.frontends.page.events import Approvals, EventHub, PageListener
from codingagent.frontends.page.views import session_view
from codingagent.records.changeset import MAX_DIFF_BYTES, session_diffs
from codingagent.records.changeset import file_diff as unified
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.loop import SessionLoop
from codingagent.session.seams import Reply
from codingagent.settings import Settings
from codingagent.workspace import Workspace


def test_a_changed_file_is_a_unified_diff_numbered_as_edit_file_counts_lines():
    diff = unified("a.py", b"one\ntwo\nthree\n", b"one\n2\nthree\n")
    assert diff.change == "changed"
    assert diff.diff.splitlines() == [
        "--- a/a.py",
        "+++ b/a.py",
        "@@ -1,3 +1,3 @@",
        " one",
        "-two",
        "+2",
        " three",
    ]


def test_created_and_deleted_files_diff_against_dev_null():
    created = unified("n.txt", None, b"hi\n")
    assert created.change == "created"
    assert created.diff.splitlines()[:2] == ["--- /dev/null", "+++ b/n.txt"]
    assert "+hi" in created.diff.splitlines()
    deleted = unified("n.txt", b"hi\n", None)
    assert deleted.change == "deleted"
    assert deleted.diff.splitlines()[:2] == ["--- a/n.txt", "+++ /dev/null"]
    assert "-hi" in deleted.diff.splitlines()


def test_binary_and_huge_files_get_a_note_instead_of_a_diff():
    binary = unified("img.png", b"\x89PNG\0\0", b"\x89PNG\0\1\2")
    assert (binary.diff, binary.note) == ("", "binary file (6 bytes -> 7 bytes)")
    latin1 = unified("old.txt", b"caf\xe9\n", b"cafe\n")
    assert latin1.diff == "" and latin1.note.startswith("binary file")
    huge = unified("big.txt", b"x" * (MAX_DIFF_BYTES + 1), b"")
    assert huge.diff == "" and huge.note.startswith("too large to show a diff")
    same = unified("same.txt", b"a\n", b"a\n")
    assert (same.diff, same.note) == ("", "content unchanged")


def _loop(root: Path, workspace: Path) -> SessionLoop:
    store = SessionStore(root)
    state, _ = start_session(store, "the task", workspace)
    hub = EventHub()
    return SessionLoop(
        store,
        Settings(clipboard=False, commands="deny"),
        state.session_id,
        PageListener(state.session_id, hub, Approvals(hub)),
        shell=Shell(timeout=10, sandbox="none"),
    )


def _edit(path: str, line: int, text: str) -> Reply:
    body = (
        f'[EDIT_FILE path="{path}" start_line="{line}" end_line="{line}"]\n{text}\n[/EDIT_FILE]\n'
    )
    return Reply(body.encode(), source="test")


def test_each_turn_diffs_against_what_the_next_turn_found(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("one\ntwo\n")
    with _loop(tmp_path, project) as loop:
        loop.step(_edit("a.txt", 1, "ONE"))
        loop.step(_edit("a.txt", 2, "TWO"))
        folders = loop.store.turns(loop.session_id)
    ws = Workspace(project)

    [first], [second] = session_diffs(ws, folders)
    assert [ln for ln in first.diff.splitlines() if ln[:1] in "+-"][2:] == ["-one", "+ONE"]
    assert [ln for ln in second.diff.splitlines() if ln[:1] in "+-"][2:] == ["-two", "+TWO"]
    assert first.note == second.note == ""


def test_a_hand_edit_after_a_turn_is_said_in_its_diff(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("one\ntwo\n")
    with _loop(tmp_path, project) as loop:
        loop.step(_edit("a.txt", 1, "ONE"))
        (project / "a.txt").write_text("ONE\ntwo\nby hand\n")
        loop.step(_edit("a.txt", 2, "TWO"))
        (project / "a.txt").write_text("ONE\nTWO\nby hand again\n")
        folders = loop.store.turns(loop.session_id)
    ws = Workspace(project)

    [first], [second] = session_diffs(ws, folders)
    assert first.note == "the file was changed by hand after this turn"
    assert "+by hand" in first.diff.splitlines()
    assert second.note == "the file was changed by hand since"


def test_the_session_view_has_the_prompt_and_each_turn_newest_first(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("one\n")
    with _loop(tmp_path, project) as loop:
        loop.step(_edit("a.txt", 1, "uno"))
        message = Reply(b"[MESSAGE]\nAll <b>good</b>\n[/MESSAGE]\n", source="second")
        loop.step(message)
        view = session_view(loop.store, loop.session_id, token_budget=200)

    assert view["session"]["sequence"] == 3
    assert view["prompt"]["sequence"] == 3
    assert view["prompt"]["text"].startswith("=== HEADER ===")
    assert view["prompt"]["chars"] == len(view["prompt"]["text"])
    assert view["prompt"]["overBudget"] is True  # the prompt is over 200 tokens
    newest, oldest = view["turns"]
    assert (newest["sequence"], newest["reply"], newest["diffs"]) == (2, "second", [])
    assert newest["messages"] == ["All <b>good</b>"]
    assert [r["headline"] for r in newest["results"]] == ["[OK] MESSAGE: Shown to the user"]
    assert oldest["diffs"][0]["path"] == "a.txt"
    assert "+uno" in oldest["diffs"][0]["diff"].splitlines()


def test_without_its_workspace_a_session_shows_its_turns_without_diffs(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("one\n")
    with _loop(tmp_path, project) as loop:
        loop.step(_edit("a.txt", 1, "uno"))
        (project / "a.txt").unlink()
        project.rmdir()
        view = session_view(loop.store, loop.session_id, token_budget=100_000)
    [turn] = view["turns"]
    assert "diffs" not in turn
    assert turn["diffsProblem"] == f"The workspace of session {loop.session_id} is gone: {project}"
    assert turn["results"][0]["headline"].startswith("[OK] EDIT_FILE")


def _patched(old: list[str], diff: str) -> list[str]:
    """``old`` with a unified diff applied, checking every hunk header's line numbers."""
    out: list[str] = []
    i = 0
    for line in diff.splitlines()[2:]:
        if line.startswith("@@"):
            m = re.fullmatch(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
            assert m is not None, line
            a, a_len, b, b_len = (int(g) if g is not None else 1 for g in m.groups())
            start = a - 1 if a_len else a
            assert start >= i
            out.extend(old[i:start])
            i = start
            assert len(out) == (b - 1 if b_len else b)
        elif line.startswith("+"):
            out.append(line[1:])
        else:
            assert old[i] == line[1:]
            if line.startswith(" "):
                out.append(line[1:])
            i += 1
    return out + old[i:]


@given(
    st.lists(st.sampled_from("abcd"), max_size=30),
    st.lists(st.sampled_from("abcd"), max_size=30),
)
def test_a_diff_turns_the_old_lines_into_the_new_ones_with_true_line_numbers(old, new):
    diff = unified(
        "f.txt", "".join(f"{x}\n" for x in old).encode(), "".join(f"{x}\n" for x in new).encode()
    )
    if old == new:
        assert diff.diff == ""
    else:
        assert _patched(old, diff.diff) == new
