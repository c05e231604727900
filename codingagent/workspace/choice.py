"""Which folder may be a session's workspace: never the whole disk, a home folder or the system.

The LLM's file commands can change any file under the workspace, so a workspace that is ``/``,
a home folder itself (``~``, ``/root``), a folder holding home folders (``/home``, ``/Users``) or
a system folder (``/etc``, ``/usr``, ...) would hand it every file the user can change. Such a
choice is refused with the reason and the way on (make a folder for the project); the command
line alone may override it (``--allow-broad-workspace``), the page never. See docs/frontends.md.

Which folders are too broad, judged on the resolved folder (symlinks, ``..``), is
:func:`codingagent.folders.broad_reason`.
"""

from __future__ import annotations

from pathlib import Path

from codingagent.folders import broad_reason
from codingagent.state import SessionError

BROAD_OVERRIDE = "--allow-broad-workspace"


def resolve_workspace(given: str | Path, base: Path) -> Path:
    """``given`` as the folder it names: ``~`` expanded, relative to ``base``, links and ``..``
    resolved."""
    return (base / Path(given).expanduser()).resolve()


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
