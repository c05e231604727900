"""Which folder may be a session's workspace: never the whole disk, a home folder or the system.

The LLM's file commands can change any file under the workspace, so a workspace that is ``/``,
a home folder itself (``~``, ``/root``), a folder holding home folders (``/home``, ``/Users``) or
a system folder (``/etc``, ``/usr``, ...) would hand it every file the user can change. Such a
choice is refused with the reason and the way on (make a folder for the project); the command
line alone may override it (``--allow-broad-workspace``), the page never. See docs/frontends.md.

The check runs on the resolved folder (symlinks, ``..``), so ``../..`` or a link to ``/`` is
judged by what it names.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from codingagent.state import SessionError

BROAD_OVERRIDE = "--allow-broad-workspace"

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


def resolve_workspace(given: str | Path, base: Path) -> Path:
    """``given`` as the folder it names: ``~`` expanded, relative to ``base``, links and ``..``
    resolved."""
    return (base / Path(given).expanduser()).resolve()


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


def check_workspace(folder: Path, allow_broad: bool = False, override: str | None = None) -> None:
    """Refuse (a SessionError) a workspace too broad to hand to the LLM, unless ``allow_broad``;
    ``override`` names the way to insist, where there is one (the command line's flag)."""
    reason = broad_reason(folder)
    if reason is None or allow_broad:
        return
    insist = (
        f", or pass {override} if the LLM may really change any file there"
        if override
        else "; the page never starts a session there"
    )
    raise SessionError(
        f"Refused workspace {folder}: {reason}, and the LLM's file commands could change any "
        f"file in it. Make a folder for the project (mkdir ~/myproject) and use that as the "
        "workspace"
        f"{insist}"
    )


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
