"""One walk of the workspace a turn shares (issue 38, codingagent/workspace/tree.py): the
secret-file scan before a RUN_COMMAND and the next prompt's read the same walk, kept current
by the turn's own writes and by the command's committed layer, so what the turn made is seen
without walking again."""

from __future__ import annotations

import fnmatch
import os
import shutil

from hypothesis import given
from hypothesis import strategies as st
from turns import step

from codingagent.records.store import SessionStore
from codingagent.sandbox.probe import probe
from codingagent.sandbox.shell import Shell
from codingagent.secrecy.secret_files import (
    MAX_FILES,
    NAME_PATTERNS,
    SKIP_DIRS,
    SOURCE_SUFFIXES,
    _named_secret,
    _source,
    secret_files,
)
from codingagent.session.lifecycle import start_session
from codingagent.transaction.capture import LAYER
from codingagent.workspace import Workspace
from codingagent.workspace.listing import SKIPPED_DIRS, UNSIZED
from codingagent.workspace.tree import NEVER_READ, STATED, UNREAD_IF_IGNORED, Tree


def test_a_tree_is_walked_once_and_kept_current_by_what_it_is_told(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.txt").write_text("1")
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "m.js").write_text("m")
    tree = Workspace(tmp_path).tree
    assert [rel for _, rel, _ in tree.stats()] == ["a/one.txt"]
    first = tree.version
    (tmp_path / "a" / "one.txt").write_text("longer")
    (tmp_path / "b" / "c").mkdir(parents=True)
    (tmp_path / "b" / "c" / "two.txt").write_text("2")
    (tmp_path / "node_modules" / "y.js").write_text("y")
    tree.touched(["a/one.txt", "b/c/two.txt", "node_modules/y.js", "node_modules"])
    assert tree.version != first
    found = {rel: info.st_size for _, rel, info in tree.stats()}
    assert found == {"a/one.txt": 6, "b/c/two.txt": 1}  # skipped folders stay unseen
    os.unlink(tmp_path / "a" / "one.txt")
    tree.touched(["a"])
    assert [rel for _, rel, _ in tree.stats()] == ["b/c/two.txt"]
    assert tree.walks == 1
    (tmp_path / "c.txt").write_text("told nothing")
    tree.drop()
    assert sorted(rel for _, rel, _ in tree.stats()) == ["b/c/two.txt", "c.txt"]
    assert tree.walks == 2


def test_the_walk_gives_the_secret_scan_what_its_own_walk_gives(tmp_path):
    (tmp_path / ".env").write_text("TOKEN=abc\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "id_rsa").write_text("key\n")
    (tmp_path / "src" / "m.py").write_text("x = 1\n")
    for skipped in (".venv", "target", ".cache"):  # never read; build output: not scanned
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / ".env").write_text("T=1\n")
    tree = Workspace(tmp_path).tree
    shared = secret_files(tmp_path, files=tree.stats(SKIP_DIRS))
    assert shared == secret_files(tmp_path)
    assert shared.hidden == (".env", "src/id_rsa")


def test_the_readers_share_one_walk_and_one_scan_a_version(tmp_path):
    """The listing and the secret scan of a turn read one walk; asked again for the same
    version of it, the scan gives its answer without looking at a file."""
    (tmp_path / ".env").write_text("TOKEN=abc\n")
    ws = Workspace(tmp_path)
    ws.list_files()
    tree = ws.tree
    found = secret_files(ws.root, (), None, tree.stats(SKIP_DIRS), tree.version)
    ws.list_files()
    assert secret_files(ws.root, (), None, iter(()), tree.version) is found  # not looked at
    assert tree.walks == 1
    ws.write_text("deploy.pem", "x\n")  # a write: a new version, the new file seen
    again = secret_files(ws.root, (), None, tree.stats(SKIP_DIRS), tree.version)
    assert again.hidden == (".env", "deploy.pem")
    assert tree.walks == 1


def test_the_walk_keeps_the_names_past_its_limit_and_the_listing_shows_them(tmp_path):
    for i in range(6):
        (tmp_path / f"f{i}.txt").write_text("x" * i)
    ws = Workspace(tmp_path)
    ws.tree = Tree(ws.tree._guard, limit=4)
    assert sorted(rel for _, rel, _ in ws.tree.stats()) == [f"f{i}.txt" for i in range(4)]
    listing = ws.list_files(limit=5)
    assert listing.entries == [*((f"f{i}.txt", i) for i in range(4)), ("f4.txt", UNSIZED)]
    assert listing.omitted == 1


def test_the_walk_never_follows_a_symlink(tmp_path):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "secret.txt").write_text("s")
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    (ws_dir / "link").symlink_to(outside)
    tree = Workspace(ws_dir).tree
    assert list(tree.stats()) == []
    tree.touched(["link", "link/deep", "link/deep/secret.txt"])
    assert list(tree.stats()) == []
    assert tree.walked() == {"": {}}


def test_the_folders_the_walk_leaves_out_are_those_no_reader_wants():
    """The walk skips only what both the listing and the secret scan skip; each reader
    leaves out the rest of its own (a test of the sets, so that they cannot drift apart)."""
    assert NEVER_READ | UNREAD_IF_IGNORED == SKIP_DIRS
    assert SKIPPED_DIRS | {".git"} >= NEVER_READ
    assert STATED == MAX_FILES


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["write", "delete", "mkdir", "rmtree", "rename", "ignore"]),
        st.sampled_from(["a", "b", "a/c", "a/c/d", "b/e", "node_modules", "target"]),
        st.sampled_from(["x.txt", "y.py", ".env"]),
    ),
    max_size=12,
)


@given(_OPS)
def test_a_tree_told_of_every_change_equals_a_new_walk(tmp_path_factory, ops):
    """Whatever files and folders change, a tree told the paths that changed holds what a
    walk made afterwards holds (the names, the sizes and the ignore rules' verdicts)."""
    root = tmp_path_factory.mktemp("ws")
    (root / "a").mkdir()
    (root / "a" / "x.txt").write_text("x")
    ws = Workspace(root)
    tree = ws.tree
    tree.walked()
    for op, folder, name in ops:
        place = root / folder
        if op == "write":
            place.mkdir(parents=True, exist_ok=True)
            (place / name).write_text(folder + name)
            told = [f"{folder}/{name}"]
        elif op == "ignore":
            (root / ".gitignore").write_text(f"{folder}/\n")
            told = [".gitignore"]
        elif op == "delete" and (place / name).is_file():
            (place / name).unlink()
            told = [f"{folder}/{name}"]
        elif op == "mkdir":
            (place / "new").mkdir(parents=True, exist_ok=True)
            (place / "new" / name).write_text("n")
            told = [folder]
        elif op == "rmtree" and place.is_dir():
            shutil.rmtree(place)
            told = [folder]
        elif op == "rename" and place.is_dir() and not (root / "moved").exists():
            place.rename(root / "moved")
            told = [folder, "moved"]
        else:
            continue
        tree.touched(told)
        fresh = Workspace(root)
        assert _seen(tree) == _seen(fresh.tree)
        assert ws.list_files() == fresh.list_files()


def _seen(tree: Tree) -> dict[str, int]:
    return {rel: info.st_size for _, rel, info in tree.stats()}


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


@given(st.text(alphabet=st.sampled_from("ab./PYmdMD"), max_size=12))
def test_the_quick_suffix_test_agrees_with_splitext(name):
    expected = os.path.splitext(name)[1].lower() in SOURCE_SUFFIXES
    assert _source(name) == expected


@given(
    st.text(alphabet=st.sampled_from("._-/aeEnNvpmkyidrsc"), max_size=14)
    | st.sampled_from([".ENV", "x/.env.local", "Id_RSA.pub", "a.PEM", "credentials", "k.py"])
)
def test_the_quick_name_test_agrees_with_the_patterns(rel):
    """Secret files by name: the exact names, prefixes and suffixes the patterns are split
    into say what fnmatch says of each pattern, in any case (source code apart)."""
    name = rel.rpartition("/")[2].lower()
    expected = any(fnmatch.fnmatchcase(name, pattern) for pattern in NAME_PATTERNS)
    assert _named_secret(rel) == (expected and not _source(name))
