"""Session state on disk: protocol field names, atomic saves, id prefixes, the lock."""

from __future__ import annotations

import json
import os
import time

import pytest

from codingagent.records.store import SessionStore
from codingagent.state import CommandResult, SessionError, SessionState


def make_state(store: SessionStore, task: str = "t") -> SessionState:
    state = SessionState(session_id=store.new_id(), task=task, workspace=str(store.workspace))
    store.save(state)
    return state


def test_state_json_uses_the_protocol_field_names(tmp_path):
    store = SessionStore(tmp_path)
    store.ensure_dirs()
    state = make_state(store, "Create a calculator app")
    state.last_results = [CommandResult(command="MESSAGE", success=True, summary="Shown")]
    state.read_file_requests = ["src/a.py"]
    store.save(state)
    data = json.loads(store.state_path(state.session_id).read_text())
    for key in (
        "sessionId",
        "task",
        "sequenceNumber",
        "isComplete",
        "createdAt",
        "updatedAt",
        "lastResults",
        "readFileRequests",
    ):
        assert key in data
    assert data["sequenceNumber"] == 1 and data["isComplete"] is False
    assert data["createdAt"].endswith("Z") and "." not in data["createdAt"]
    assert data["lastResults"][0] == {
        "command": "MESSAGE",
        "success": True,
        "summary": "Shown",
        "output": None,
        "durationMs": 0.0,
    }
    assert store.load(state.session_id) == state


def test_ids_are_eight_hex_and_outbox_names_follow_the_protocol(tmp_path):
    store = SessionStore(tmp_path)
    session_id = store.new_id()
    assert len(session_id) == 8 and int(session_id, 16) >= 0
    assert store.outbox_path("a1b2c3d4", 2).name == "a1b2c3d4_seq0002.txt"


def test_resolve_prefix_latest_and_errors(tmp_path):
    store = SessionStore(tmp_path)
    store.ensure_dirs()
    with pytest.raises(SessionError, match="No sessions yet"):
        store.resolve("latest")
    older = make_state(store)
    newer = make_state(store)
    os.utime(store.state_path(older.session_id), (time.time() - 100, time.time() - 100))
    assert store.resolve(None) == newer.session_id
    assert store.resolve("latest") == newer.session_id
    assert store.resolve(older.session_id[:6]) == older.session_id
    with pytest.raises(SessionError, match="No session matches 'zz'"):
        store.resolve("zz")
    with pytest.raises(SessionError, match="matches several sessions"):
        store.resolve(_common_prefix(store, older))


def _common_prefix(store: SessionStore, state: SessionState) -> str:
    """Save a twin of ``state`` sharing its 4-character prefix, and return that prefix."""
    first = state.session_id
    twin = SessionState(session_id=first[:4] + "0000", task="t", workspace="/w")
    if twin.session_id == first:
        twin = SessionState(session_id=first[:4] + "ffff", task="t", workspace="/w")
    store.save(twin)
    return first[:4]


def test_corrupt_or_missing_state_is_a_user_error(tmp_path):
    store = SessionStore(tmp_path)
    store.ensure_dirs()
    with pytest.raises(SessionError, match="No session 'deadbeef'"):
        store.load("deadbeef")
    store.state_path("deadbeef").write_text("{not json")
    with pytest.raises(SessionError, match="not a valid session file"):
        store.load("deadbeef")


def test_second_holder_of_a_session_lock_is_refused(tmp_path):
    store = SessionStore(tmp_path)
    store.ensure_dirs()
    lock = store.hold("a1b2c3d4")
    try:
        with pytest.raises(SessionError, match="already being watched"):
            store.hold("a1b2c3d4")
    finally:
        lock.release()
    store.hold("a1b2c3d4").release()


def test_history_folders_are_numbered_turns_before_the_current_sequence(tmp_path):
    store = SessionStore(tmp_path)
    store.ensure_dirs()
    store.save(SessionState(session_id="a1b2c3d4", task="t", workspace="/w", sequence_number=4))
    folder = store.turn_dir("a1b2c3d4", 3)
    assert folder == tmp_path.resolve() / "sessions/a1b2c3d4/turns/0003"
    folder.mkdir(parents=True)
    store.turn_dir("a1b2c3d4", 4).mkdir()  # never committed: not history
    assert store.turns("a1b2c3d4") == [folder]
