"""What a RUN_COMMAND changes is kept like a file command's changes (issue 28, docs/undo.md):
undo puts it back exactly, the result names it, a Ctrl-C rolls it back, and the limits (the
turn's cap, ignored folders) are said, never silent.  Each test runs both ways a command's
changes are captured (issue 38): by stat scans (no OS sandbox) and on an overlay (bubblewrap),
where this machine can mount one."""

from __future__ import annotations

import os
import re
import signal
import stat
from pathlib import Path

import pytest
from test_crash import snapshot
from test_transactions import agent
from turns import step as apply_text

from codingagent.records.changeset import session_diffs
from codingagent.records.history import TurnRecord
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.state import SessionError
from codingagent.transaction.capture import LAYER
from codingagent.transaction.shadow import SHADOW
from codingagent.transaction.undo import undo
from codingagent.workspace import Workspace
from codingagent.workspace.snapshot import RACY_NS, Scan, moved

CAPTURES = {"scan": "none", "overlay": "bwrap"}  # the way, and the sandbox that gives it
_sandbox = ["none"]  # the sandbox of the current test's turns (fixture ``capture``)


@pytest.fixture(params=sorted(CAPTURES))
def capture(request, tmp_path, monkeypatch) -> str:
    sandbox = CAPTURES[request.param]
    monkeypatch.setenv("CODINGAGENT_SANDBOX", sandbox)  # for the agent processes a test starts
    if sandbox != "none":
        SessionStore(tmp_path).ensure_dirs()
        store = SessionStore(tmp_path)
        problem = Shell(sandbox="auto").layer_problem(store.workspace, store.sessions / "layer")
        if problem is not None:
            pytest.skip(f"no overlay here: {problem}")
    _sandbox[0] = sandbox
    return request.param


def step(store: SessionStore, sid: str, text: str, **options):
    # .env.local is a secret file: allowed, so that commands may write it under bubblewrap too
    shell = Shell(timeout=10, sandbox=_sandbox[0], secret_files_allow=[".env.local"])
    options.setdefault("shell", shell)
    return apply_text(store, sid, text, **options)


@pytest.fixture
def store(tmp_path, capture) -> SessionStore:
    store = SessionStore(tmp_path)
    store.ensure_dirs()
    ws = store.workspace
    (ws / "a.py").write_text("x = 1\n")
    (ws / "gone.txt").write_text("bye\n")
    (ws / "run.sh").write_text("echo hi\n")
    (ws / "pkg").mkdir()
    (ws / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    (ws / "pkg" / "empty").mkdir()
    (ws / ".gitignore").write_text("build/\n.env.local\n")
    (ws / ".env.local").write_text("TOKEN=1\n")
    return store


@pytest.fixture
def sid(store) -> str:
    state, _ = start_session(store, "task")
    return state.session_id


def command(text: str) -> str:
    return f"[RUN_COMMAND]\n{text}\n[/RUN_COMMAND]\n"


def summary(report) -> str:
    return report.outcome.results[-1].summary


def test_a_command_that_edits_deletes_creates_and_chmods_is_undone_exactly(store, sid):
    before = snapshot(store.workspace)
    report = step(
        store,
        sid,
        command(
            "sed -i s/1/2/ a.py && rm gone.txt && chmod 700 run.sh && rm -r pkg"
            " && mkdir -p gen/deep/er && echo new > gen/deep/new.txt && echo T=2 > .env.local"
        ),
    )
    said = summary(report)
    assert said.startswith("Ran 'sed -i s/1/2/ a.py && rm gone.txt")
    assert "it created 1 file (gen/deep/new.txt)" in said
    assert "changed 3 files (.env.local, a.py, run.sh)" in said
    assert "deleted 2 files (gone.txt and 1 more)" in said  # five names in all
    assert stat.S_IMODE((store.workspace / "run.sh").stat().st_mode) == 0o700
    assert not (store.workspace / "pkg").exists()

    undone = undo(store, sid)
    assert snapshot(store.workspace) == before  # contents, modes, and folders, empty ones too
    assert sorted(undone.restored) == [
        ".env.local",
        "a.py",
        "gen/deep/new.txt",
        "gone.txt",
        "pkg/mod.py",
        "run.sh",
    ]
    assert undone.problems == [] and undone.untracked == []


def test_the_result_names_the_first_few_files_and_counts_the_rest(store, sid):
    report = step(store, sid, command("for i in $(seq 10 29); do echo $i > f$i.txt; done"))
    said = summary(report)
    assert "it created 20 files (f10.txt, f11.txt, f12.txt, f13.txt, f14.txt and 15 more)" in said
    report = step(store, sid, command("rm f1*.txt; echo x >> a.py"))
    assert summary(report).endswith(
        "it changed 1 file (a.py); deleted 10 files (f10.txt, f11.txt, f12.txt, f13.txt and 6 more)"
    )
    quiet = step(store, sid, command("true"))
    assert summary(quiet) == "Ran 'true' (exit code 0)"


def test_a_failing_command_names_what_it_changed_too(store, sid):
    report = step(store, sid, command("echo half > a.py; exit 3"))
    result = report.outcome.results[-1]
    assert not result.success
    assert (
        result.summary == "Ran 'echo half > a.py; exit 3' (exit code 3); it changed 1 file (a.py)"
    )
    undo(store, sid)
    assert (store.workspace / "a.py").read_text() == "x = 1\n"


def test_a_file_the_turn_wrote_before_its_command_comes_back_as_before_the_turn(store, sid):
    step(
        store,
        sid,
        '[CREATE_FILE path="a.py"]\nx = 5\n[/CREATE_FILE]\n'
        '[CREATE_FILE path="new.py"]\ny = 1\n[/CREATE_FILE]\n'
        + command("printf 'x = 6\\n' > a.py; rm new.py; touch later.txt"),
    )
    assert (store.workspace / "a.py").read_text() == "x = 6\n"
    undo(store, sid)
    assert (store.workspace / "a.py").read_text() == "x = 1\n"
    assert not (store.workspace / "new.py").exists()
    assert not (store.workspace / "later.txt").exists()


def test_a_same_size_rewrite_right_after_a_write_is_not_missed(store, sid):
    """A file rewritten in place, same size, right after the turn wrote it: seen every time
    (kernels with coarse file times give it the same stat data: see the next test)."""
    reply = '[CREATE_FILE path="t.txt"]\naaaa\n[/CREATE_FILE]\n' + command(
        "printf 'bbbb\\n' > t.txt"
    )
    for _ in range(3):
        report = step(store, sid, reply, force=True)
        assert "changed 1 file (t.txt)" in summary(report)
        undo(store, sid)
        assert not (store.workspace / "t.txt").exists()


def test_equal_stat_data_close_to_the_snapshot_is_hashed_again():
    """Git's "racy" rule: a file whose time is within RACY_NS of the snapshot may have changed
    again within the clock's tick, so it is compared by content, not by its stat data."""
    key = (7, 5, 1_000_000_000, 1_000_000_000, 0o100644)
    before = Scan(files={"t.txt": key, "old.txt": key}, started_ns=1_000_000_000 + RACY_NS // 2)
    after = Scan(files={"t.txt": key, "old.txt": key})
    assert moved(before, after, racy_since=before.started_ns - RACY_NS).maybe_changed == [
        "t.txt",
        "old.txt",
    ]
    assert moved(before, after, racy_since=key[2] + 1).maybe_changed == []


def test_an_edit_to_gitignore_changes_no_verdict_of_its_own_command(store, sid):
    before = snapshot(store.workspace)
    report = step(store, sid, command("echo pkg/ >> .gitignore && echo 'x = 0' > pkg/mod.py"))
    assert "changed 2 files (.gitignore, pkg/mod.py)" in summary(report)
    undo(store, sid)
    assert snapshot(store.workspace) == before


def test_ignored_folders_are_not_kept_and_undo_says_so(store, sid):
    (store.workspace / "build").mkdir()
    (store.workspace / "build" / "old.o").write_text("old")
    report = step(
        store,
        sid,
        command("rm build/old.o && mkdir node_modules && touch node_modules/x && echo y > a.py"),
    )
    said = summary(report)
    assert "changed 1 file (a.py)" in said
    assert said.endswith("changed in ignored folders, not kept for undo: build/, node_modules/"), (
        said
    )
    undone = undo(store, sid)
    assert undone.untracked == ["build/", "node_modules/"] and undone.problems == []
    assert (store.workspace / "a.py").read_text() == "x = 1\n"
    assert (store.workspace / "node_modules" / "x").exists()  # the rule: not put back
    assert not (store.workspace / "build" / "old.o").exists()


def test_a_change_over_the_cap_is_named_and_undo_needs_force_for_the_rest(store, sid):
    (store.workspace / "big.bin").write_bytes(os.urandom(30_000))
    (store.workspace / "mid.bin").write_bytes(os.urandom(8_000))
    report = step(
        store,
        sid,
        command("echo more >> big.bin; echo more >> mid.bin; echo y > a.py"),
        preimage_cap=20_000,
    )
    said = summary(report)
    assert "changed 3 files (a.py, big.bin, mid.bin)" in said
    scan, overlay = "30,000 bytes: larger than a turn keeps", "over the 20,000 bytes a turn keeps"
    assert re.search(rf"not kept for undo: big.bin \(({scan}|{overlay})", said), said
    with pytest.raises(
        SessionError, match=re.escape("cannot restore 'big.bin' (changed by a command")
    ):
        undo(store, sid)
    undone = undo(store, sid, force=True)
    assert (store.workspace / "a.py").read_text() == "x = 1\n"
    assert (store.workspace / "mid.bin").stat().st_size == 8_000
    assert (store.workspace / "big.bin").stat().st_size == 30_005  # said, not put back
    assert any("big.bin" in problem for problem in undone.problems)


def test_several_changes_passing_the_cap_together_keep_what_fits(store, sid):
    for name in ("one.bin", "two.bin"):
        (store.workspace / name).write_bytes(os.urandom(12_000))
    report = step(store, sid, command("echo >> one.bin; echo >> two.bin"), preimage_cap=20_000)
    assert "not kept for undo: two.bin (over the 20,000 bytes a turn keeps" in summary(report)


def test_undo_refuses_over_a_hand_edit_after_a_command_turn(store, sid):
    step(store, sid, command("echo y > a.py"))
    (store.workspace / "a.py").write_text("by hand\n")
    with pytest.raises(SessionError, match=re.escape("a.py changed since the agent wrote it")):
        undo(store, sid)
    undo(store, sid, force=True)
    assert (store.workspace / "a.py").read_text() == "x = 1\n"


def test_hand_edits_between_turns_are_kept_in_the_snapshot(store, sid, capture):
    """A hand edit between two command turns is what undoing the second one puts back: the
    shadow copy rereads only what moved; an overlay reads the workspace as the command found
    it, and keeps no copy."""
    step(store, sid, command("echo one > a.py"))
    (store.workspace / "a.py").write_text("by hand\n")
    step(store, sid, command("echo two > a.py"))
    undo(store, sid)
    assert (store.workspace / "a.py").read_text() == "by hand\n"
    objects = store.sessions / sid / SHADOW / "objects"
    if capture == "overlay":
        assert not objects.exists() and not (store.sessions / sid / LAYER).exists()
    else:
        assert len(list(objects.iterdir())) == len({p.read_bytes() for p in tracked(store)})


def tracked(store: SessionStore) -> list[Path]:
    return [
        p
        for p in store.workspace.rglob("*")
        if p.is_file() and "build" not in p.parts and ".git" not in p.parts
    ]


def test_two_command_turns_undone_together(store, sid):
    before = snapshot(store.workspace)
    step(store, sid, command("mkdir out && echo 1 > out/r.txt && chmod 600 a.py"))
    step(store, sid, command("echo 2 >> out/r.txt && rm a.py"))
    undo(store, sid, turns=2)
    assert snapshot(store.workspace) == before


def test_the_page_shows_a_commands_changes_marked_as_made_by_it(store, sid):
    step(
        store,
        sid,
        '[CREATE_FILE path="own.txt"]\nmine\n[/CREATE_FILE]\n' + command("sed -i s/1/3/ a.py"),
    )
    [diffs] = session_diffs(Workspace(store.workspace), store.turns(sid))
    by_path = {diff.path: diff for diff in diffs}
    assert by_path["own.txt"].by == ""
    assert by_path["a.py"].by == "RUN_COMMAND 'sed -i s/1/3/ a.py'"
    assert by_path["a.py"].change == "changed"
    assert "-x = 1" in by_path["a.py"].diff.splitlines()
    assert "+x = 3" in by_path["a.py"].diff.splitlines()


@pytest.mark.slow  # real time: a time limit, a kill or a poll
def test_ctrl_c_during_a_command_puts_its_changes_back(store, sid):
    before = snapshot(store.workspace)
    reply = store.root / "r.txt"
    reply.write_text(
        '[CREATE_FILE path="a.py"]\nx = 9\n[/CREATE_FILE]\n'
        + command("echo z > a.py; rm -r pkg; mkdir gen; touch gen/started; sleep 30")
    )
    process = agent(store, "step", sid, str(reply))
    layer = store.sessions / sid / LAYER / "upper"  # where an overlay's command writes
    while not any((top / "gen" / "started").exists() for top in (store.workspace, layer)):
        assert process.poll() is None, process.stderr.read().decode()  # type: ignore[union-attr]
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr.decode()
    assert snapshot(store.workspace) == before
    assert not layer.parent.exists()  # an overlay's layer is thrown away whole
    assert not store.journal_path(sid).exists() and store.load(sid).sequence_number == 1


@pytest.mark.slow
@pytest.mark.parametrize("crash_at", ["snapshot:1", "ran:1", "preimage:2", "captured:1"])
def test_kill_in_a_command_then_recovery_leaves_before_or_after(store, sid, crash_at):
    """SIGKILL at each point of a command turn; recovery applies it afresh, never mixed."""
    before = snapshot(store.workspace)
    reply = store.root / "r.txt"
    reply.write_text(command("sed -i s/1/2/ a.py && rm -r pkg && mkdir -p g/h && touch g/h/i"))
    process = agent(store, "step", sid, str(reply), crash_at=crash_at)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    record = TurnRecord(store.turn_dir(sid, 1))
    assert record.preimages().open_command() is not None or crash_at == "captured:1"
    resumed = agent(store, "resume", sid, "--no-watch")
    _, stderr = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, stderr.decode()
    assert store.load(sid).sequence_number == 2
    after = snapshot(store.workspace)
    assert after["a.py"] == (b"x = 2\n", 0o644) and "pkg/" not in after and "g/h/i" in after
    undo(store, sid)
    assert snapshot(store.workspace) == before
