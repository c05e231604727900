"""Where ``codingagent start`` puts a new session, and what it says about it before and after
the first prompt: the project the user stands in (worked on in place, the agent's folders kept
outside it), or the seed layout; never an empty workspace in silence (docs/commands.md, "Where
the agent's folders go")."""

from __future__ import annotations

import shlex
from pathlib import Path

from codingagent.folders import broad_reason, project_files
from codingagent.frontends.console import console, safe_text, say
from codingagent.frontends.options import root_given, run_place
from codingagent.records.runfolder import SEED, Place, attach

TASK_SHOWN = 60  # a longer task is written TASK in the command a note suggests


def settle(root: Path, workspace: Path | None) -> Place:
    """The run folder of a new session, made ready: ``root`` when ``--root`` was given, else
    where :func:`~codingagent.frontends.options.run_place` puts it, a project's folder of the
    agent's made with its link to the project. A project too broad to be a workspace
    (``--allow-broad-workspace``) gets no folder of the agent's: the run stays here, in the
    seed layout, as it always did."""
    if root_given():
        return Place(root)
    found = run_place(workspace)
    if found.project is not None and broad_reason(found.project) is not None:
        return Place(Path.cwd().resolve())
    attach(found)
    return found


def empty_workspace_note(folder: Path, root: Path, task: str) -> None:
    """Say so, before the first prompt is written, when the model would be handed the empty
    ``folder`` while the run folder ``root`` or the current folder holds a project, with the
    command that works on that project."""
    if _holds_files(folder):
        return
    here = Path.cwd().resolve()
    for around in dict.fromkeys((root.resolve(), here)):
        found = [name for name in project_files(around) if name.split("/")[0] not in SEED]
        if not found:
            continue
        where = "." if around == here else shlex.quote(str(around))
        shown = shlex.quote(task) if len(task) <= TASK_SHOWN and "\n" not in task else "TASK"
        say(
            f"note: the workspace {folder} is empty, while {around} holds a project "
            f"({', '.join(found)}): the model will see none of its files. To work on that "
            f"project instead: codingagent start {shown} --workspace {where}",
            "yellow",
        )
        return


def say_started(session_id: str, workspace: Path, place: Place) -> None:
    """The session's first line; for a project, where the session keeps its prompts,
    replies and records, and where replies are saved."""
    on = " (the project itself: edits land in its files)" if place.project is not None else ""
    console.print(
        safe_text("Session ")
        + safe_text(session_id, "bold")
        + safe_text(f" started on {workspace}{on}")
    )
    if place.project is None:
        return
    say(
        f"The agent's folders (prompts, replies, records) are in {place.root}, outside the "
        f"project; codingagent run in {place.project} finds them"
    )
    say(f"Save the LLM's replies into {place.root / 'inbox'} (or: codingagent paste < reply.txt)")


def _holds_files(folder: Path) -> bool:
    """Whether ``folder`` holds anything (a missing folder holds nothing). A ``.gitkeep`` counts:
    a run folder that ships its empty ``workspace/`` (this repository, for its demo) meant it."""
    try:
        return any(folder.iterdir())
    except OSError:
        return False
