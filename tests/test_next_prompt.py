"""What a reply changes in the next prompt and the session (through apply_reply): requested
files, shown files and their digests, search results, and which replies are applied at all."""

from __future__ import annotations

import json

import pytest
from executing import STALE, sha
from turns import apply_file, step

from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.state import FileRange, SessionState


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path)


@pytest.fixture
def sid(store) -> str:
    return start_session(store, "task")[0].session_id


def outbox(store, sid, sequence: int) -> str:
    return store.outbox_path(sid, sequence).read_text()


def test_the_header_names_protocol_1_2(store, sid):
    assert outbox(store, sid, 1).startswith(
        f"=== HEADER ===\nSession: {sid}\nSequence: 1\nTask: task\nProtocol: 1.2\n\n"
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


def test_a_reply_for_another_session_is_not_applied_and_kept(store, sid):
    reply = store.inbox / "other.txt"
    reply.write_text(
        'Session: 0badc0de Sequence: 1\n[CREATE_FILE path="x.txt"]\nx\n[/CREATE_FILE]\n'
    )
    report = apply_file(store, sid, reply, shell=Shell())
    assert report.skipped and report.outcome.results == []
    kept = report.history / "reply.txt"
    assert report.notes == [
        f"The reply other.txt was not applied: it names session 0badc0de, but it was given to "
        f"session {sid}. It is kept as {kept}; if it is right after all, apply it with "
        f"'codingagent step {sid} {kept} --force'. Otherwise paste the reply to prompt 1 "
        f"(it starts with 'Session: {sid} Sequence: 1')."
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


def test_a_file_read_under_many_spellings_is_shown_once(store, sid):
    (store.workspace / "a.txt").write_text("only once\n")
    step(store, sid, "".join(f'[READ_FILE path="x{i}/../a.txt"]\n' for i in range(40)))
    text = outbox(store, sid, 2)
    assert text.count("only once") == 1
    assert "--- x0/../a.txt ---\n   1 | only once\n--- end x0/../a.txt ---" in text


def test_search_results_are_shown_in_the_next_outbox_only(store, sid):
    (store.workspace / "a.py").write_text("def parse():\n    pass\n")
    step(store, sid, '[SEARCH query="def parse"]\n')
    assert outbox(store, sid, 2).endswith(
        "## Search Results\n"
        'SEARCH "def parse":\n'
        "a.py:1: def parse():\n"
        "a.py-2-     pass\n\n"
        "=== PROMPT ===\n"
        "Continue working on the task based on the results above. If the task is complete, "
        "send [DONE] with a summary.\n"
    )
    step(store, sid, "[MESSAGE]\nnext\n[/MESSAGE]\n")
    assert "## Search Results" not in outbox(store, sid, 3)
