"""Files a turn left that run code when the user merely works in the folder (docs/security.md §5).

Git runs programs named in a repository's config (``core.fsmonitor`` on every ``git status``,
``core.pager``, filter drivers...) and its hooks, outside every sandbox; direnv runs
``.envrc`` on entering a folder; VS Code runs ``tasks.json`` tasks marked ``runOn:
folderOpen``. File commands may not write ``.git`` and the workspace's ``.git/`` is read-only
in the sandbox, but a command can still ``git init`` a nested repository, or run without a
sandbox. So after a turn that ran a command, :func:`scan` looks for such files changed since the
turn began (by ``ctime``, which no command can set back) and says what each would run; the
console shows it and the turn's ``log`` keeps it. Where the turn knows every path it changed
(its file commands, and commands run on an overlay, whose layer lists what they made: see
``codingagent.transaction.capture``), only those paths are looked at, at a cost that follows
what changed; otherwise it walks the workspace, ignored folders (``node_modules``) included.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

# Git settings that name a program git runs (or more config to read), by their last part or
# their section: `core.fsmonitor`, `filter.<driver>.smudge`, `alias.<name>`.
_RUNS = re.compile(
    r"^(?:core\.(?:fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy|worktree)"
    r"|(?:diff|merge|filter)\..*\.(?:command|textconv|driver|clean|smudge|process)"
    r"|diff\.external|credential\..*helper|alias\..*|sequence\.editor|gpg\..*program"
    r"|include\.path|includeif\..*\.path|uploadpack\.packobjectshook|pager\..*|web\.browser"
    r"|(?:browser|man)\..*\.cmd|ssh\.variant|protocol\..*\.allow)$",
    re.IGNORECASE,
)
_SECTION = re.compile(r'^\[\s*([^\s\]"]+)(?:\s+"(.*)")?\s*\]')
_CLIP = 120
WATCHED = frozenset({".envrc", "tasks.json"})  # names a file command may write, of these


def scan(root: Path, since_ns: int, placed: Iterable[str] | None = None) -> list[str]:
    """One line for each file under ``root`` changed since ``since_ns`` that would run code
    for the user: ``path: what it runs``. File times come from the kernel's coarse clock, a
    tick behind ``time.time_ns()``: take ``since_ns`` from a file written at the moment.

    ``placed``: every path (posix, from ``root``) the turn can have changed, a folder standing
    for all below it, where that is known; None: the whole tree is walked."""
    root = Path(root)
    candidates = _candidates(root) if placed is None else _placed(root, placed)
    found = []
    for path, is_git_dir in candidates:
        if is_git_dir:
            found += _git_dir(root, path, since_ns)
        elif _changed(path, since_ns):
            found += _other(root, path)
    return found


def _candidates(root: Path) -> Iterator[tuple[Path, bool]]:
    """Every ``.git`` (and whether it is a folder), ``.envrc`` and ``.vscode/tasks.json``;
    symlinks are not followed, ``.git`` folders not entered."""
    stack = [root]
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name.casefold()
                is_dir = entry.is_dir(follow_symlinks=False)
                if name == ".git":
                    yield Path(entry.path), is_dir
                elif not is_dir and _watched(name, folder.name):
                    yield Path(entry.path), False
                elif is_dir:
                    stack.append(Path(entry.path))


def _placed(root: Path, placed: Iterable[str]) -> Iterator[tuple[Path, bool]]:
    """:func:`_candidates` among the ``placed`` paths, each once: a ``.git`` on a path's way, a
    watched file, and the candidates below a placed folder."""
    found: dict[Path, bool] = {}
    for rel in placed:
        parts = rel.strip("/").split("/")
        git = next((i for i, part in enumerate(parts) if part.casefold() == ".git"), None)
        path = root.joinpath(*parts[: None if git is None else git + 1])
        try:
            is_dir = stat.S_ISDIR(os.lstat(path).st_mode)
        except OSError:
            continue  # gone since
        if git is not None:
            found.setdefault(path, is_dir)
        elif is_dir:
            for each, is_git_dir in _candidates(path):
                found.setdefault(each, is_git_dir)
        elif _watched(path.name.casefold(), path.parent.name):
            found.setdefault(path, False)
    return iter(found.items())


def _watched(name: str, folder: str) -> bool:
    """Whether a file called ``name`` (case-folded) in ``folder`` (the folder's name) runs code
    when the folder is opened."""
    return name == ".envrc" or (name == "tasks.json" and folder == ".vscode")


def _changed(path: Path, since_ns: int) -> bool:
    try:
        return os.lstat(path).st_ctime_ns >= since_ns
    except OSError:
        return False


def _git_dir(root: Path, git: Path, since_ns: int) -> list[str]:
    where = git.relative_to(root).as_posix()
    config = git / "config"
    found = []
    if _changed(config, since_ns):
        runs = _git_config_runs(config)
        what = "; ".join(runs) if runs else "no setting that runs a program"
        found.append(f"{where}/config: {what}")
    hooks = git / "hooks"
    with contextlib.suppress(OSError), os.scandir(hooks) as entries:
        for hook in entries:
            if not hook.name.endswith(".sample") and _changed(Path(hook.path), since_ns):
                found.append(
                    f"{where}/hooks/{hook.name}: git runs it on '{hook.name}': "
                    f"{_first_line(Path(hook.path))}"
                )
    if not found and _changed(git, since_ns):
        found.append(f"{where}: a new git repository")
    return found


def _other(root: Path, path: Path) -> list[str]:
    where = path.relative_to(root).as_posix()
    if path.name.casefold() == ".git":  # a worktree or submodule pointer, or a symlink
        target = os.readlink(path) if path.is_symlink() else _first_line(path)
        return [f"{where}: points git at {_clip(target)}"]
    if path.name.casefold() == ".envrc":
        return [f"{where}: direnv runs it on entering the folder: {_first_line(path)}"]
    tasks = _folder_open_tasks(path)
    return [f"{where}: VS Code runs on opening the folder: {task}" for task in tasks]


def _git_config_runs(path: Path) -> list[str]:
    """``key = value`` of each setting in a git config file that runs something."""
    runs = []
    section = ""
    for raw in _read(path).splitlines():
        line = raw.strip()
        header = _SECTION.match(line)
        if header:
            name, sub = header.groups()
            section = f"{name}.{sub}" if sub is not None else name
            line = line[header.end() :].strip()
        if not line or line[0] in "#;":
            continue
        key, _, value = line.partition("=")
        full = f"{section}.{key.strip()}"
        if _RUNS.match(full):
            runs.append(_clip(f"{full} = {value.strip()}"))
    return runs


def _folder_open_tasks(path: Path) -> list[str]:
    """The command of each task that runs when the folder is opened."""
    text = re.sub(r"^\s*//.*$", "", _read(path), flags=re.MULTILINE)  # JSONC comments
    text = re.sub(r",(\s*[}\]])", r"\1", text)  # and trailing commas
    try:
        tasks = json.loads(text).get("tasks", [])
    except (ValueError, AttributeError):
        return ["(tasks.json could not be read; open it to check)"]
    found = []
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict):
            continue
        run_on = task.get("runOptions", {})
        if isinstance(run_on, dict) and run_on.get("runOn") == "folderOpen":
            args = task.get("args", [])
            words = [
                str(task.get("command", "")),
                *map(str, args if isinstance(args, list) else []),
            ]
            found.append(_clip(" ".join(words)))
    return found


def _first_line(path: Path) -> str:
    """The first line that does something: not blank, not a comment or ``#!``."""
    for line in _read(path).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return _clip(line)
    return "(nothing but comments)"


def _read(path: Path) -> str:
    """The head of a regular file (never a FIFO or device a command left, never through a
    symlink), or ""."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return f.read(65536).decode("utf-8", errors="replace")


def _clip(text: str) -> str:
    return text if len(text) <= _CLIP else text[: _CLIP - 1] + "…"
