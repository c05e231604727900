"""Which folder is what: one too broad to hand to the LLM, a project the user works on, the
user's state folder. Paths only: it reads folder entries, never a file's content, and imports
nothing of the agent's, so every command can ask it from where the user stands at the cost of
a few ``stat`` calls (docs/commands.md, "Where the agent's folders go").

**Too broad.** The LLM's file commands can change any file under the workspace, so a
workspace that is ``/``, a home folder itself (``~``, ``/root``), a folder holding home folders
(``/home``, ``/Users``) or a system folder (``/etc``, ``/usr``, ...) would hand it every file
the user can change (:mod:`codingagent.workspace.choice` refuses one). The check is on the
resolved folder (symlinks, ``..``), so ``../..`` or a link to ``/`` is judged by what it names.

**A project** is the git work tree a folder is in, or a folder holding a project's marker
files (``pyproject.toml``, ``package.json``, ``Makefile``, ...) or source files: ``codingagent
start`` there works on it, with the agent's own folders kept out of it
(:mod:`codingagent.records.runfolder`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

# Folders that hold the system, or many users' files: a workspace is never one of them, nor a
# folder above one of them (``/`` is above all).
_SHARED = (
    *("/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32"),
    *("/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/snap", "/srv", "/sys"),
    *("/tmp", "/usr", "/usr/local", "/var", "/nix"),
    # macOS
    *("/Applications", "/Library", "/System", "/Users", "/Volumes", "/private"),
)
# The operating system's own files: nothing inside them is a project either.
_SYSTEM = (
    *("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc"),
    *("/sbin", "/sys", "/usr/bin", "/usr/lib", "/usr/sbin", "/usr/share", "/System"),
)


def broad_reason(folder: Path) -> str | None:
    """Why the resolved ``folder`` is too broad to be a workspace, or None when it is fine."""
    if folder == Path(folder.anchor):
        return "it is the root of the file system"
    for home in _homes():
        if folder == home:
            return "it is a home folder"
        if home.is_relative_to(folder):
            return f"it holds the home folder {home}"
    for shared in map(Path, _SHARED):
        if shared == folder:
            return "it is a system folder"
        if shared.is_relative_to(folder):
            return f"it holds the system folder {shared}"
    for system in map(Path, _SYSTEM):
        if folder.is_relative_to(system):
            return f"it is inside the system folder {system}"
    return None


# Files that say "this folder is a project": build files, package manifests, agent notes.
MARKERS = (
    *("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", "tox.ini"),
    *("package.json", "deno.json", "Cargo.toml", "go.mod", "Makefile", "makefile"),
    *("GNUmakefile", "CMakeLists.txt", "meson.build", "configure.ac", "pom.xml"),
    *("build.gradle", "build.gradle.kts", "settings.gradle", "build.sbt", "Gemfile"),
    *("composer.json", "mix.exs", "rebar.config", "stack.yaml", "cabal.project"),
    *("dune-project", "pubspec.yaml", "Package.swift", "project.clj", "deps.edn"),
    *("AGENTS.md", "CLAUDE.md"),
)
MARKER_SUFFIXES = (".csproj", ".fsproj", ".sln", ".cabal", ".gemspec", ".nimble")
# Source files by suffix: a folder holding one (at its top or one folder down) is a project.
SOURCE_SUFFIXES = frozenset(
    (
        *(".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java"),
        *(".kt", ".kts", ".scala", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".m"),
        *(".mm", ".cs", ".fs", ".swift", ".rb", ".php", ".pl", ".pm", ".lua", ".r", ".jl"),
        *(".ex", ".exs", ".erl", ".hs", ".ml", ".clj", ".dart", ".zig", ".nim", ".vue"),
        *(".svelte", ".sh", ".bash", ".sql", ".f90", ".pas", ".groovy", ".elm", ".v"),
    )
)
# Folders not looked into for source files: installed or generated code.
NOT_SOURCES = frozenset(("node_modules", "__pycache__", "venv", "build", "dist", "target"))
SCAN_ENTRIES = 400  # folder entries looked at, at most, to find source files
SHOWN = 3  # files named as evidence in a message


def git_top(folder: Path) -> Path | None:
    """The top of the git work tree ``folder`` is in (the nearest folder up holding ``.git``,
    a folder or, in a linked work tree or a submodule, a file), or None."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_files(folder: Path) -> list[str]:
    """What shows ``folder`` holds a project, as names for a message (at most ``SHOWN``):
    its marker files, else source files at its top or one folder down; [] for none."""
    try:
        with os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries)
    except OSError:
        return []
    found = [name for name in names if name in MARKERS or name.endswith(MARKER_SUFFIXES)]
    if found:
        return found[:SHOWN]
    return _sources(folder, names)


def project_of(folder: Path) -> Path | None:
    """The project ``folder`` (resolved) is in: the top of its git work tree, else ``folder``
    itself when it holds a project's files; None for neither. A folder too broad to be a
    workspace (a home folder under git for its dotfiles, ``/``) is no project."""
    top = git_top(folder)
    if top is not None and broad_reason(top) is None:
        return top
    if broad_reason(folder) is None and project_files(folder):
        return folder
    return None


def _sources(folder: Path, names: list[str]) -> list[str]:
    """Source files at the top of ``folder`` or one folder down, hidden and heavy folders
    skipped, looking at ``SCAN_ENTRIES`` entries at most."""
    found: list[str] = []
    budget = SCAN_ENTRIES - min(len(names), SCAN_ENTRIES)
    below: list[str] = []
    for name in names[:SCAN_ENTRIES]:
        if _is_source(name):
            found.append(name)
        elif not name.startswith(".") and name not in NOT_SOURCES and (folder / name).is_dir():
            below.append(name)
    for sub in below:
        if len(found) >= SHOWN or budget <= 0:
            break
        try:
            with os.scandir(folder / sub) as entries:
                for entry in entries:
                    budget -= 1
                    if _is_source(entry.name) and entry.is_file():
                        found.append(f"{sub}/{entry.name}")
                    if budget <= 0 or len(found) >= SHOWN:
                        break
        except OSError:
            continue
    return found[:SHOWN]


def _is_source(name: str) -> bool:
    return not name.startswith(".") and os.path.splitext(name)[1].lower() in SOURCE_SUFFIXES


def _homes() -> list[Path]:
    """The user's home and those of the root and login accounts, resolved."""
    found: set[Path] = set()
    with contextlib.suppress(RuntimeError):  # no home to be found
        found.add(Path.home().resolve())
    try:
        import pwd
    except ImportError:  # Windows: the user's home is enough
        return sorted(found)
    for entry in pwd.getpwall():
        if (entry.pw_uid == 0 or 1000 <= entry.pw_uid < 65534) and entry.pw_dir.count("/") >= 2:
            found.add(Path(entry.pw_dir).resolve())
    return sorted(found)


def user_state_folder() -> Path:
    """The user's state folder for codingagent (``$XDG_STATE_HOME/codingagent``, by default
    ``~/.local/state/codingagent``): what the agent keeps between runs, outside every project."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "codingagent"
