"""Where a run's folders are: the seed layout, or a project's folder in the user's state.

Two layouts (docs/commands.md, "Where the agent's folders go"):

- **The seed layout**: ``workspace/ outbox/ inbox/ sessions/`` under the run folder (``--root``,
  else the current folder). Kept for an empty folder and for a folder that already has it.
- **A project's folder**: started inside a project (a git work tree, a folder holding a
  project's files), the project is the workspace and the agent's folders live in
  ``$XDG_STATE_HOME/codingagent/projects/<name>-<hash of the project's path>/``, with
  ``workspace`` there a link to the project. Nothing of the agent's is then in the project: not
  in its ``git status``, its listing or its tools' runs.

:func:`place` decides from where the user stands, the same way for every command, so
``resume``, ``step``, ``log``, ``diff``, ... run in the project (or a folder in it) find the
sessions ``start`` made there; an explicit ``--root`` is never second-guessed (the front end
does not ask).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import NamedTuple

from codingagent.folders import git_top, project_of, user_state_folder

PROJECTS = "projects"  # in the user's state folder: one folder per project
SEED = ("workspace", "outbox", "inbox", "sessions")  # the seed layout's folders


class Place(NamedTuple):
    """A run folder, and the project its ``workspace`` links to (None: the seed layout)."""

    root: Path
    project: Path | None = None


def is_run_folder(folder: Path) -> bool:
    """Whether ``folder`` has the seed layout: its ``workspace/`` and one of ``outbox/``,
    ``inbox/``, ``sessions/`` (a project's own ``workspace/`` or ``sessions/`` folder alone
    does not make it one)."""
    return (folder / "workspace").is_dir() and any((folder / name).is_dir() for name in SEED[1:])


def agent_folder(project: Path) -> Path:
    """The folder that holds the agent's folders for ``project`` (a resolved path): named
    after the project, with a hash of its path so two projects of one name stay apart."""
    digest = hashlib.sha256(os.fsencode(project)).hexdigest()[:10]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", project.name).strip("-.") or "project"
    return user_state_folder() / PROJECTS / f"{name[:40]}-{digest}"


def place(here: Path, workspace: Path | None = None) -> Place:
    """The run folder for a command run in ``here`` without ``--root`` (``workspace``: the
    folder ``start --workspace`` names).

    ``here`` with the seed layout is the run folder, as it always was. Otherwise the run
    goes to the agent's folder of the project: ``workspace`` when given, else the nearest
    folder up from ``here`` whose agent's folder holds sessions, else the top of the git work
    tree ``here`` is in (unless that top has the seed layout: then it is the run folder),
    else ``here`` when it holds a project's files. An empty folder (or one holding no
    project) gets the seed layout.
    """
    here = here.resolve()
    if is_run_folder(here):
        return Place(here)
    if workspace is not None:
        given = workspace.resolve()
        return Place(agent_folder(given), given)
    for folder in (here, *here.parents):
        if (agent_folder(folder) / "sessions").is_dir():
            return Place(agent_folder(folder), folder)
    top = git_top(here)
    if top is not None and top != here and is_run_folder(top):
        return Place(top)
    project = project_of(here)
    if project is None:
        return Place(here)
    return Place(agent_folder(project), project)


def attach(found: Place) -> None:
    """Make the agent's folder of ``found.project`` (when it has one) with its ``workspace``
    link to the project; a link to another folder there is refused (a SessionError)."""
    from codingagent.state import SessionError  # (pydantic: only when a session is made)

    if found.project is None:
        return
    link = found.root / "workspace"
    found.root.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and Path(os.readlink(link)) == found.project:
        return
    if link.is_symlink() or link.exists():
        raise SessionError(
            f"{link} is not a link to {found.project}; move it away, or pass --root to say "
            "where the agent's folders are"
        )
    link.symlink_to(found.project, target_is_directory=True)
