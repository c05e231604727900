"""The workspace files that hold secrets: kept from commands where a sandbox can hide them
(docs/secrets.md, 'Secret files').

A file is a secret file by its name (:data:`NAME_PATTERNS`: ``.env*``, ``*.pem``, ``id_rsa*``,
...) or, unless it is source code, by what is in it (a secret the rules find). Every secret
found is learned, in source code too (:mod:`.file_scan`: the formats that are secrets wherever
they stand), so the session masks it in every later prompt, also in disguise. Source code is
kept visible (tests and imports read it). The user allows a file by name (setting
``secret_files_allow``: a path or a pattern, matched against the path in the workspace and
against the file name).
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from codingagent.secrecy.file_scan import (
    MAX_BYTES,
    MAX_FILES,
    SKIP_DIRS,
    SOURCE_SUFFIXES,
    FileStat,
    scan,
    source,
    walk,
)
from codingagent.secrecy.masking import Masker

# The walk's limits and what counts as source code, for the turn's shared walk
# (codingagent/workspace/tree.py) and its tests.
__all__ = ["MAX_BYTES", "MAX_FILES", "SKIP_DIRS", "SOURCE_SUFFIXES", "SecretFiles", "notes"]
__all__ += ["secret_files"]
_source = source

NAME_PATTERNS = (
    *(".env", ".env.*", "*.env", ".envrc", ".netrc", "_netrc", ".npmrc", ".pypirc"),
    *(".git-credentials", ".htpasswd", "credentials", "credentials.*", "*.credentials"),
    *("*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.ovpn"),
    *("id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.tfvars", "*.tfstate"),
)
# The last answer given for a walk's version (the turn's RUN_COMMANDs and its next prompt ask
# for the same walk), by root, allowed names, masker and version.
_last: list[tuple[tuple[str, tuple[str, ...], int, int | None], SecretFiles]] = []
# The patterns as exact names, prefixes ('id_rsa*') and suffixes ('*.pem'): two string
# tests per file, not a regex (a walk meets tens of thousands of names).
_EXACT = frozenset(p for p in NAME_PATTERNS if "*" not in p)
_PREFIXES = tuple(p[:-1] for p in NAME_PATTERNS if p.endswith("*") and "*" not in p[:-1])
_SUFFIXES = tuple(p[1:] for p in NAME_PATTERNS if p.startswith("*") and "*" not in p[1:])


class SecretFiles(NamedTuple):
    """The workspace's secret files, by their posix paths in it."""

    hidden: tuple[str, ...]  # kept from commands (where a sandbox can)
    allowed: tuple[str, ...]  # secret files the user allowed by name


def secret_files(
    root: Path,
    allow: Iterable[str] = (),
    masker: Masker | None = None,
    files: Iterable[FileStat] | None = None,
    version: int | None = None,
) -> SecretFiles:
    """The secret files under ``root``, those ``allow`` names apart; ``masker`` learns each
    secret found in any file (source code and allowed files too). ``files``: the workspace's
    files as the walk a turn shares found them (``(path, posix path, stat)`` outside
    :data:`SKIP_DIRS`, at most :data:`MAX_FILES`), else this walks the tree itself
    (:func:`codingagent.secrecy.file_scan.walk`). ``version``: the walk's, a number that
    changes whenever the files may have: asked again for the same one, the answer found is
    given again without a look at the files."""
    allow = tuple(allow)
    key = (str(root), allow, id(masker), version)
    if version is not None and _last and _last[0][0] == key:
        return _last[0][1]
    hidden: list[str] = []
    allowed: list[str] = []
    for (_, rel, _), found in scan(walk(root) if files is None else files):
        if masker is not None:
            for secret, label in found.secrets:
                masker.learn(secret, label)
        if not (_named_secret(rel) or (found.secrets and not source(rel))):
            continue
        (allowed if _allowed(rel, allow) else hidden).append(rel)
    result = SecretFiles(tuple(sorted(hidden)), tuple(sorted(allowed)))
    if version is not None:
        _last[:] = [(key, result)]
    return result


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


@functools.lru_cache(maxsize=1 << 16)
def _named_secret(rel: str) -> bool:
    """Whether a :data:`NAME_PATTERNS` pattern matches the file's name, in any case (and it
    is not source code)."""
    name = rel.rpartition("/")[2].lower()
    named = name in _EXACT or name.startswith(_PREFIXES) or name.endswith(_SUFFIXES)
    return named and not source(name)


def _allowed(rel: str, allow: tuple[str, ...]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatchcase(rel, pattern.strip("/")) or fnmatch.fnmatchcase(name, pattern)
        for pattern in allow
    )
