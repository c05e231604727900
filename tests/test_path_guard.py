"""The path guard: which paths the LLM may use, and where they lead."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling import examples

from codingagent.workspace import PathRejected, Workspace
from codingagent.workspace.pathguard import BACKSLASH, EMPTY, FOLDER, NUL, OUTSIDE, STREAM


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every path under ``folder`` (relative) with file contents, to prove nothing changed."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(folder.rglob("*"))
    }


def rejected(ws: Workspace, rel: str, for_write: bool = False) -> str:
    with pytest.raises(PathRejected) as info:
        ws.resolve(rel, for_write=for_write)
    return str(info.value)


@pytest.mark.parametrize(
    ("rel", "reason"),
    [
        ("", EMPTY),
        ("../ws2/x", OUTSIDE),
        ("..", OUTSIDE),
        ("../outside/secret.txt", OUTSIDE),
        ("a/../../outside/secret.txt", OUTSIDE),
        ("/etc/passwd", OUTSIDE),
        ("a\\b.txt", BACKSLASH),
        ("..\\outside\\secret.txt", BACKSLASH),
        ("C:x", OUTSIDE),
        ("c:/windows/x", OUTSIDE),
        ("notes:v2.txt", STREAM),
        ("\\\\srv\\s", BACKSLASH),
        ("a\0b", NUL),
    ],
)
def test_guard_rejects_paths_outside(layout: tuple[Path, Path], rel: str, reason: str) -> None:
    ws_dir, _ = layout
    assert rejected(Workspace(ws_dir), rel) == reason


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("a.txt", "a.txt"),
        ("src/main.py", "src/main.py"),
        ("./src//main.py", "src/main.py"),
        ("a/../b.txt", "b.txt"),
        ("notes-v2.txt", "notes-v2.txt"),
        (".gitignore", ".gitignore"),
    ],
)
def test_guard_accepts_paths_inside(layout: tuple[Path, Path], rel: str, expected: str) -> None:
    ws_dir, _ = layout
    ws = Workspace(ws_dir)
    assert ws.resolve(rel) == ws_dir.resolve() / expected
    assert ws.relpath(rel) == expected


def test_sibling_folder_sharing_the_prefix_is_outside(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    ws = Workspace(ws_dir)
    before = snapshot(ws_dir.parent)
    with pytest.raises(PathRejected, match=OUTSIDE):
        ws.write_text("../ws2/x", "pwned")
    assert snapshot(ws_dir.parent) == before


@pytest.mark.parametrize(
    "rel",
    [".git/config", ".GIT/x", ".Git", "a/../.git/HEAD", "sub/.git/config", "lib/.Git", "a/b/.git"],
)
def test_git_folder_is_protected(layout: tuple[Path, Path], rel: str) -> None:
    ws_dir, _ = layout
    (ws_dir / ".git").mkdir()
    ws = Workspace(ws_dir)
    assert rejected(ws, rel) == "Path is protected ('.git/')"
    with pytest.raises(PathRejected):
        ws.write_text(rel, "x")
    assert not (ws_dir / ".git" / "config").exists()


def test_symlink_into_git_is_protected(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / ".git").mkdir()
    (ws_dir / "g").symlink_to(ws_dir / ".git")
    assert rejected(Workspace(ws_dir), "g/config") == "Path is protected ('.git/')"


def test_agent_folders_inside_the_workspace_are_protected(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    outbox = ws_dir / "outbox"
    outbox.mkdir()
    ws = Workspace(ws_dir, protected=[outbox, ws_dir / "sessions"])
    for rel in ["outbox/a_seq0001.txt", "outbox", "sessions/x.json", "x/../outbox/y"]:
        assert rejected(ws, rel) == "Path is protected (agent folder)"
    with pytest.raises(PathRejected):
        ws.write_text("outbox/evil.txt", "x")
    assert list(outbox.iterdir()) == []
    assert ws.resolve("outboxes/x") == ws.root / "outboxes/x"  # a name prefix is not inside


def test_symlinked_dir_pointing_outside_is_rejected(layout: tuple[Path, Path]) -> None:
    ws_dir, outside = layout
    (ws_dir / "link").symlink_to(outside)
    ws = Workspace(ws_dir)
    before = snapshot(outside)
    with pytest.raises(PathRejected, match=OUTSIDE):
        ws.read_bytes("link/secret.txt")
    with pytest.raises(PathRejected, match=OUTSIDE):
        ws.write_text("link/new.txt", "x")
    with pytest.raises(PathRejected, match=OUTSIDE):
        ws.write_text("link/secret.txt", "x")
    with pytest.raises(PathRejected, match=OUTSIDE):
        ws.delete("link/secret.txt")
    assert snapshot(outside) == before


def test_dangling_symlink_to_outside_is_rejected(layout: tuple[Path, Path]) -> None:
    ws_dir, outside = layout
    (ws_dir / "trap").symlink_to(outside / "not-yet.txt")
    with pytest.raises(PathRejected, match=OUTSIDE):
        Workspace(ws_dir).write_text("trap", "x")
    assert not (outside / "not-yet.txt").exists()


def test_final_symlink_is_refused_for_write_and_delete(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / "real.txt").write_text("real")
    (ws_dir / "alias.txt").symlink_to("real.txt")
    (ws_dir / "dangling.txt").symlink_to("missing.txt")
    ws = Workspace(ws_dir)
    assert ws.read_bytes("alias.txt") == b"real"  # reading through an inside symlink is fine
    for rel in ["alias.txt", "dangling.txt"]:
        with pytest.raises(PathRejected, match="Path is a symlink"):
            ws.write_text(rel, "changed")
        with pytest.raises(PathRejected, match="Path is a symlink"):
            ws.delete(rel)
    assert (ws_dir / "real.txt").read_text() == "real"
    assert not (ws_dir / "missing.txt").exists()
    assert (ws_dir / "alias.txt").is_symlink()


def test_symlink_loop_is_harmless(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / "l1").symlink_to("l2")
    (ws_dir / "l2").symlink_to("l1")
    ws = Workspace(ws_dir)
    with pytest.raises(OSError):
        ws.read_bytes("l1/x")
    with pytest.raises(PathRejected, match="Path is a symlink"):
        ws.write_text("l1", "x")


def test_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Workspace(tmp_path / "missing")
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError):
        Workspace(tmp_path / "f")


# --- property: whatever the LLM writes, resolve() stays inside ---------------------------------

_COMPONENTS = st.sampled_from(
    ["..", ".", "a", "b", "out", "loop", "self", "", " ", "a b", "ä", "-x", "~", ":", "*", "..."]
)


@pytest.fixture(scope="module")
def maze(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with a nested folder, a symlink out, a loop and a symlink to itself."""
    base = tmp_path_factory.mktemp("maze")
    ws = base / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (base / "outside").mkdir()
    (ws / "out").symlink_to(base / "outside")
    (ws / "a" / "out").symlink_to("../../outside")
    (ws / "loop").symlink_to("loop")
    (ws / "self").symlink_to(".")
    return ws


@settings(max_examples=examples(300), deadline=None)
@given(parts=st.lists(_COMPONENTS, min_size=1, max_size=8), odd=st.sampled_from(["", "\\", "\0"]))
def test_resolve_never_leaves_the_root(maze: Path, parts: list[str], odd: str) -> None:
    rel = "/".join(parts) + odd
    ws = Workspace(maze)
    try:
        target = ws.resolve(rel)
    except PathRejected as e:
        assert str(e) in (OUTSIDE, EMPTY, BACKSLASH, NUL, STREAM)
    except OSError as e:
        assert e.errno == errno.ELOOP  # through `loop`, which points at itself
        assert "loop" in parts
    else:
        real = Path(os.path.realpath(maze / rel))
        assert target == real
        assert target.is_relative_to(maze.resolve())


def test_writing_to_a_folder_name_is_rejected(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    assert rejected(Workspace(ws_dir), "sub/", for_write=True) == FOLDER
    assert not (ws_dir / "sub").exists()
