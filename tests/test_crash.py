"""Crash safety: kill -9 anywhere in a turn; recovery leaves it applied or not, never half.

Each case runs a real ``codingagent step`` process and kills it with SIGKILL, either at a named
point (``CODINGAGENT_CRASH_AT``, see :mod:`codingagent.transaction.crashpoints`) or after a random
delay.
Then it runs the recovery that ``resume``/``step`` run first, checks the workspace equals the
snapshot before or after the turn, finishes the session, and compares it with an uninterrupted
run.
"""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from turns import step

from codingagent.fsio import atomic_write, folder_syncs_grouped
from codingagent.records.store import SessionStore
from codingagent.sandbox.probe import probe
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import make_shell, start_session
from codingagent.session.recovery import recover
from codingagent.session.turn import TurnOptions
from codingagent.settings import load_settings
from codingagent.transaction.crashpoints import CRASH_ENV

REPLIES = [
    '[CREATE_FILE path="a.txt"]\none\n[/CREATE_FILE]\n'
    '[CREATE_FILE path="dir/b.txt"]\nbee\n[/CREATE_FILE]\n'
    '[CREATE_FILE path="script.sh"]\necho new\n[/CREATE_FILE]\n',
    '[EDIT_FILE path="a.txt" start_line="1" end_line="1"]\nONE\ntwo\n[/EDIT_FILE]\n'
    '[DELETE_FILE path="old.bin"]\n'
    '[CREATE_FILE path="d/e/f.txt"]\nf\n[/CREATE_FILE]\n'
    "[RUN_COMMAND]\necho ran\n[/RUN_COMMAND]\n",
    '[DELETE_FILE path="dir/b.txt"]\n'
    '[EDIT_FILE path="d/e/f.txt" start_line="2" end_line="1"]\ng\n[/EDIT_FILE]\n'
    "[RUN_COMMAND]\nsed -i s/new/changed/ script.sh && chmod 600 a.txt && rm -r d"
    " && mkdir -p gen/sub && echo g > gen/sub/g.txt\n[/RUN_COMMAND]\n"
    '[READ_FILE path="a.txt"]\n',
    "[DONE]\nfinished\n[/DONE]\n",
]
# Named points and how often each turn passes them (pre-images: files changed; results: commands;
# snapshot, ran, captured: once per RUN_COMMAND). Turn 3's command edits, chmods, deletes
# folders and creates files: a kill at ``ran`` is a kill after a command changed them.
RUN = {"snapshot": 1, "ran": 1, "captured": 1}
PASSES = [
    {"journal": 1, "preimage": 3, "result": 3, "history": 1, "outbox": 1, "state": 1},
    {"journal": 1, "preimage": 3, "result": 4, "history": 1, "outbox": 1, "state": 1, **RUN},
    {"journal": 1, "preimage": 5, "result": 4, "history": 1, "outbox": 1, "state": 1, **RUN},
    {"journal": 1, "result": 1, "history": 1, "state": 1},
]


def snapshot(folder: Path) -> dict:
    files = {
        p.relative_to(folder).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in folder.rglob("*")
        if p.is_file()
    }
    dirs = {p.relative_to(folder).as_posix() + "/": None for p in folder.rglob("*") if p.is_dir()}
    return files | dirs


def new_session(root: Path) -> tuple[SessionStore, str]:
    store = SessionStore(root)
    store.ensure_dirs()
    (store.workspace / "script.sh").write_text("echo old\n")
    os.chmod(store.workspace / "script.sh", 0o755)
    (store.workspace / "old.bin").write_bytes(bytes(range(256)))
    # The environment `codingagent step` finds, so that its prompts equal the in-process ones.
    shell = make_shell(load_settings(root), store)
    state, _ = start_session(store, "crash test", environment=lambda ws: probe(shell, ws))
    return store, state.session_id


def apply(store: SessionStore, sid: str, turn: int):
    return step(store, sid, REPLIES[turn], source=f"r{turn}.txt", shell=Shell())


def final_view(store: SessionStore, sid: str) -> tuple:
    """What must equal an uninterrupted run: workspace, state, results, outboxes, history."""
    state = store.load(sid)
    outboxes = {
        p.name.replace(sid, "SID"): p.read_text().replace(sid, "SID")
        for p in sorted(store.outbox.glob("*.txt"))
    }
    replies = [(f / "reply.txt").read_bytes() for f in store.turns(sid)]
    results = [(r.command, r.success, r.summary, r.output) for r in state.last_results]
    return (
        snapshot(store.workspace),
        (state.sequence_number, state.is_complete, state.summary, results),
        outboxes,
        replies,
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[list[dict], tuple]:
    """Snapshots before each turn and the final view of an uninterrupted run."""
    store, sid = new_session(tmp_path_factory.mktemp("reference"))
    snaps = [snapshot(store.workspace)]
    for turn in range(len(REPLIES)):
        apply(store, sid, turn)
        snaps.append(snapshot(store.workspace))
    return snaps, final_view(store, sid)


def step_process(store: SessionStore, sid: str, turn: int, crash_at: str | None):
    reply = store.root / f"r{turn}.txt"
    reply.write_text(REPLIES[turn])
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    if crash_at:
        env[CRASH_ENV] = crash_at
    return subprocess.Popen(
        [sys.executable, "-m", "codingagent", "step", sid, str(reply), "--root", str(store.root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )


def check_recovery_and_finish(store, sid, turn, snaps, reference_view) -> None:
    recover(store, sid, TurnOptions(shell=Shell()))
    assert snapshot(store.workspace) in (snaps[turn], snaps[turn + 1])
    if store.load(sid).sequence_number == turn + 1:  # the turn was not applied: apply it now
        apply(store, sid, turn)
    assert snapshot(store.workspace) == snaps[turn + 1]
    assert apply(store, sid, turn).skipped, "the same reply must never be applied twice"
    for later in range(turn + 1, len(REPLIES)):
        apply(store, sid, later)
    assert final_view(store, sid) == reference_view


KILL_POINTS = [
    (turn, f"{point}:{n}")
    for turn, passes in enumerate(PASSES)
    for point, count in passes.items()
    for n in range(1, count + 1)
]


@pytest.mark.slow
@pytest.mark.parametrize(("turn", "crash_at"), KILL_POINTS)
def test_kill_at_each_named_point(tmp_path, reference, turn, crash_at):
    snaps, reference_view = reference
    store, sid = new_session(tmp_path)
    for earlier in range(turn):
        apply(store, sid, earlier)
    process = step_process(store, sid, turn, crash_at)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL, stderr.decode()
    check_recovery_and_finish(store, sid, turn, snaps, reference_view)


BIG_TURN = "".join(
    f'[CREATE_FILE path="many/f{i:03d}.txt"]\n{i}\n[/CREATE_FILE]\n' for i in range(150)
)


@pytest.mark.slow
def test_kill_at_random_instants(tmp_path):
    """SIGKILL at random instants of a turn of 150 file writes; recovery is all or nothing.

    The kill waits for the journal (the turn has begun), then a random part of the turn's
    duration (~0.3 s here), so most kills land among the writes.
    """
    rng = random.Random(1234)
    mid_turn = 0
    for attempt in range(12):
        store, sid = new_session(tmp_path / f"run{attempt}")
        before = snapshot(store.workspace)
        reply = store.root / "big.txt"
        reply.write_text(BIG_TURN)
        command = [sys.executable, "-m", "codingagent", "step", sid, str(reply)]
        process = subprocess.Popen(
            [*command, "--root", str(store.root)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while not store.journal_path(sid).exists() and process.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.3))
        process.kill()
        process.wait()
        mid_turn += store.journal_path(sid).exists()
        recover(store, sid, TurnOptions(shell=Shell()))
        after = snapshot(store.workspace)
        files = {k for k in after if k.startswith("many/f")}
        assert after == before or len(files) == 150, f"half-applied turn: {len(files)} files"
        assert len(store.turns(sid)) == (0 if after == before else 1)
    assert mid_turn >= 3, f"only {mid_turn} of 12 kills landed inside the turn"


def open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_grouped_folder_syncs_write_every_file_and_keep_no_descriptor(tmp_path):
    """A turn defers each folder's fsync to the end of its block; the writes themselves are
    complete at once, and the folders held for the final fsync are released, also on error."""
    (tmp_path / "a").mkdir()
    before = open_descriptors()
    with folder_syncs_grouped():
        for i in range(3):
            atomic_write(tmp_path / "a" / f"f{i}.txt", f"{i}\n")
            atomic_write(tmp_path / f"g{i}.txt", b"x")
        assert (tmp_path / "a" / "f2.txt").read_text() == "2\n"
        assert len(open_descriptors() - before) == 2  # one per folder, however many writes
    assert open_descriptors() == before
    with pytest.raises(RuntimeError), folder_syncs_grouped():
        atomic_write(tmp_path / "h.txt", b"y")
        raise RuntimeError
    assert open_descriptors() == before
    assert (tmp_path / "h.txt").read_bytes() == b"y"
