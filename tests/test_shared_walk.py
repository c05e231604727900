"""One walk of the workspace a turn shares (issue 38, codingagent/workspace/tree.py): the
secret-file scan before a RUN_COMMAND and the next prompt's read the same walk, kept current
by the turn's own writes and by the command's committed layer, so what the turn made is seen
without walking again."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from turns import step

from codingagent.sandbox.probe import probe
from codingagent.sandbox.shell import Shell
from codingagent.secrecy.secret_files import (
    MAX_FILES,
    SKIP_DIRS,
    SOURCE_SUFFIXES,
    _source,
    secret_files,
)
from codingagent.session.lifecycle import start_session
from codingagent.transaction.capture import LAYER
from codingagent.transaction.store import SessionStore
from codingagent.workspace import Workspace
from codingagent.workspace.tree import Tree


def test_a_tree_is_walked_once_and_kept_current_by_what_it_is_told(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.txt").write_text("1")
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "m.js").write_text("m")
    tree = Tree(tmp_path, SKIP_DIRS, MAX_FILES)
    assert [rel for _, rel, _ in tree.stats()] == ["a/one.txt"]
    (tmp_path / "a" / "one.txt").write_text("longer")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "two.txt").write_text("2")
    (tmp_path / "node_modules" / "y.js").write_text("y")
    tree.touched(["a/one.txt", "b", "node_modules/y.js", "node_modules"])
    found = {rel: info.st_size for _, rel, info in tree.stats()}
    assert found == {"a/one.txt": 6, "b/two.txt": 1}  # skipped folders stay unseen
    os.unlink(tmp_path / "a" / "one.txt")
    tree.touched(["a"])
    assert [rel for _, rel, _ in tree.stats()] == ["b/two.txt"]
    assert tree.walks == 1
    (tmp_path / "c.txt").write_text("told nothing")
    tree.drop()
    assert [rel for _, rel, _ in tree.stats()] == ["b/two.txt", "c.txt"]
    assert tree.walks == 2


def test_the_walk_gives_the_secret_scan_what_its_own_walk_gives(tmp_path):
    (tmp_path / ".env").write_text("TOKEN=abc\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "id_rsa").write_text("key\n")
    (tmp_path / "src" / "m.py").write_text("x = 1\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / ".env").write_text("T=1\n")
    shared = Tree(tmp_path, SKIP_DIRS, MAX_FILES).stats()
    assert secret_files(tmp_path, files=shared) == secret_files(tmp_path)


def test_what_a_turn_made_is_in_the_next_prompts_secret_files(tmp_path):
    """The walk read before the command is brought up to date by the command's layer (or
    walked again after a command that wrote straight to the workspace) and by file commands,
    so the next prompt's Environment names the secret files the turn left."""
    store = SessionStore(tmp_path)
    store.ensure_dirs()
    (store.workspace / ".env").write_text("OLD=1\n")
    (store.workspace / "keep.txt").write_text("k\n")
    shell = Shell(timeout=10, sandbox="auto")
    state, _ = start_session(store, "task", environment=lambda ws: probe(shell, ws))
    overlay = shell.layer_problem(store.workspace, store.sessions / state.session_id / LAYER)
    reply = (
        '[DELETE_FILE path=".env"]\n'
        "[RUN_COMMAND]\nmkdir conf && echo 'KEY=2' > conf/.env.prod && rm keep.txt\n"
        "[/RUN_COMMAND]\n"
        '[CREATE_FILE path="deploy.pem"]\nnot really\n[/CREATE_FILE]\n'
    )
    report = step(store, state.session_id, reply, shell=shell)
    assert all(result.success for result in report.outcome.results), report.outcome.results
    environment = store.load(state.session_id).environment
    assert environment is not None
    assert environment.secret_files == ["conf/.env.prod", "deploy.pem"]
    # the same as a walk of its own finds now
    assert secret_files(Workspace(store.workspace).root).hidden == ("conf/.env.prod", "deploy.pem")
    assert overlay is None or not (store.sessions / state.session_id / LAYER).exists()


def test_a_workspace_without_a_turn_has_no_shared_walk(tmp_path: Path):
    assert Workspace(tmp_path).file_stats() is None  # readers walk for themselves


@given(st.text(alphabet=st.sampled_from("ab./PYmdMD"), max_size=12))
def test_the_quick_suffix_test_agrees_with_splitext(name):
    expected = os.path.splitext(name)[1].lower() in SOURCE_SUFFIXES
    assert _source(name) == expected
