"""The listing: which files the LLM is shown, their sizes, and the cap."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from trees import sized, write_tree

from codingagent.workspace import Listing, Workspace


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
