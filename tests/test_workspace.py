"""The sandbox: which paths the LLM may use, what the listing shows, how files are written."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codingagent.workspace import Listing, PathRejected, PreImage, Workspace
from codingagent.workspace.guard import BACKSLASH, EMPTY, FOLDER, HARDLINK, NUL, OUTSIDE, STREAM


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """``ws`` (the workspace) next to ``ws2`` and ``outside``, which must stay untouched."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "ws2").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    return ws, outside


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
        ("sub/.git/config", "sub/.git/config"),
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


@pytest.mark.parametrize("rel", [".git/config", ".GIT/x", ".Git", "a/../.git/HEAD"])
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


@settings(max_examples=300, deadline=None)
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


# --- listing -----------------------------------------------------------------------------------


def test_listing_sizes_sorted_and_skips_heavy_folders(layout: tuple[Path, Path]) -> None:
    ws_dir, outside = layout
    files = {
        "b.txt": "bb",
        "a.txt": "a",
        "a/z.py": "zzz",
        "src/deep/x.js": "",
        ".gitignore": "*.pyc\n",
        "sub/.git/HEAD": "ref",  # a nested repository's .git is skipped too
        ".git/config": "[core]",
        ".GIT/x": "x",
        "outbox/a_seq0001.txt": "prompt",
    }
    for skipped in ["node_modules", "__pycache__", ".venv", "venv", ".mypy_cache"]:
        files[f"{skipped}/junk.txt"] = "junk"
        files[f"src/{skipped}/junk.txt"] = "junk"
    for skipped in [".pytest_cache", ".ruff_cache", ".tox", ".hypothesis"]:
        files[f"{skipped}/junk.txt"] = "junk"
    for rel, text in files.items():
        (ws_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws_dir / rel).write_text(text)
    (ws_dir / "linkdir").symlink_to(outside)
    (ws_dir / "linkfile.txt").symlink_to("b.txt")
    listing = Workspace(ws_dir, protected=[ws_dir / "outbox"]).list_files()
    assert listing == Listing(
        entries=[
            (".gitignore", 6),
            ("a.txt", 1),
            ("a/z.py", 3),
            ("b.txt", 2),
            ("src/deep/x.js", 0),
        ],
        omitted=0,
    )


def test_listing_is_capped_with_a_count(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    for i in range(12):
        (ws_dir / f"f{i:02}.txt").write_text("x" * i)
    listing = Workspace(ws_dir).list_files(limit=5)
    assert listing.entries == [(f"f{i:02}.txt", i) for i in range(5)]
    assert listing.omitted == 7
    assert Workspace(ws_dir).list_files(limit=12).omitted == 0


def test_listing_of_empty_workspace(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    assert Workspace(ws_dir).list_files() == Listing(entries=[], omitted=0)


# --- reading and writing -----------------------------------------------------------------------


def test_write_creates_parents_and_reports_creation(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    ws = Workspace(ws_dir)
    assert ws.write_text("x/y/z.txt", "one\r\n") is True
    assert ws.write_text("x/y/z.txt", "two\r\n") is False
    assert (ws_dir / "x/y/z.txt").read_bytes() == b"two\r\n"
    assert ws.read_bytes("x/y/z.txt") == b"two\r\n"  # no newline translation


def test_write_keeps_the_file_mode(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    script = ws_dir / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    Workspace(ws_dir).write_text("run.sh", "#!/bin/sh\necho hi\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_a_hard_linked_file_is_refused(layout: tuple[Path, Path]) -> None:
    ws_dir, outside = layout
    os.link(outside / "secret.txt", ws_dir / "hard.txt")
    ws = Workspace(ws_dir)
    for use in (
        lambda: ws.write_text("hard.txt", "new"),
        lambda: ws.read_bytes("hard.txt"),
        lambda: ws.is_file("hard.txt"),
        lambda: ws.delete("hard.txt"),
    ):
        with pytest.raises(PathRejected, match=HARDLINK):
            use()
    assert (outside / "secret.txt").read_text() == "secret"
    assert (ws_dir / "hard.txt").read_text() == "secret"


def test_write_refuses_a_directory(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        Workspace(ws_dir).write_text("d", "x")


def test_read_missing_or_folder_is_not_found(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / "d").mkdir()
    ws = Workspace(ws_dir)
    for rel in ["nope.txt", "d"]:
        with pytest.raises(FileNotFoundError):
            ws.read_bytes(rel)
    assert ws.is_dir("d") and not ws.is_dir("nope.txt")


def test_read_stops_at_the_limit(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / "big").write_bytes(b"x" * 10_000)
    assert Workspace(ws_dir).read_bytes("big", limit=10) == b"x" * 10


def test_writing_to_a_folder_name_is_rejected(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    assert rejected(Workspace(ws_dir), "sub/", for_write=True) == FOLDER
    assert not (ws_dir / "sub").exists()


def test_listing_survives_undecodable_names_and_deep_trees(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / os.fsdecode(b"bad\xffname.txt")).write_text("x")
    depth = 1100  # deeper than Python's recursion limit
    folders = [ws_dir / ("d/" * n) for n in range(1, depth + 1)]
    for folder in folders:  # not os.makedirs: it recurses per level too
        folder.mkdir()
    (folders[-1] / "leaf.txt").write_text("leaf")
    try:
        entries = dict(Workspace(ws_dir).list_files().entries)
    finally:
        (folders[-1] / "leaf.txt").unlink()
        for folder in reversed(folders):  # nor can pytest's recursive clean-up remove it
            folder.rmdir()
    assert entries["bad\\xffname.txt"] == 1
    assert entries["d/" * depth + "leaf.txt"] == 4


def test_delete(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / "f.txt").write_text("x")
    (ws_dir / "d").mkdir()
    ws = Workspace(ws_dir)
    ws.delete("f.txt")
    assert not (ws_dir / "f.txt").exists()
    with pytest.raises(FileNotFoundError):
        ws.delete("f.txt")
    with pytest.raises(IsADirectoryError):
        ws.delete("d")
    assert (ws_dir / "d").is_dir()


# --- pre-images and restore ----------------------------------------------------------------------


def test_before_change_sees_the_file_as_it_was(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / "old.txt").write_text("before")
    (ws_dir / "old.txt").chmod(0o640)
    ws = Workspace(ws_dir)
    seen: list[PreImage] = []
    ws.before_change = seen.append
    ws.write_text("old.txt", "after")
    ws.write_text("new/deeper/f.txt", "x")
    ws.delete("old.txt")
    assert seen == [
        PreImage("old.txt", b"before", 0o640),
        PreImage("new/deeper/f.txt", None, None, ("new", "new/deeper")),
        PreImage("old.txt", b"after", 0o640),
    ]


def test_a_refused_hook_leaves_the_file_alone(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    ws = Workspace(ws_dir)

    def refuse(pre: PreImage) -> None:
        raise RuntimeError("journal full")

    ws.before_change = refuse
    with pytest.raises(RuntimeError):
        ws.write_text("a/b.txt", "x")
    assert not (ws_dir / "a").exists()  # not even the folder


def test_restore_puts_files_back_and_cleans_up(layout: tuple[Path, Path]) -> None:
    ws_dir, outside = layout
    ws = Workspace(ws_dir)
    seen: list[PreImage] = []
    ws.before_change = seen.append
    (ws_dir / "kept.txt").write_text("v1")
    ws.write_text("kept.txt", "v2")
    ws.write_text("made/in/turn.txt", "x")
    (ws_dir / "made" / "in" / ".turn.txt.1234abcd.tmp").write_text("torn")  # a crash's leftover
    for pre in reversed(seen):
        ws.restore(pre)
    assert (ws_dir / "kept.txt").read_text() == "v1"
    assert not (ws_dir / "made").exists()
    # A hard link now in a restored file's place is replaced, not written through.
    (ws_dir / "kept.txt").unlink()
    os.link(outside / "secret.txt", ws_dir / "kept.txt")
    ws.restore(seen[0])
    assert (outside / "secret.txt").read_text() == "secret"
    assert (ws_dir / "kept.txt").read_text() == "v1"


def test_file_size_follows_the_read_rules(layout: tuple[Path, Path]) -> None:
    ws_dir, outside = layout
    (ws_dir / "f.txt").write_text("12345")
    (ws_dir / "link").symlink_to(outside)
    os.link(outside / "secret.txt", ws_dir / "hard.txt")
    ws = Workspace(ws_dir)
    assert ws.file_size("f.txt") == 5
    with pytest.raises(PathRejected, match=OUTSIDE):
        ws.file_size("link/secret.txt")
    with pytest.raises(PathRejected, match=HARDLINK):
        ws.file_size("hard.txt")
    with pytest.raises(FileNotFoundError):
        ws.file_size("missing.txt")


# --- listing: .gitignore, and speed ------------------------------------------------------------


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def sized(files: dict[str, str], paths: list[str]) -> list[tuple[str, int]]:
    return [(path, len(files[path].encode())) for path in paths]


def test_gitignore_file_folder_anchored_negated_and_double_star_patterns(
    layout: tuple[Path, Path],
) -> None:
    ws_dir, _ = layout
    files = {
        ".gitignore": "# output\n*.log\n!keep.log\nbuild/\n/dist\ndocs/**/*.tmp\n**/cache\n",
        "a.log": "",
        "keep.log": "k",
        "src/b.log": "",
        "src/keep.log": "kk",
        "build/out.o": "",
        "src/build/out.o": "",
        "lib/build": "a file, not a folder",
        "dist/app.js": "",
        "src/dist/app.js": "js",
        "docs/a.tmp": "",
        "docs/x/y/b.tmp": "",
        "docs/guide.md": "md",
        "notes/c.tmp": "tmp",
        "cache": "",
        "src/x/cache/blob": "",
        "src/main.py": "print()\n",
    }
    write_tree(ws_dir, files)
    expected = [
        ".gitignore",
        "docs/guide.md",
        "keep.log",
        "lib/build",
        "notes/c.tmp",
        "src/dist/app.js",
        "src/keep.log",
        "src/main.py",
    ]
    assert Workspace(ws_dir).list_files() == Listing(sized(files, expected), omitted=0)


def test_nested_gitignore_applies_below_its_folder(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    files = {
        ".gitignore": "*.bak\n",
        "sub/.gitignore": "*.txt\n!/important.txt\n/local/\n!keep.bak\n",
        "a.txt": "a",
        "keep.bak": "",
        "local/x.py": "x",
        "other/keep.bak": "",
        "sub/a.txt": "",
        "sub/important.txt": "i",
        "sub/deep/important.txt": "",
        "sub/local/x.py": "",
        "sub/deep/local/y.py": "y",
        "sub/x.bak": "",
        "sub/keep.bak": "kb",
    }
    write_tree(ws_dir, files)
    expected = [
        ".gitignore",
        "a.txt",
        "local/x.py",
        "sub/.gitignore",
        "sub/deep/local/y.py",
        "sub/important.txt",
        "sub/keep.bak",
    ]
    assert Workspace(ws_dir).list_files() == Listing(sized(files, expected), omitted=0)


def test_git_info_exclude_is_honoured_below_gitignore(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    files = {
        ".git/info/exclude": "*.env\nscratch/\n",
        ".gitignore": "!public.env\n",
        "secret.env": "",
        "public.env": "p",
        "scratch/notes.md": "",
        "src/scratch/n.md": "",
        "app.py": "app",
    }
    write_tree(ws_dir, files)
    expected = [".gitignore", "app.py", "public.env"]
    assert Workspace(ws_dir).list_files() == Listing(sized(files, expected), omitted=0)


def test_an_ignored_folder_is_not_entered(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws_dir, _ = layout
    write_tree(ws_dir, {".gitignore": "generated/\n!generated/keep.txt\n", "src/main.py": ""})
    for i in range(300):
        write_tree(ws_dir / "generated" / f"g{i:03}", {"keep.txt": "", "deeper/x.py": ""})
    scanned: list[object] = []
    real_scandir = os.scandir

    def counting_scandir(folder):  # type: ignore[no-untyped-def]
        scanned.append(folder)
        return real_scandir(folder)

    monkeypatch.setattr(os, "scandir", counting_scandir)
    listing = Workspace(ws_dir).list_files()
    # As in git, nothing inside an ignored folder can be re-included.
    assert listing == Listing([(".gitignore", 31), ("src/main.py", 0)], omitted=0)
    assert len(scanned) == 2  # the root and src/; none of generated/'s 601 folders


def test_the_cap_counts_only_files_that_are_not_ignored(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / ".gitignore").write_text("*.log\n.gitignore\n")
    for i in range(12):
        (ws_dir / f"f{i:02}.txt").write_text("x" * i)
        (ws_dir / f"f{i:02}.log").write_text("log")
    ws = Workspace(ws_dir)
    assert ws.list_files(limit=5) == Listing([(f"f{i:02}.txt", i) for i in range(5)], omitted=7)
    assert ws.list_files(limit=12).omitted == 0
    assert ws.list_files(limit=0) == Listing(entries=[], omitted=12)


@pytest.mark.parametrize("limit", [0, 1, 7, 40, 1000])
def test_the_cap_keeps_the_first_files_in_path_order(layout: tuple[Path, Path], limit: int) -> None:
    """Files met in any order (the root's own before its folders', names in scandir order)
    come out as the first ``limit`` paths of all, with the right sizes and count."""
    ws_dir, _ = layout
    files = {}
    for i in range(30):
        files[f"{'z' if i % 2 else '0'}{i:02}.txt"] = "r" * i
        files[f"m{i % 5}/{i:02}-{'x' * (i % 3)}.py"] = "s" * (i % 7)
        files[f"a/b{i % 3}/c/{i:02}.md"] = "t" * (i % 4)
    write_tree(ws_dir, files)
    every = sorted(files)
    expected = sized(files, every[:limit])
    listing = Workspace(ws_dir).list_files(limit=limit)
    assert listing == Listing(expected, omitted=len(every) - len(expected))


def test_unreadable_ignore_lines_and_odd_ignore_files_do_no_harm(
    layout: tuple[Path, Path],
) -> None:
    ws_dir, outside = layout
    (outside / "ignore-all").write_text("*\n")
    files = {
        ".gitignore": "!\nfoo\\\n[z-a]\n[[:alpha:]]x\n*.log\n",  # 3 unreadable, 1 warns
        "a.log": "",
        "b.py": "b",
        "c/d.py": "d",
        "e/f.py": "",
    }
    write_tree(ws_dir, files)
    (ws_dir / "c" / ".gitignore").symlink_to(outside / "ignore-all")  # not followed
    (ws_dir / "e" / ".gitignore").mkdir()  # a folder, not a file
    listing = Workspace(ws_dir).list_files()
    assert listing.entries == sized(files, [".gitignore", "b.py", "c/d.py", "e/f.py"])


# Whitelisting, re-including folders, '**' at both ends, and lines that only match a parent.
GIT_CASES = [
    {".gitignore": "*\n!*/\n!*.py\n", "a.py": "", "b.txt": "", "src/c.py": "", "src/d.md": ""},
    {
        ".gitignore": "**/cache\n!d\n/a/b\n*.log\n!/x/y\n",
        "d/cache/e/f": "",
        "d/g": "",
        "a/b/c": "",
        "q/a/b/c": "",
        "x/y/z.log": "",
        "x/y/keep": "",
    },
    {
        ".gitignore": "gen/**\n!gen/keep.txt\ntmp/**/\n",
        "gen/a.txt": "",
        "gen/keep.txt": "",
        "gen/sub/keep.txt": "",
        "tmp/top.txt": "",
        "tmp/inner/x.txt": "",
        "sub/.gitignore": "!*.txt\n*.md\n",
        "sub/gen/a.txt": "",
        "sub/r.md": "",
    },
]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("files", GIT_CASES)
def test_the_listing_ignores_what_git_ignores(tmp_path: Path, files: dict[str, str]) -> None:
    write_tree(tmp_path, files)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    untracked = subprocess.run(
        ["git", "-C", str(tmp_path), "ls-files", "--others", "--exclude-standard", "-z"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    expected = sorted(path for path in untracked.split("\0") if path)
    assert expected  # the case leaves something to list
    assert [path for path, _ in Workspace(tmp_path).list_files().entries] == expected


@pytest.mark.slow
def test_a_20k_file_tree_lists_in_well_under_a_second(tmp_path: Path) -> None:
    for d in range(200):
        folder = tmp_path / "src" / f"pkg{d:03}"
        folder.mkdir(parents=True)
        for f in range(100):
            (folder / f"mod{f:02}.py").write_bytes(b"x = 1\n")
    (tmp_path / "build").mkdir()
    for f in range(2000):
        (tmp_path / "build" / f"out{f}.o").write_bytes(b"")
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    ws = Workspace(tmp_path)
    times = []
    for _ in range(3):
        started = time.perf_counter()
        listing = ws.list_files()
        times.append(time.perf_counter() - started)
    assert listing.entries[:2] == [(".gitignore", 13), ("src/pkg000/mod00.py", 6)]
    assert len(listing.entries) == 1000
    assert listing.omitted == 20_001 - 1000
    assert min(times) < 0.5  # about 20 ms on a laptop; generous for a loaded CI machine
