"""Building a file tree for the listing tests, and the entries it should give."""

from __future__ import annotations

from pathlib import Path


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def sized(files: dict[str, str], paths: list[str]) -> list[tuple[str, int]]:
    return [(path, len(files[path].encode())) for path in paths]
