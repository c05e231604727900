"""Transactions at their edges (issue 19): torn journal records, recovery that always makes
progress, duplicates by content, undo as a transaction, Ctrl-C, the pre-image cap.

Processes are real ``codingagent`` runs killed with SIGKILL at named points
(:mod:`codingagent.transaction.crashpoints`); a full disk is a real 2 MB tmpfs (root only).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from executing import headlines, put, run
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling import examples
from test_crash import (
    BIG_TURN,
    REPLIES,
    apply,
    check_recovery_and_finish,
    new_session,
    reference,  # noqa: F401  (a fixture)
    snapshot,
    step_process,
)
from turns import apply_file, step

from codingagent.execute import search as searching
from codingagent.faults import TurnNotApplied
from codingagent.prompt.render import PromptOptions
from codingagent.protocol.commands import Replace, ReplaceBlock, Search
from codingagent.records.history import TurnRecord, append_frame, frame, read_frames
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.recovery import recover
from codingagent.session.seams import Reply
from codingagent.session.turn import TurnOptions, apply_reply
from codingagent.state import SessionError
from codingagent.transaction.crashpoints import CRASH_ENV
from codingagent.transaction.undo import undo


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path)


@pytest.fixture
def sid(store) -> str:
    state, _ = start_session(store, "task")
    return state.session_id


def agent(store: SessionStore, *args: str, crash_at: str | None = None) -> subprocess.Popen:
    """A real ``codingagent`` process in the store's run directory."""
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    if crash_at:
        env[CRASH_ENV] = crash_at
    return subprocess.Popen(
        [sys.executable, "-m", "codingagent", *args, "--root", str(store.root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )


def wait_for_start(store: SessionStore, process: subprocess.Popen) -> None:
    """Until the reply's command has made its file ``started``: in the workspace, or (where
    the command runs on an overlay, bubblewrap's) in its layer under ``sessions/``, which
    reaches the workspace only when the command is done."""
    while not ((store.workspace / "started").exists() or _in_a_layer(store, "started")):
        assert process.poll() is None, process.stderr.read().decode()  # type: ignore[union-attr]
        time.sleep(0.01)


def _in_a_layer(store: SessionStore, name: str) -> bool:
    """Whether a file ``name`` is under ``sessions/``, where the agent makes and removes its
    folders (the sandbox's probe, a command's layer) while it is looked for."""
    try:
        return any(store.sessions.rglob(name))
    except FileNotFoundError:  # a folder removed while the walk was in it: look again
        return False


def killed(process: subprocess.Popen) -> None:
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL, stderr.decode()


# --- 1. torn journal records -----------------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path):
    """A 2 MB tmpfs: a run directory on it fills up for real."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], check=True)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def test_a_preimage_torn_by_a_full_disk_rolls_the_turn_back_whole(tiny_disk):
    """ENOSPC while a pre-image is recorded stops the turn (issue 17: a fault of the machine is
    never a result the LLM sees) and the rollback reads every record, the torn tail aside:
    each file the turn changed is back, and the journal is gone."""
    store = SessionStore(tiny_disk)
    store.ensure_dirs()
    a_text = "".join(f"line {i} of a file big enough to tear\n" for i in range(1200))  # 48 KB
    (store.workspace / "a.txt").write_text(a_text)
    (store.workspace / "b.txt").write_text("b as it was\n")
    state, _ = start_session(store, "task")
    reply = (
        '[CREATE_FILE path="b.txt"]\nnew b\n[/CREATE_FILE]\n'
        "[RUN_COMMAND]\nhead -c 16384 /dev/zero > spare; cat /dev/zero > fill 2>/dev/null; "
        "rm spare; true\n[/RUN_COMMAND]\n"
        '[CREATE_FILE path="a.txt"]\nnew a\n[/CREATE_FILE]\n'
    )
    with pytest.raises(TurnNotApplied, match="disk is full"):
        step(store, state.session_id, reply)
    assert (store.workspace / "a.txt").read_text() == a_text
    assert (store.workspace / "b.txt").read_text() == "b as it was\n"
    assert not store.journal_path(state.session_id).exists()
    assert store.load(state.session_id).sequence_number == 1


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(st.text(max_size=30), st.integers(min_value=0, max_value=80), st.booleans()),
        max_size=12,
    )
)
def test_torn_appends_never_swallow_a_record(tmp_path_factory, appends):
    """Each append either lands whole or leaves a torn tail (the first ``cut`` bytes of its
    frame, as a full disk leaves them); whatever the order, the records read back are exactly
    the appends that landed."""
    path = tmp_path_factory.mktemp("frames") / "preimages.jsonl"
    landed = []
    for text, cut, torn in appends:
        entry = {"path": text, "mode": None}
        if torn:
            with open(path, "ab") as f:
                f.write(frame(entry)[: min(cut, len(frame(entry)) - 1)])
        else:
            append_frame(path, entry)
            landed.append(entry)
    records = read_frames(path.read_bytes() if path.exists() else b"")
    assert records.entries == landed and records.damaged == []


def test_the_files_a_reply_names_are_saved_at_once_and_undo_restores_only_what_changed(store, sid):
    """The pre-images of a reply's files are saved together, before its first command; a file
    a command named but did not change (a REPLACE that found nothing) is not "restored"."""
    (store.workspace / "keep.txt").write_text("keep\n")
    report = step(
        store,
        sid,
        '[REPLACE path="keep.txt"]\n<<<<<<< SEARCH\nabsent\n=======\nx\n>>>>>>> REPLACE\n'
        '[/REPLACE]\n[CREATE_FILE path="new/n.txt"]\nn\n[/CREATE_FILE]\n',
    )
    assert [r.success for r in report.outcome.results] == [False, True]
    records = TurnRecord(store.turn_dir(sid, 1)).preimages()
    assert [entry["path"] for entry in records.entries] == ["keep.txt", "new/n.txt"]
    done = undo(store, sid)
    assert done.restored == ["new/n.txt"]
    assert sorted(p.name for p in store.workspace.iterdir()) == ["keep.txt"]
    assert (store.workspace / "keep.txt").read_text() == "keep\n"


def damage_line(record: TurnRecord, number: int) -> None:
    path = record.folder / TurnRecord.PREIMAGES
    lines = path.read_bytes().split(b"\n")
    lines[number - 1] = lines[number - 1][:20] + b"X" + lines[number - 1][21:]
    path.write_bytes(b"\n".join(lines))


def test_a_damaged_record_stops_undo_with_a_message_naming_it(store, sid):
    (store.workspace / "a.txt").write_text("a\n")
    (store.workspace / "b.txt").write_text("b\n")
    step(
        store,
        sid,
        '[CREATE_FILE path="a.txt"]\nA\n[/CREATE_FILE]\n'
        '[CREATE_FILE path="b.txt"]\nB\n[/CREATE_FILE]\n',
    )
    damage_line(TurnRecord(store.turn_dir(sid, 1)), 1)
    with pytest.raises(SessionError, match=r"cannot restore the file saved in record 1 of 0001"):
        undo(store, sid)
    assert (store.workspace / "b.txt").read_text() == "B\n"
    assert store.load(sid).sequence_number == 2
    forced = undo(store, sid, force=True)
    assert forced.restored == ["b.txt"]
    assert forced.problems == ["the file saved in record 1 of 0001/preimages.jsonl (damaged)"]
    assert (store.workspace / "b.txt").read_text() == "b\n"


def test_recovery_names_a_damaged_record_and_goes_on(store, sid):
    (store.workspace / "a.txt").write_text("a\n")
    reply = write(store, '[CREATE_FILE path="a.txt"]\nA\n[/CREATE_FILE]\n' + REPLIES[0])
    killed(agent(store, "step", sid, str(reply), crash_at="result:3"))
    damage_line(TurnRecord(store.turn_dir(sid, 1)), 2)
    report = recover(store, sid, TurnOptions(shell=Shell()))
    assert report is not None and "could not put back the file saved in record 2" in report.notes[0]
    assert (store.workspace / "a.txt").read_text() == "one\n"
    assert store.load(sid).sequence_number == 2


def write(store: SessionStore, text: str, name: str = "reply.txt") -> Path:
    path = store.root / name
    path.write_text(text)
    return path


# --- 2. recovery always makes progress --------------------------------------------------------


def test_a_folder_swapped_for_a_symlink_out_never_wedges_recovery(store, sid):
    """The turn creates src/f.txt, then replaces src by a symlink to /etc and is killed:
    recovery reports the path it cannot restore instead of failing on it forever."""
    reply = write(
        store,
        '[CREATE_FILE path="src/f.txt"]\nf\n[/CREATE_FILE]\n'
        "[RUN_COMMAND]\nrm -rf src; ln -s /etc src\n[/RUN_COMMAND]\n"
        "[RUN_COMMAND]\ntrue\n[/RUN_COMMAND]\n",
    )
    killed(agent(store, "step", sid, str(reply), crash_at="result:2"))
    report = recover(store, sid, TurnOptions(shell=Shell()))
    assert report is not None
    assert "could not put back 'src/f.txt' (" in report.notes[0]
    assert not store.journal_path(sid).exists()
    assert store.load(sid).sequence_number == 2
    assert not step(store, sid, "[MESSAGE]\nnext\n[/MESSAGE]\n").skipped


def test_a_journal_whose_folder_an_older_agent_set_aside_is_recovered(store, sid):
    """An older recovery restored the files, set the turn's folder aside and died before
    removing the journal: the reply is found in aborted/ and applied."""
    killed(agent(store, "step", sid, str(write(store, REPLIES[0])), crash_at="result:2"))
    store.set_aside(sid, store.turn_dir(sid, 1), "aborted")
    report = recover(store, sid, TurnOptions(shell=Shell()))
    assert report is not None and (store.workspace / "dir/b.txt").read_text() == "bee\n"
    assert store.load(sid).sequence_number == 2 and not store.journal_path(sid).exists()


# Kill points inside the recovery of turn 1 killed after its third command (three files
# changed): each restored file, the journal marked rolled back, then the reply applied again.
RECOVERY_KILLS = [
    "restored:1",
    "restored:2",
    "restored:3",
    "rolled-back:1",
    "journal:1",
    "preimage:2",
    "result:4",
    "outbox:1",
    "state:1",
]


@pytest.mark.slow
@pytest.mark.parametrize("crash_at", RECOVERY_KILLS)
def test_kill_inside_recovery(tmp_path, reference, crash_at):  # noqa: F811
    snaps, reference_view = reference
    store, sid = new_session(tmp_path)
    apply(store, sid, 0)
    killed(step_process(store, sid, 1, "result:3"))
    killed(agent(store, "resume", sid, "--no-watch", crash_at=crash_at))
    again = agent(store, "resume", sid, "--no-watch", crash_at="journal:1")  # killed again,
    again.communicate(timeout=60)  # unless the first recovery got past that point
    assert again.returncode in (0, -signal.SIGKILL)
    check_recovery_and_finish(store, sid, 1, snaps, reference_view)
    assert len(store.turns(sid)) == len(REPLIES)


# --- 3. applied once, whatever the echo --------------------------------------------------------


def test_an_off_by_one_echo_is_still_a_duplicate(store, sid):
    """A reply echoing the next sequence names the current one once applied: two copies in
    the inbox still apply it once."""
    reply = "Sequence: 2\n[RUN_COMMAND]\necho x >> log.txt\n[/RUN_COMMAND]\n"
    for name in ("one.txt", "two.txt"):
        (store.inbox / name).write_text(reply)
    first = apply_file(store, sid, store.inbox / "one.txt", shell=Shell())
    second = apply_file(store, sid, store.inbox / "two.txt", shell=Shell())
    assert not first.skipped and second.skipped
    assert "identical to the one applied in turn 1" in second.notes[0]
    assert (store.workspace / "log.txt").read_text() == "x\n"
    assert not step(store, sid, reply, force=True).skipped


@pytest.mark.parametrize(
    "copy",
    [
        "[RUN_COMMAND]\necho x >> log.txt\n[/RUN_COMMAND]\n\n\n",
        "[RUN_COMMAND]\necho x >> log.txt\n[/RUN_COMMAND]",
        "[RUN_COMMAND]  \necho x >> log.txt\t\n[/RUN_COMMAND]   \n  ",
        "\ufeff[RUN_COMMAND]\r\necho x >> log.txt\r\n[/RUN_COMMAND]\r\n",
    ],
)
def test_copies_differing_in_trailing_whitespace_are_duplicates(store, sid, copy):
    step(store, sid, "[RUN_COMMAND]\necho x >> log.txt\n[/RUN_COMMAND]\n")
    (store.inbox / "copy.txt").write_text(copy)
    assert apply_file(store, sid, store.inbox / "copy.txt", shell=Shell()).skipped
    assert (store.workspace / "log.txt").read_text() == "x\n"


# --- 4. undo as a transaction ----------------------------------------------------------------

UNDO_KILLS = ["undo:1", "restored:1", "restored:2", "restored:4", "rewound:1", "undone:1"]


@pytest.mark.slow
@pytest.mark.parametrize("crash_at", UNDO_KILLS)
def test_kill_inside_undo(tmp_path, reference, crash_at):  # noqa: F811
    """Undo of two turns killed at each point; the next undo (or resume) finishes it."""
    snaps, _ = reference
    store, sid = new_session(tmp_path)
    for turn in range(3):
        apply(store, sid, turn)
    killed(agent(store, "undo", sid, "--turns", "2", crash_at=crash_at))
    assert snapshot(store.workspace) in (snaps[1], snaps[3]) or store.journal_path(sid).exists()
    finish = subprocess.run(
        [
            sys.executable,
            "-m",
            "codingagent",
            "resume",
            sid,
            "--no-watch",
            "--root",
            str(store.root),
        ],
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    assert finish.returncode == 0, finish.stderr.decode()
    assert snapshot(store.workspace) == snaps[1]
    assert store.load(sid).sequence_number == 2 and not store.journal_path(sid).exists()
    assert len(list((store.sessions / sid / "undone").iterdir())) == 2
    assert store.outbox_path(sid, 2).exists() and not store.outbox_path(sid, 3).exists()
    apply(store, sid, 1)  # the session goes on: turn 2 again
    assert snapshot(store.workspace) == snaps[2]


def test_undo_run_again_finishes_an_interrupted_undo(tmp_path, reference):  # noqa: F811
    snaps, _ = reference
    store, sid = new_session(tmp_path)
    for turn in range(3):
        apply(store, sid, turn)
    killed(agent(store, "undo", sid, crash_at="restored:1"))
    report = undo(store, sid)
    assert report.turns == [3] and snapshot(store.workspace) == snaps[2]


# --- 6. Ctrl-C rolls the turn back --------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_during_a_turn_rolls_it_back_and_it_is_not_applied_again(store, sid):
    (store.workspace / "keep.txt").write_text("original\n")
    reply = (
        '[CREATE_FILE path="keep.txt"]\nchanged\n[/CREATE_FILE]\n'
        "[RUN_COMMAND]\ntouch started; sleep 30\n[/RUN_COMMAND]\n"
    )
    (store.inbox / "r.txt").write_text(reply)
    process = agent(store, "step", sid, str(store.inbox / "r.txt"))
    wait_for_start(store, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and b"Traceback" not in stderr, stderr.decode()
    assert (store.workspace / "keep.txt").read_text() == "original\n"
    assert not store.journal_path(sid).exists()
    assert store.load(sid).sequence_number == 1
    assert (store.inbox / "r.txt").exists()
    again = apply_file(store, sid, store.inbox / "r.txt", shell=Shell())
    assert again.skipped and "interrupted by Ctrl-C in turn 1" in again.notes[0]
    assert (store.workspace / "keep.txt").read_text() == "original\n"
    forced = step(store, sid, reply.replace("sleep 30", "true"), force=True)
    assert not forced.skipped and (store.workspace / "keep.txt").read_text() == "changed\n"


@pytest.mark.slow
def test_ctrl_c_after_a_folder_became_a_symlink_out_says_what_it_could_not_put_back(store, sid):
    """Without an overlay (no OS sandbox here, or none to be had) a command changes the
    workspace as it runs: a folder it swapped for a symlink out stops the rollback of a file
    inside it, and the message says so. (On bubblewrap's overlay its changes are not in the
    workspace before it is done: the test above.)"""
    reply = write(
        store,
        '[CREATE_FILE path="src/f.txt"]\nf\n[/CREATE_FILE]\n'
        "[RUN_COMMAND]\nrm -rf src; ln -s /etc src; touch started; sleep 30\n[/RUN_COMMAND]\n",
    )
    process = agent(store, "step", sid, str(reply), "--sandbox", "none", "--commands", "allow")
    wait_for_start(store, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    said = " ".join(stderr.decode().split())
    assert process.returncode == 130, said
    assert "Stopped (Ctrl-C): the turn was rolled back" in said
    assert "could not put back 'src/f.txt' (" in said
    assert not store.journal_path(sid).exists() and store.load(sid).sequence_number == 1
    assert not step(store, sid, "[MESSAGE]\nnext\n[/MESSAGE]\n").skipped


# --- 7. pre-images are capped; sparse files stay sparse ------------------------------------------


def test_preimages_beyond_the_cap_are_refused_and_sparse_files_cost_what_they_hold(store, sid):
    for name in ("one.bin", "two.bin"):
        (store.workspace / name).write_bytes(os.urandom(3 * 1024 * 1024))
    with open(store.workspace / "sparse.bin", "wb") as f:
        f.write(b"head")
        f.truncate(500 * 1024 * 1024)
    report = step(
        store,
        sid,
        '[DELETE_FILE path="sparse.bin"]\n[DELETE_FILE path="one.bin"]\n'
        '[DELETE_FILE path="two.bin"]\n',
        preimage_cap=5 * 1024 * 1024,
    )
    results = report.outcome.results
    assert [r.success for r in results] == [True, True, False]
    assert results[2].summary.startswith("Not changed: keeping 'two.bin' (3,145,728 bytes)")
    assert (store.workspace / "two.bin").exists()
    kept = sum(p.stat().st_blocks * 512 for p in report.history.rglob("*") if p.is_file())
    assert kept < 4 * 1024 * 1024  # the 500 MB sparse file was not expanded
    undo(store, sid)
    restored = store.workspace / "sparse.bin"
    assert restored.stat().st_size == 500 * 1024 * 1024
    assert restored.stat().st_blocks * 512 < 1024 * 1024
    with open(restored, "rb") as f:
        assert f.read(4) == b"head"


# --- 6. replies that cannot stall the agent -----------------------------------------------------


def test_a_flood_of_commands_runs_the_first_ten_thousand_and_the_prompt_stays_in_budget(store, sid):
    report = step(store, sid, "[DONE]\n" * 12_000, prompt=PromptOptions(token_budget=3000))
    assert report.notes == [
        "Your reply had more than 10,000 commands (2,000 more command tags after them); only "
        "the first 10,000 were run. Send fewer commands a reply"
    ]
    assert len(report.outcome.results) == 10_001
    assert report.outbox is not None
    text = report.outbox.read_text()
    assert len(text) <= 3000 * 4
    assert "[FAILED] REPLY: Your reply had more than 10,000 commands" in text
    shown = text.count("[FAILED] DONE")
    assert 0 < shown < 10_000
    assert f"({10_000 - shown:,} more results not shown: over the prompt's size limit)" in text


def test_many_views_of_one_file_are_windowed_to_fit(store, sid):
    (store.workspace / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    reply = "".join(
        f'[READ_FILE path="big.txt" start_line="{i * 12 + 1}" end_line="{i * 12 + 400}"]\n'
        for i in range(400)
    )
    report = step(store, sid, reply, prompt=PromptOptions(token_budget=100_000))
    assert report.outbox is not None
    text = report.outbox.read_text()
    assert text.count("--- end big.txt ---") == 400
    assert len(text) <= 100_000 * 4
    assert "--- big.txt ---\n4789 | line 4789\n" in text  # the last view, from line 4789


needs_fork = pytest.mark.skipif(not searching._CAN_FORK, reason="regex searches run in a fork")


@pytest.mark.slow  # real time: a time limit, X events, a stalled stream
@needs_fork
def test_the_searches_of_one_reply_share_a_time_limit(ws, monkeypatch):
    """Five regex bombs: each is stopped at its own limit, and once the reply's SEARCH time is
    spent, the rest are not run at all."""
    monkeypatch.setattr(searching, "SEARCH_REGEX_SECONDS", 1.0)
    monkeypatch.setattr(searching, "SEARCH_REPLY_SECONDS", 1.5)
    put(ws, "a.txt", "a" * 40 + "b\n")
    bombs = [Search(line=n, query="(a+)+$", regex=True) for n in range(1, 6)]
    reached = (
        "the SEARCH commands of this reply reached their 1.5 s; search again in the next reply"
    )
    assert headlines(run(ws, *bombs)) == [
        "[FAILED] SEARCH: The regular expression '(a+)+$' took longer than 1 s; simplify it",
        f"[FAILED] SEARCH: The regular expression '(a+)+$' was stopped: {reached}",
        *[f"[FAILED] SEARCH: Not run: {reached}"] * 3,
    ]


def test_replace_matching_is_linear_in_the_lines(ws):
    """60,000 identical SEARCH lines against a 200,000-line file of the same line: the places
    are found (and refused as ambiguous) by one linear pass, not a slice compare at each."""
    put(ws, "f.txt", "x\n" * 200_000)
    block = ReplaceBlock(line=2, search="x\n" * 60_000, replace="y\n")
    (result,) = headlines(run(ws, Replace(line=1, path="f.txt", blocks=[block])))
    assert "matches 140001 places" in result


@pytest.mark.slow
def test_undo_killed_at_random_instants_is_finished_by_the_next(tmp_path):
    """Undo of a turn of 150 file writes, killed at random instants (kill -9); the next undo
    finishes it: the workspace is the one before the turn, never a mix."""
    rng = random.Random(19)
    mid_undo = 0
    for attempt in range(12):
        store, sid = new_session(tmp_path / f"run{attempt}")
        before = snapshot(store.workspace)
        apply_reply(store, sid, Reply(BIG_TURN.encode(), "big.txt"), TurnOptions(shell=Shell()))
        process = agent(store, "undo", sid)
        deadline = time.monotonic() + 20
        while not store.journal_path(sid).exists() and process.poll() is None:
            assert time.monotonic() < deadline
        time.sleep(rng.uniform(0, 0.05))
        process.kill()
        process.communicate()
        mid_undo += store.journal_path(sid).exists()
        if store.journal_path(sid).exists():
            assert undo(store, sid).turns == [1]
        assert snapshot(store.workspace) == before
        assert store.load(sid).sequence_number == 1 and not store.journal_path(sid).exists()
    assert mid_undo >= 3, f"only {mid_undo} of 12 kills landed inside the undo"
