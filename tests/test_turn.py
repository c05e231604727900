"""Turns as transactions: history, duplicates, bad replies, recovery, undo and the log."""

from __future__ import annotations

import base64
import json
import os
import stat
import zlib

import pytest
from click.testing import CliRunner
from turns import apply_file, step

from codingagent.frontends.cli import main
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.recovery import recover
from codingagent.session.turn import TurnOptions
from codingagent.state import SessionError
from codingagent.transaction.undo import undo


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path)


@pytest.fixture
def sid(store) -> str:
    state, _ = start_session(store, "task")
    return state.session_id


def ws(store):
    return store.workspace


def outbox_text(store, sid, sequence: int) -> str:
    return store.outbox_path(sid, sequence).read_text()


def cli(store, *args: str, input: str | None = None):
    return CliRunner().invoke(main, [*args, "--root", str(store.root)], input=input)


# --- history ---------------------------------------------------------------------------------


def test_history_keeps_reply_commands_results_and_preimages(store, sid):
    (ws(store) / "old.txt").write_text("old\n")
    os.chmod(ws(store) / "old.txt", 0o640)
    reply = (
        '[CREATE_FILE path="old.txt"]\nnew\n[/CREATE_FILE]\n'
        '[CREATE_FILE path="n/new.txt"]\nx\n[/CREATE_FILE]\n'
    )
    report = step(store, sid, reply)
    folder = store.turn_dir(sid, 1)
    assert report.history == folder
    assert (folder / "reply.txt").read_text() == reply
    assert [c["kind"] for c in json.loads((folder / "commands.json").read_text())] == [
        "CREATE_FILE",
        "CREATE_FILE",
    ]
    results = json.loads((folder / "results.json").read_text())
    assert [r["summary"] for r in results] == ["Overwrote 'old.txt'", "Created 'n/new.txt'"]
    assert all(r["durationMs"] >= 0 for r in results)
    lines = (folder / "preimages.jsonl").read_bytes().splitlines()
    assert all(int(line[:8], 16) == zlib.crc32(line[9:]) for line in lines)  # framed
    pre = [json.loads(line[9:]) for line in lines]
    assert pre[0] == {
        "path": "old.txt",
        "mode": 0o640,
        "blob": None,
        "inline": base64.b64encode(b"old\n").decode(),  # small: in the journal line itself
        "createdDirs": [],
    }
    assert pre[1] == {"path": "n/new.txt", "mode": None, "blob": None, "createdDirs": ["n"]}
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["replyFile"] == "r.txt" and meta["nextOutbox"] == f"{sid}_seq0002.txt"
    assert meta["durationMs"] > 0
    assert not store.journal_path(sid).exists()


# --- duplicates --------------------------------------------------------------------------------


def test_a_duplicate_save_is_skipped_and_leaves_the_inbox(store, sid):
    reply = '[CREATE_FILE path="a.txt"]\n1\n[/CREATE_FILE]\n'
    step(store, sid, reply)
    (ws(store) / "a.txt").write_text("changed by the user\n")
    copy = store.inbox / "copy.txt"
    copy.write_bytes(b"\xef\xbb\xbf" + reply.replace("\n", "\r\n").encode())  # BOM, CRLF
    report = apply_file(store, sid, copy, shell=Shell())
    assert report.skipped
    assert report.notes == [
        "This reply is identical to the one applied in turn 1 (r.txt); it was skipped. To apply "
        f"it again, use 'codingagent step {sid} FILE --force'."
    ]
    assert (ws(store) / "a.txt").read_text() == "changed by the user\n"
    assert store.load(sid).sequence_number == 2
    assert not copy.exists()


def test_the_same_content_naming_the_current_sequence_is_applied(store, sid):
    reply = "Sequence: {n}\n[RUN_COMMAND]\necho again >> log.txt\n[/RUN_COMMAND]\n"
    step(store, sid, reply.format(n=1))
    step(store, sid, "[MESSAGE]\nbetween\n[/MESSAGE]\n")
    assert step(store, sid, reply.format(n=1)).skipped
    report = step(store, sid, reply.format(n=1).replace("1", "3"))
    assert not report.skipped and (ws(store) / "log.txt").read_text() == "again\nagain\n"


def test_force_applies_a_duplicate(store, sid):
    reply = "[RUN_COMMAND]\necho x >> log.txt\n[/RUN_COMMAND]\n"
    step(store, sid, reply)
    assert not step(store, sid, reply, force=True).skipped
    assert (ws(store) / "log.txt").read_text() == "x\nx\n"
    result = cli(store, "step", "latest", "-", "--force", input=reply)
    assert result.exit_code == 0 and (ws(store) / "log.txt").read_text() == "x\nx\nx\n"


# --- bad replies -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "summary"),
    [
        (b"", "Your reply was empty; nothing was run"),
        (b" \n\r\n\t", "Your reply was empty; nothing was run"),
        (
            b'[CREATE_FILE path="x"]\n\0\x01\x02\n[/CREATE_FILE]\n',
            "Your reply contained NUL bytes (binary data); nothing in it was run",
        ),
        (
            b"x" * 2001,
            "Your reply was 2,001 bytes, over the 2,000-byte limit; nothing in it was run. "
            "Send smaller replies.",
        ),
    ],
)
def test_bad_replies_are_reported_to_the_llm_and_kept(store, sid, data, summary):
    report = step(store, sid, data, max_reply_bytes=2000)
    assert report.notes == [summary]
    assert f"[FAILED] REPLY: {summary}" in outbox_text(store, sid, 2)
    assert (store.turn_dir(sid, 1) / "reply.txt").read_bytes() == data
    assert list(ws(store).iterdir()) == []


def test_invalid_utf8_is_read_with_replacement_and_said(store, sid):
    report = step(store, sid, b'[CREATE_FILE path="a.txt"]\ncaf\xe9\n[/CREATE_FILE]\n')
    note = (
        "Your reply was not valid UTF-8 (first bad byte at offset 30); it was read with "
        "replacement characters"
    )
    assert report.notes == [note]
    assert (ws(store) / "a.txt").read_text() == "caf\ufffd\n"
    assert f"[FAILED] REPLY: {note}\n[OK] CREATE_FILE: Created 'a.txt'" in outbox_text(
        store, sid, 2
    )


def test_cli_reply_cap_is_configurable(store, sid):
    result = cli(store, "step", "latest", "-", "--max-reply-bytes", "10", input="x" * 11)
    assert result.exit_code == 0
    assert "over the 10-byte limit" in result.stderr


# --- recovery ----------------------------------------------------------------------------------


def test_recover_rolls_back_an_uncommitted_turn_and_applies_it_afresh(store, sid):
    (ws(store) / "keep.txt").write_text("original\n")
    reply = '[CREATE_FILE path="keep.txt"]\nnew\n[/CREATE_FILE]\n'
    step(store, sid, reply)
    # Fake a crash after the files changed but before the state was saved: rewind the state
    # and put the journal back, leaving the workspace as the killed agent left it.
    state = store.load(sid)
    before = (store.turn_dir(sid, 1) / "state-before.json").read_text()
    store.state_path(sid).write_text(before)
    journal = {"sequence": 1, "turn": "0001", "replyFile": "r.txt"}
    store.journal_path(sid).write_text(json.dumps(journal))
    (ws(store) / "keep.txt").write_text("half-written by the dead agent\n")
    (ws(store) / ".keep.txt.abc123.tmp").write_text("stray temp file")

    report = recover(store, sid, TurnOptions(shell=Shell()))
    assert report is not None and report.notes[0] == (
        "Recovered turn 1, interrupted when the agent stopped: put back 1 file(s) and applied "
        "r.txt again"
    )
    assert (ws(store) / "keep.txt").read_text() == "new\n"
    assert sorted(p.name for p in ws(store).iterdir()) == ["keep.txt"]
    assert store.load(sid).sequence_number == state.sequence_number
    assert not store.journal_path(sid).exists()
    assert len(list((store.sessions / sid / "aborted").iterdir())) == 1
    assert recover(store, sid, TurnOptions(shell=Shell())) is None


def test_recover_after_the_commit_point_only_removes_the_journal(store, sid):
    step(store, sid, '[CREATE_FILE path="a.txt"]\n1\n[/CREATE_FILE]\n')
    store.journal_path(sid).write_text(json.dumps({"sequence": 1, "turn": "0001"}))
    assert recover(store, sid, TurnOptions(shell=Shell())) is None
    assert not store.journal_path(sid).exists()
    assert store.load(sid).sequence_number == 2 and len(store.turns(sid)) == 1


def test_a_turn_is_refused_while_an_interrupted_one_waits(store, sid):
    store.journal_path(sid).parent.mkdir(parents=True, exist_ok=True)
    store.journal_path(sid).write_text(json.dumps({"sequence": 1, "turn": "0001"}))
    with pytest.raises(SessionError, match="interrupted turn"):
        step(store, sid, "[MESSAGE]\nx\n[/MESSAGE]\n")


# --- undo --------------------------------------------------------------------------------------


def snapshot(folder):
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    } | {p.relative_to(folder).as_posix() + "/": None for p in folder.rglob("*") if p.is_dir()}


THREE_TURNS = [
    '[CREATE_FILE path="run.sh"]\necho two\n[/CREATE_FILE]\n[DELETE_FILE path="gone.txt"]\n',
    '[EDIT_FILE path="keep.txt" start_line="1" end_line="1"]\nedited\n[/EDIT_FILE]\n'
    '[CREATE_FILE path="deep/er/new.txt"]\nnew\n[/CREATE_FILE]\n',
    '[DELETE_FILE path="run.sh"]\n[CREATE_FILE path="keep.txt"]\nthird\n[/CREATE_FILE]\n',
]


def three_turns(store, sid) -> list[dict]:
    (ws(store) / "run.sh").write_bytes(b"echo one\r\n")
    os.chmod(ws(store) / "run.sh", 0o751)
    (ws(store) / "keep.txt").write_text("line\n")
    (ws(store) / "gone.txt").write_bytes(bytes(range(256)))
    os.chmod(ws(store) / "gone.txt", 0o600)
    snaps = [snapshot(ws(store))]
    for reply in THREE_TURNS:
        step(store, sid, reply)
        snaps.append(snapshot(ws(store)))
    return snaps


def test_undo_restores_bytes_modes_and_deleted_files_turn_by_turn(store, sid):
    snaps = three_turns(store, sid)
    for turn in (3, 2, 1):
        report = undo(store, sid)
        assert report.turns == [turn]
        assert snapshot(ws(store)) == snaps[turn - 1]
        assert store.load(sid).sequence_number == turn
        assert report.outbox == store.outbox_path(sid, turn) and report.outbox.exists()
        assert not store.outbox_path(sid, turn + 1).exists()
    assert stat.S_IMODE(os.stat(ws(store) / "run.sh").st_mode) == 0o751
    with pytest.raises(SessionError, match="has 0 turn"):
        undo(store, sid)
    assert len(list((store.sessions / sid / "undone").iterdir())) == 3


def test_undo_several_turns_at_once_and_then_redo(store, sid):
    snaps = three_turns(store, sid)
    report = undo(store, sid, turns=3)
    assert report.turns == [3, 2, 1] and snapshot(ws(store)) == snaps[0]
    state = store.load(sid)
    assert (state.sequence_number, state.last_results) == (1, [])
    assert outbox_text(store, sid, 1).endswith("=== PROMPT ===\ntask\n")
    step(store, sid, THREE_TURNS[0])  # no longer a duplicate: its turn was undone
    assert snapshot(ws(store)) == snaps[1]


def test_undo_refuses_when_a_file_was_edited_by_hand(store, sid):
    snaps = three_turns(store, sid)
    (ws(store) / "keep.txt").write_text("my own edit\n")
    with pytest.raises(SessionError, match=r"Nothing undone: keep\.txt changed since"):
        undo(store, sid)
    assert (ws(store) / "keep.txt").read_text() == "my own edit\n"
    assert store.load(sid).sequence_number == 4
    refused = cli(store, "undo")
    assert refused.exit_code == 1 and "use --force" in refused.stderr
    forced = cli(store, "undo", "--force")
    assert forced.exit_code == 0, forced.output
    assert "Undid turn 3" in forced.stderr
    assert snapshot(ws(store)) == snaps[2]


def test_undo_rewrites_a_missing_outbox_and_reopens_a_done_session(store, sid):
    step(store, sid, "[MESSAGE]\nhi\n[/MESSAGE]\n")
    step(store, sid, "[DONE]\nall done\n[/DONE]\n")
    assert store.load(sid).is_complete
    store.outbox_path(sid, 2).unlink()
    result = cli(store, "undo", sid[:4])
    assert result.exit_code == 0, result.output
    state = store.load(sid)
    assert not state.is_complete and state.sequence_number == 2
    assert "[OK] MESSAGE: Shown to the user" in outbox_text(store, sid, 2)


# --- a prompt shown again ------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["show"], ["resume", "--no-watch"]])
def test_a_rewritten_prompt_remembers_the_files_it_shows(store, sid, command):
    """`show` and `resume` rewrite a deleted prompt from the workspace as it is now; an EDIT_FILE
    written against that prompt is not warned about as stale."""
    (ws(store) / "f.txt").write_text("one\ntwo\n")
    step(store, sid, '[READ_FILE path="f.txt"]\n')
    store.outbox_path(sid, 2).unlink()
    (ws(store) / "f.txt").write_text("ONE by hand\ntwo\n")
    shown = cli(store, *command, sid)
    assert shown.exit_code == 0, shown.output
    assert "ONE by hand" in outbox_text(store, sid, 2)
    report = step(
        store, sid, '[EDIT_FILE path="f.txt" start_line="1" end_line="1"]\nuno\n[/EDIT_FILE]\n'
    )
    edit = report.outcome.results[0]
    assert edit.success, edit.summary
    assert "changed since you last saw it" not in edit.summary
    assert (ws(store) / "f.txt").read_text() == "uno\ntwo\n"


def test_show_beside_a_watcher_prints_the_prompt_and_saves_nothing(store, sid):
    """A watcher holds the session's lock and may commit a turn at any moment: `show` must not
    save a state it loaded, or it could roll that turn back."""
    step(store, sid, '[READ_FILE path="f.txt"]\n')
    store.outbox_path(sid, 2).unlink()
    saved = store.state_path(sid).read_bytes()
    with store.held_if_free(sid) as held:
        assert held
        shown = cli(store, "show", sid)
    assert shown.exit_code == 0, shown.output
    assert "=== HEADER ===" in shown.stdout
    assert store.state_path(sid).read_bytes() == saved


def test_an_edit_after_a_change_the_llm_never_saw_is_warned_about(store, sid):
    """The warning the test above must not see, where it belongs: the prompt still shows the
    old content."""
    (ws(store) / "f.txt").write_text("one\ntwo\n")
    step(store, sid, '[READ_FILE path="f.txt"]\n')
    (ws(store) / "f.txt").write_text("ONE by hand\ntwo\n")
    report = step(
        store, sid, '[EDIT_FILE path="f.txt" start_line="1" end_line="1"]\nuno\n[/EDIT_FILE]\n'
    )
    assert "changed since you last saw it" in report.outcome.results[0].summary


# --- log ---------------------------------------------------------------------------------------


def test_log_shows_each_turn_and_json(store, sid):
    step(store, sid, '[CREATE_FILE path="a.py"]\nx = 1\n[/CREATE_FILE]\n[DELETE_FILE path="b"]\n')
    step(store, sid, "[RUN_COMMAND]\necho hi\n[/RUN_COMMAND]\n")
    text = cli(store, "log")
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0].startswith("Turn 1  ") and lines[0].split("  ")[2] == "r.txt"
    assert lines[1].startswith("  [OK] CREATE_FILE: Created 'a.py'  (")
    assert lines[2].startswith("  [FAILED] DELETE_FILE: File 'b' not found  (")
    assert lines[3].startswith("Turn 2  ")
    assert lines[4].startswith("  [OK] RUN_COMMAND: Ran 'echo hi' (exit code 0)  (")
    data = json.loads(cli(store, "log", "--json").stdout)
    assert [turn["sequence"] for turn in data] == [1, 2]
    assert data[0]["results"][1]["summary"] == "File 'b' not found"
    assert data[1]["replyFile"] == "r.txt" and "appliedAt" in data[1]


def test_log_of_a_new_session(store, sid):
    result = cli(store, "log")
    assert result.exit_code == 0 and "has no turns yet" in result.stdout


# --- what the reviewer broke once ----------------------------------------------------------------


def test_a_reply_saved_again_during_its_turn_stays_in_the_inbox(store, sid):
    reply = store.inbox / "reply.txt"
    reply.write_text(
        "[RUN_COMMAND]\nprintf '[CREATE_FILE path=\"second.txt\"]\\nv2\\n[/CREATE_FILE]\\n'"
        " > ../inbox/reply.txt\n[/RUN_COMMAND]\n"
    )
    apply_file(store, sid, reply, shell=Shell())
    assert reply.read_text() == '[CREATE_FILE path="second.txt"]\nv2\n[/CREATE_FILE]\n'
    apply_file(store, sid, reply, shell=Shell())
    assert (ws(store) / "second.txt").read_text() == "v2\n" and not reply.exists()


def test_an_oversized_reply_is_moved_whole_into_history(store, sid):
    reply = store.inbox / "huge.txt"
    reply.write_bytes(b"y" * 5000)
    report = apply_file(store, sid, reply, shell=Shell(), max_reply_bytes=1000)
    assert "over the 1,000-byte limit" in report.notes[0]
    assert not reply.exists()
    assert (report.history / "reply.txt").read_bytes() == b"y" * 5000


def test_undecodable_names_never_break_a_turn(store, sid):
    reply = store.inbox / os.fsdecode(b"r\xff.txt")
    reply.write_text("[RUN_COMMAND]\ntouch \"$(printf 'bad\\377name.txt')\"\n[/RUN_COMMAND]\n")
    report = apply_file(store, sid, reply, shell=Shell())
    assert report.outcome.results[0].success
    assert json.loads((report.history / "meta.json").read_text())["replyFile"] == "r\\xff.txt"
    assert "  added: bad\\xffname.txt (0 bytes)" in outbox_text(store, sid, 2)


def test_requested_files_that_cannot_be_inlined_are_explained(store, sid):
    (ws(store) / "blob.bin").write_bytes(b"\x89PNG\0\0\0" * 10)
    (ws(store) / "big.txt").write_text("0123456789\n" * 300_000)  # 3.3 MB
    (ws(store) / "soon-gone.txt").write_text("x\n")
    step(
        store,
        sid,
        '[READ_FILE path="blob.bin"]\n[READ_FILE path="big.txt"]\n'
        '[READ_FILE path="soon-gone.txt"]\n[DELETE_FILE path="soon-gone.txt"]\n',
    )
    text = outbox_text(store, sid, 2)
    assert "--- blob.bin ---\n(binary file, 70 bytes, not shown)\n--- end blob.bin ---" in text
    # Protocol 1.1 (docs/protocol.md §5.4): a large file is shown numbered, 400 lines at a time.
    assert (
        ' 400 | 0123456789\n(299,600 more lines below; READ_FILE with start_line="401" to see '
        "them)\n--- end big.txt ---"
    ) in text
    assert len(text) < 110_000
    assert (
        "--- soon-gone.txt ---\n(cannot be shown: No such file or directory)\n"
        "--- end soon-gone.txt ---"
    ) in text


def test_undo_restores_a_file_larger_than_the_in_memory_preimage(store, sid):
    big = bytes(range(256)) * 12_000  # 3 MB: saved and restored as a stream
    (ws(store) / "big.bin").write_bytes(big)
    step(store, sid, '[DELETE_FILE path="big.bin"]\n')
    assert not (ws(store) / "big.bin").exists()
    assert (store.turn_dir(sid, 1) / "pre/0000").read_bytes() == big
    undo(store, sid)
    assert (ws(store) / "big.bin").read_bytes() == big


def test_a_path_a_command_led_elsewhere_is_named_as_it_now_is(store, sid):
    """A command that swapped a folder for a symlink to another between two file commands on
    one path: the second writes where the path now leads, and the turn names that file (what
    a path names is known again after a command, not kept from before it)."""
    reply = (
        '[CREATE_FILE path="a/x.txt"]\none\n[/CREATE_FILE]\n'
        "[RUN_COMMAND]\nmv a b && ln -s b a\n[/RUN_COMMAND]\n"
        '[EDIT_FILE path="a/x.txt" start_line="1" end_line="1"]\ntwo\n[/EDIT_FILE]\n'
    )
    report = step(store, sid, reply, shell=Shell(timeout=10, sandbox="none"))
    assert [r.success for r in report.outcome.results] == [True, True, True], report.outcome
    assert (store.workspace / "b" / "x.txt").read_text() == "two\n"
    # What the model saw of the file (its own edit) is kept under the file the edit wrote.
    assert "b/x.txt" in report.state.shown_files
    assert "a/x.txt" not in report.state.shown_files
