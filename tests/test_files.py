"""File operations through the guard: read, write, delete, pre-images and restore."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from codingagent.workspace import PathRejected, PreImage, Workspace
from codingagent.workspace.pathguard import HARDLINK, OUTSIDE


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


@dataclass
class Hook:
    """A keeper that hands each file's pre-image to ``record``, as the turn's journal does."""

    record: Callable[[PreImage], None]

    def record_all(self, pres: list[PreImage]) -> None:
        for pre in pres:
            self.record(pre)


def test_before_change_sees_the_file_as_it_was(layout: tuple[Path, Path]) -> None:
    ws_dir, _ = layout
    (ws_dir / "old.txt").write_text("before")
    (ws_dir / "old.txt").chmod(0o640)
    ws = Workspace(ws_dir)
    seen: list[PreImage] = []
    with ws.kept(Hook(seen.append)):
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

    with ws.kept(Hook(refuse)), pytest.raises(RuntimeError):
        ws.write_text("a/b.txt", "x")
    assert not (ws_dir / "a").exists()  # not even the folder


def test_restore_puts_files_back_and_cleans_up(layout: tuple[Path, Path]) -> None:
    ws_dir, outside = layout
    ws = Workspace(ws_dir)
    seen: list[PreImage] = []
    (ws_dir / "kept.txt").write_text("v1")
    with ws.kept(Hook(seen.append)):
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
