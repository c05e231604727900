"""The workspace files that hold secrets: kept from commands where a sandbox can hide them
(docs/secrets.md, 'Secret files').

A file is a secret file by its name (:data:`NAME_PATTERNS`: ``.env*``, ``*.pem``, ``id_rsa*``,
...) or, unless it is source code, by what is in it (a secret the rules find). The secrets
found are learned, so the session masks them in every later prompt, also in disguise. Source
code is kept visible and not looked inside (tests and imports read it, and a tree of code is
big: its secrets are masked when they show up). The user allows a file by name (setting
``secret_files_allow``: a path or a pattern, matched against the path in the workspace and
against the file name).

The walk skips version-control and dependency folders (:data:`SKIP_DIRS`) and looks inside
files up to :data:`MAX_BYTES`; what it found in a file is cached by its size and change time.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from codingagent.secrecy import rules
from codingagent.secrecy.masking import Masker

NAME_PATTERNS = (
    *(".env", ".env.*", "*.env", ".envrc", ".netrc", "_netrc", ".npmrc", ".pypirc"),
    *(".git-credentials", ".htpasswd", "credentials", "credentials.*", "*.credentials"),
    *("*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.ovpn"),
    *("id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.tfvars", "*.tfstate"),
)
# Source code and documentation: read by tests, imports and builds, never hidden.
SOURCE_SUFFIXES = frozenset(
    {
        *(".py", ".pyi", ".pyx", ".ipynb", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx"),
        *(".go", ".rs", ".java", ".kt", ".kts", ".scala", ".rb", ".php", ".pl", ".lua"),
        *(".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift", ".m", ".sh", ".bash", ".zsh"),
        *(".md", ".rst", ".html", ".css", ".vue", ".svelte", ".r", ".jl", ".ex"),
    }
)
SKIP_DIRS = frozenset(
    {
        *(".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv"),
        *(".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages"),
        *("target", ".gradle", ".next", ".cache"),  # build output of Rust, Java, JS
    }
)
MAX_BYTES = 512 * 1024  # files looked inside; bigger ones are secret files by name only
MAX_FILES = 50_000  # files a walk looks at; beyond, the rest of the tree is not seen
# One expression for all the name patterns: a walk of 10,000 files asks it 10,000 times.
_NAMED = re.compile("|".join(fnmatch.translate(pattern.lower()) for pattern in NAME_PATTERNS))


class SecretFiles(NamedTuple):
    """The workspace's secret files, by their posix paths in it."""

    hidden: tuple[str, ...]  # kept from commands (where a sandbox can)
    allowed: tuple[str, ...]  # secret files the user allowed by name


def secret_files(
    root: Path,
    allow: Iterable[str] = (),
    masker: Masker | None = None,
    files: Iterable[tuple[str, str, os.stat_result]] | None = None,
) -> SecretFiles:
    """The secret files under ``root``, those ``allow`` names apart; ``masker`` learns each
    secret found inside the files looked at (source code and allowed files too).  ``files``:
    the workspace's files as a walk the turn shares found them (``(path, posix path, stat)``
    outside :data:`SKIP_DIRS`, at most :data:`MAX_FILES`), else this walks the tree itself."""
    allow = tuple(allow)
    hidden: list[str] = []
    allowed: list[str] = []
    for path, rel, stat in _walk(root) if files is None else files:
        by_name = _named_secret(rel)
        if stat.st_size > MAX_BYTES or _source(rel):
            holds = False
        else:
            holds, found = _examine(path, stat.st_mtime_ns, stat.st_size)
            for secret, label in found:
                if masker is not None:
                    masker.learn(secret, label)
        if not (by_name or holds):
            continue
        (allowed if _allowed(rel, allow) else hidden).append(rel)
    return SecretFiles(tuple(sorted(hidden)), tuple(sorted(allowed)))


def notes(found: SecretFiles, hides: bool) -> list[str]:
    """Lines for people: which secret files commands do or do not see, and how to allow one."""
    lines = []
    if found.hidden and hides:
        lines.append(
            f"Secret files hidden from commands (they read as empty): {', '.join(found.hidden)};"
            " to let commands read one, add its name to secret_files_allow in"
            " ~/.config/codingagent/config.toml (or CODINGAGENT_SECRET_FILES_ALLOW)"
        )
    elif found.hidden:
        lines.append(
            f"No OS sandbox: commands CAN read these secret files: {', '.join(found.hidden)}"
            " (their secrets are masked in prompts, not kept from commands)"
        )
    if found.allowed:
        lines.append(
            f"Secret files commands may read (secret_files_allow): {', '.join(found.allowed)}"
        )
    return lines


def _source(rel: str) -> bool:
    """Whether the name's suffix is source code's (``os.path.splitext``'s suffix, quicker)."""
    name = rel.rpartition("/")[2].lstrip(".")
    dot = name.rfind(".")
    return dot > 0 and name[dot:].lower() in SOURCE_SUFFIXES


def _named_secret(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1].lower()
    return not _source(name) and _NAMED.match(name) is not None


def _allowed(rel: str, allow: tuple[str, ...]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatchcase(rel, pattern.strip("/")) or fnmatch.fnmatchcase(name, pattern)
        for pattern in allow
    )


@functools.lru_cache(maxsize=1 << 16)
def _examine(path: str, mtime_ns: int, size: int) -> tuple[bool, tuple[tuple[str, str], ...]]:
    """Whether the file at ``path`` holds secrets, and which; cached by its change time and
    size."""
    try:
        with open(path, "rb") as f:
            data = f.read(8192)
            if b"\0" in data:
                return False, ()  # binary
            data += f.read(MAX_BYTES - len(data))
    except OSError:
        return False, ()
    text = data.decode("utf-8", errors="replace")
    found = [(text[f.start : f.end], f.label) for f in rules.find(text)]
    return bool(found), tuple(found)


def _walk(root: Path) -> Iterator[tuple[str, str, os.stat_result]]:
    """(path, posix path in ``root``, stat) of each regular file under ``root`` (not
    following links), outside :data:`SKIP_DIRS`, at most :data:`MAX_FILES` of them."""
    seen = 0
    folders = [(str(root), "")]
    while folders and seen < MAX_FILES:
        folder, prefix = folders.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            rel = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS:
                        folders.append((entry.path, rel + "/"))
                elif entry.is_file(follow_symlinks=False):
                    seen += 1
                    yield entry.path, rel, entry.stat(follow_symlinks=False)
            except OSError:
                continue
