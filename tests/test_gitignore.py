"""What the listing leaves out because git would: .gitignore and .git/info/exclude."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from trees import sized, write_tree

from codingagent.secrecy.secret_files import SKIP_DIRS, secret_files
from codingagent.workspace import Listing, Workspace


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


def test_an_ignored_folder_is_not_listed_and_ignored_build_output_not_entered(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What is inside an ignored folder is never listed; the walk the listing shares with the
    secret scan enters it once (secrets live in ignored files: ``.env``), but not an ignored
    folder of build output, which no reader wants (codingagent/workspace/tree.py)."""
    ws_dir, _ = layout
    ignores = "generated/\n!generated/keep.txt\ntarget/\n"
    write_tree(ws_dir, {".gitignore": ignores, "src/main.py": "", "src/target/t.rs": ""})
    write_tree(ws_dir, {"src/.cache/c.txt": ""})  # a build output's name, not ignored
    for i in range(300):
        write_tree(ws_dir / "generated" / f"g{i:03}", {"keep.txt": "", "deeper/x.py": ""})
        write_tree(ws_dir / "target" / f"t{i:03}", {"out.o": ""})
    scanned: list[object] = []
    real_scandir = os.scandir

    def counting_scandir(folder):
        scanned.append(folder)
        return real_scandir(folder)

    monkeypatch.setattr(os, "scandir", counting_scandir)
    ws = Workspace(ws_dir)
    listing = ws.list_files()
    # As in git, nothing inside an ignored folder can be re-included.
    shown = [(".gitignore", len(ignores)), ("src/.cache/c.txt", 0), ("src/main.py", 0)]
    assert listing == Listing(shown, omitted=0)
    shared = secret_files(ws.root, files=ws.tree.stats(SKIP_DIRS))
    ws.list_files()
    assert len(scanned) == 4 + 600  # root, src/, src/.cache/, generated/ and its 600, once
    assert shared == secret_files(ws.root)  # (a walk of its own)


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
