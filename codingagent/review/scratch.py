"""A workspace whose writes are kept in memory: a reply's file commands run on it to show what
they would do, and nothing is written (docs/review.md).

Every path goes through the real workspace's guard as a write would (a forbidden path, a
folder, a symlink, a hard-linked file are refused the same way); reads see what the commands
before wrote, else the disk. It lives for one reply's preview."""

from __future__ import annotations

import io
from pathlib import Path
from typing import BinaryIO

from codingagent.workspace import Workspace


class Scratch(Workspace):
    """``root`` as a reply's file commands would leave it, held in memory."""

    def __init__(self, root: Path, protected: tuple[Path, ...] = ()) -> None:
        super().__init__(root, protected)
        self.written: dict[str, bytes | None] = {}  # real relative path -> bytes, None: deleted
        self.spelled: dict[str, str] = {}  # real relative path -> as the LLM first wrote it
        self.first: dict[str, int] = {}  # real relative path -> the command that first wrote it
        self.touched: dict[int, list[str]] = {}  # command -> the real paths it wrote, in order
        self.command = 0  # the command running now (its index among those run here)

    def _held(self, rel: str) -> tuple[str, bytes | None, bool]:
        """The real path of ``rel``, what the commands left there, and whether they did."""
        real = self.relpath(rel)
        return real, self.written.get(real), real in self.written

    def is_file(self, rel: str) -> bool:
        _, data, held = self._held(rel)
        return data is not None if held else super().is_file(rel)

    def is_dir(self, rel: str) -> bool:
        _, data, held = self._held(rel)
        return False if held and data is not None else super().is_dir(rel)

    def file_size(self, rel: str) -> int:
        return len(self.read_bytes(rel))

    def read_bytes(self, rel: str, limit: int | None = None) -> bytes:
        _, data, held = self._held(rel)
        if not held:
            return super().read_bytes(rel, limit)
        if data is None:
            raise FileNotFoundError(f"No such file: '{rel}'")
        return data if limit is None else data[:limit]

    def open_bytes(self, rel: str) -> BinaryIO:
        return io.BytesIO(self.read_bytes(rel))

    def exists_for_write(self, rel: str) -> bool:
        _, data, held = self._held(rel)
        return data is not None if held else super().exists_for_write(rel)

    def write_text(self, rel: str, text: str) -> bool:
        created = not self.exists_for_write(rel)  # refused as the real write would be
        self._keep(rel, text.encode("utf-8"))
        return created

    def delete(self, rel: str) -> None:
        if self.is_dir(rel):
            raise IsADirectoryError(f"Is a directory: '{rel}'")
        if not self.exists_for_write(rel):
            raise FileNotFoundError(f"No such file: '{rel}'")
        self._keep(rel, None)

    def _keep(self, rel: str, data: bytes | None) -> None:
        real = self.relpath(rel)
        if real not in self.written:
            self.spelled[real] = rel
            self.first[real] = self.command
        paths = self.touched.setdefault(self.command, [])
        if real not in paths:
            paths.append(real)
        self.written[real] = data
