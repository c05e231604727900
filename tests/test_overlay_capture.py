"""A command run on an overlay of the workspace (issue 38, docs/undo.md): under real bubblewrap,
on a big tree, what it changed (deletions, a renamed folder, a folder replaced whole, modes,
ignored folders) lands in the workspace exactly as if it had run there, the result names it,
undo puts it all back, and a kill at any point of the turn leaves no mixed state."""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_crash import snapshot
from test_transactions import agent
from turns import step

from codingagent.frontends.cli import main
from codingagent.records.history import TurnRecord
from codingagent.records.store import SessionStore
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.transaction.capture import LAYER
from codingagent.transaction.undo import undo
from codingagent.workspace.layer import discard

FILES = 3000  # 30 folders of 100

# Edits, a chmod, deletions, a folder removed, one renamed, one replaced whole (rm -rf and
# made again: an opaque folder), a file copied over one of its old names, new folders, an
# ignored folder filled, a touch that changes no byte, a file made a folder.
SCRIPT = (
    "sed -i s/v0/v1/ d000/f00000.txt && chmod 700 d001/f00100.txt && rm d002/f00200.txt"
    " && rm -r d003 && mv d004 renamed && rm -rf d005 && mkdir d005"
    " && echo fresh > d005/only.txt && cp d006/f00600.txt d005/f00500.txt"
    " && mkdir -p gen/deep && echo new > gen/deep/new.txt && mkdir -p build/out"
    " && echo o > build/out/x.o && touch d007/f00700.txt"
    " && rm d008/f00800.txt && mkdir d008/f00800.txt && echo in > d008/f00800.txt/inner"
)


def make_tree(root: Path, files: int = FILES) -> None:
    for i in range(files):
        folder = root / f"d{i // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:05d}.txt").write_text(f"v0\nfile {i}\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "old.o").write_text("old")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")


def expected_after(tmp_path: Path, before: Path) -> dict:
    """The tree as the command leaves it when run straight on a copy: the oracle."""
    copy = tmp_path / "oracle"
    shutil.copytree(before, copy, symlinks=True)
    subprocess.run(["sh", "-c", SCRIPT], cwd=copy, check=True)
    return snapshot(copy)


def tracked(tree: dict) -> dict:
    """What undo keeps: everything but the ignored build/ and git's folder."""
    return {p: v for p, v in tree.items() if not p.startswith(("build/", ".git/"))}


def overlay_store(tmp_path: Path, files: int) -> SessionStore:
    store = SessionStore(tmp_path / "run")
    store.ensure_dirs()
    problem = Shell(sandbox="auto").layer_problem(store.workspace, store.sessions / LAYER)
    if problem is not None:
        pytest.skip(f"no overlay here: {problem}")
    make_tree(store.workspace, files)
    return store


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return overlay_store(tmp_path, FILES)


@pytest.fixture
def small_store(tmp_path) -> SessionStore:
    """The tree the script needs (folders d000 to d008), no bigger: for the kill tests, whose
    point is each crash point, not the size."""
    return overlay_store(tmp_path, 900)


@pytest.mark.slow  # a big tree
def test_a_big_trees_changes_are_committed_named_and_undone(store, tmp_path):
    sid = start_session(store, "task")[0].session_id
    before = snapshot(store.workspace)
    oracle = expected_after(tmp_path, store.workspace)
    report = step(
        store, sid, f"[RUN_COMMAND]\n{SCRIPT}\n[/RUN_COMMAND]\n", shell=Shell(sandbox="bwrap")
    )
    said = report.outcome.results[-1].summary

    assert snapshot(store.workspace) == oracle  # as if it had run on the workspace itself
    marks = TurnRecord(store.turn_dir(sid, 1)).preimages().marks
    assert {"kind": "command", "layer": LAYER} in marks  # it ran on an overlay
    assert not (store.sessions / sid / LAYER).exists()  # the layer is gone once committed
    # 100 renamed + d005/only.txt + gen/deep/new.txt + d008/f00800.txt/inner
    assert "it created 103 files (d005/only.txt, d008/f00800.txt/inner, gen/deep/new.txt," in said
    assert "changed 3 files;" in said  # five names in all, the first created ones
    kept = [e["path"] for e in TurnRecord(store.turn_dir(sid, 1)).preimages().entries]
    assert {"d000/f00000.txt", "d001/f00100.txt", "d005/f00500.txt", "d008/f00800.txt"} <= set(kept)
    # d002/f00200 + d003 (100) + d004 (100) + d005 but the one copied back (99) + d008/f00800
    assert "deleted 301 files" in said
    assert said.endswith("changed in ignored folders, not kept for undo: build/"), said
    assert "d007/f00700.txt" not in kept  # touched: no byte changed

    undone = undo(store, sid)
    assert tracked(snapshot(store.workspace)) == tracked(before)
    assert undone.untracked == ["build/"]
    assert (store.workspace / "build" / "out" / "x.o").exists()  # by rule: not put back


@pytest.mark.slow  # real time: a time limit, a kill or a poll
def test_a_command_stopped_by_its_time_limit_keeps_what_it_did(store):
    """A timeout is not a Ctrl-C: what the command changed is committed and named."""
    sid = start_session(store, "task")[0].session_id
    script = "echo late > d000/f00000.txt && rm -r d001 && sleep 30"
    report = step(
        store, sid, f"[RUN_COMMAND]\n{script}\n[/RUN_COMMAND]\n", shell=Shell(1, sandbox="bwrap")
    )
    said = report.outcome.results[-1].summary
    assert "timed out" in said and "changed 1 file (d000/f00000.txt)" in said, said
    assert (store.workspace / "d000" / "f00000.txt").read_text() == "late\n"
    assert not (store.workspace / "d001").exists()
    undo(store, sid)
    assert (store.workspace / "d001" / "f00100.txt").read_text() == "v0\nfile 100\n"


COMMIT_STEPS = 12  # the commit's steps: removals and moves, one crash point each


@pytest.mark.parametrize(
    "crash_at",
    [
        pytest.param("snapshot:1", marks=pytest.mark.slow),
        pytest.param("ran:1", marks=pytest.mark.slow),
        pytest.param("preimage:3", marks=pytest.mark.slow),
        pytest.param("captured:1", marks=pytest.mark.slow),
        "committed:5",
        pytest.param(f"committed:{COMMIT_STEPS}", marks=pytest.mark.slow),
    ],
)
def test_a_kill_during_a_command_turn_leaves_before_or_after(small_store, tmp_path, crash_at):
    """SIGKILL at each point of a command turn on an overlay, the commit half done included:
    recovery puts the workspace back and applies the reply again, so it ends exactly as the
    command leaves it, and undo gets the tree before."""
    sid = start_session(small_store, "task")[0].session_id
    before = snapshot(small_store.workspace)
    oracle = expected_after(tmp_path, small_store.workspace)
    reply = small_store.root / "r.txt"
    reply.write_text(f"[RUN_COMMAND]\n{SCRIPT}\n[/RUN_COMMAND]\n")
    process = agent(small_store, "step", sid, str(reply), crash_at=crash_at)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL, stderr.decode()
    if not crash_at.startswith("committed"):  # nothing reached the workspace yet
        assert tracked(snapshot(small_store.workspace)) == tracked(before)
    resumed = agent(small_store, "resume", sid, "--no-watch")
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr.decode()
    assert small_store.load(sid).sequence_number == 2
    assert snapshot(small_store.workspace) == oracle
    assert not (small_store.sessions / sid / LAYER).exists()
    undo(small_store, sid)
    assert tracked(snapshot(small_store.workspace)) == tracked(before)


def test_the_layer_needs_the_sessions_folder_outside_the_workspace(tmp_path):
    """Where no overlay can be had, the reason is said (doctor shows it) and stat scans keep
    the command's changes instead (tests/test_command_undo.py, 'scan')."""
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    shell = Shell(sandbox="auto")
    inside = shell.layer_problem(ws, ws / "sessions" / LAYER)
    assert inside is not None
    if shell.sandbox_layer != "none":
        assert (
            inside == "the session's folder is inside the workspace (the layer must be outside it)"
        )
    assert Shell(sandbox="none").layer_problem(ws, tmp_path / LAYER) == "no OS sandbox"


def test_doctor_says_how_a_commands_changes_are_kept(tmp_path, monkeypatch):
    store = SessionStore(tmp_path)
    store.ensure_dirs()
    overlay = Shell(sandbox="auto").layer_problem(store.workspace, store.sessions / LAYER)
    said = CliRunner().invoke(main, ["doctor", "--root", str(tmp_path)])
    assert said.exit_code == 0, said.output
    [row] = [line for line in said.stdout.splitlines() if "changes kept by" in line]
    if overlay is None:
        assert row.split("  ")[-1].strip().startswith("overlay: a command writes to a layer")
    else:
        assert f"stat scans and a shadow copy of the workspace (no overlay: {overlay})" in row
    monkeypatch.setenv("CODINGAGENT_SANDBOX", "none")
    said = CliRunner().invoke(main, ["doctor", "--root", str(tmp_path)])
    assert (
        "stat scans and a shadow copy of the workspace (no overlay: no OS sandbox)" in said.stdout
    )


@pytest.mark.slow  # a big tree
def test_folders_nested_a_thousand_deep_are_read_committed_and_undone(store):
    """The layer is read without recursion: a command may nest folders thousands deep."""
    try:
        sid = start_session(store, "task")[0].session_id
        before = snapshot(store.workspace)
        deep = "/".join(["n"] * 1200)
        shell = Shell(sandbox="bwrap")
        made = step(
            store,
            sid,
            f"[RUN_COMMAND]\nmkdir -p {deep} && echo 1 > {deep}/f\n[/RUN_COMMAND]\n",
            shell=shell,
        )
        assert "it created 1 file" in made.outcome.results[-1].summary
        changed = step(
            store, sid, f"[RUN_COMMAND]\necho 2 > {deep}/f\n[/RUN_COMMAND]\n", shell=shell
        )
        assert "it changed 1 file" in changed.outcome.results[-1].summary
        assert (store.workspace / deep / "f").read_text() == "2\n"
        undo(store, sid, turns=2)
        assert snapshot(store.workspace) == before
    finally:  # pytest removes old temporary folders with shutil.rmtree, which recurses
        discard(store.workspace / "n")
        discard(store.root / "oracle")
