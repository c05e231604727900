"""A session's life outside its turns: :func:`new_session` and :func:`start_session` create one
and write its first prompt, :func:`follow_up_session` gives a complete session a new task,
:func:`answer_question` records the user's answer to the LLM's ASK, and :func:`make_shell`
builds the shell RUN_COMMAND runs in from the settings (:func:`approval_policy`: who approves
its commands; :class:`ObservedShell`: the listener told while each runs)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from codingagent.faults import Fault, describe, remedy
from codingagent.prompt.outbox import write_outbox
from codingagent.prompt.render import DEFAULT_PROMPT, PromptOptions
from codingagent.records.store import CACHE, SessionStore, open_workspace
from codingagent.sandbox.backends import SandboxUnavailable, default_approval
from codingagent.sandbox.probe import probe
from codingagent.sandbox.shell import Limits, Shell, ShellResult
from codingagent.secrecy import file_scan
from codingagent.session.checking import Check, first_check, session_check
from codingagent.session.seams import FrontEnd
from codingagent.settings import Settings, SettingsError
from codingagent.state import Answer, Environment, SessionError, SessionState, utc_now
from codingagent.transaction.journal import refuse_if_interrupted
from codingagent.workspace.choice import check_workspace


def start_session(
    store: SessionStore,
    task: str,
    workspace: Path | None = None,
    prompt: PromptOptions = DEFAULT_PROMPT,
    environment: Callable[[Path], Environment] | None = None,
    *,
    allow_broad: bool = False,
    override: str | None = None,
    files: Sequence[str] = (),
    check: Check | None = None,
) -> tuple[SessionState, Path]:
    """Create a session and write its first outbox; ``environment`` probes the workspace
    folder for the prompt's Environment section. A workspace too broad to hand to the LLM
    (``/``, a home folder, a system folder) is refused unless ``allow_broad``; ``override``
    names the front end's way to insist (:func:`~codingagent.workspace.choice.check_workspace`).
    ``files``: the workspace paths the user named (``--file``, ``@path``), shown whole in the
    first prompt (docs/prompts.md). ``check``: the user's check command, run before the first
    prompt is written, which shows its result (:mod:`codingagent.session.checking`).
    """
    if not task.strip():
        raise SessionError("The task is empty; say what the LLM should do")
    folder = Path(workspace).resolve() if workspace else store.workspace
    check_workspace(folder, allow_broad, override)
    store.ensure_dirs()
    if not folder.is_dir():
        raise SessionError(f"Workspace folder does not exist: {folder}")
    state = SessionState(
        session_id=store.new_id(),
        task=task.strip(),
        workspace=str(folder),
        environment=environment(folder) if environment else None,
        named_files=list(files),
        named_sequence=1 if files else None,
        read_file_requests=list(files),
    )
    store.save(state)  # first: a missing outbox is rewritten by `show` and `resume`
    try:
        if check is not None:
            first_check(state, check, open_workspace(store, state))
        outbox = write_outbox(
            store, state, prompt, keep_shown=True
        ).path  # the files it shows whole: kept
        store.save(state)  # what the outbox showed
    except OSError as e:
        raise Fault(
            f"Session {state.session_id} was created, but its first prompt was not written: "
            f"{describe(e)}. {remedy(e).capitalize()}, then run 'codingagent resume "
            f"{state.session_id}'"
        ) from e
    return state, outbox


def follow_up_session(
    store: SessionStore,
    session_id: str,
    instruction: str,
    prompt: PromptOptions = DEFAULT_PROMPT,
) -> Path:
    """Give the session a follow-up instruction from the user (``resume --task``).

    A completed session is reopened, keeping its history; the current outbox is rewritten so
    its PROMPT is the instruction, and every later HEADER carries it.
    """
    if not instruction.strip():
        raise SessionError("The follow-up task is empty; say what the LLM should do next")
    state = store.load(session_id)
    refuse_if_interrupted(store, session_id)
    state.follow_ups.append(instruction.strip())
    state.follow_up_sequence = state.sequence_number
    state.is_complete = False
    return _new_prompt(store, state, prompt)


def name_files(
    store: SessionStore,
    session_id: str,
    files: Sequence[str],
    prompt: PromptOptions = DEFAULT_PROMPT,
) -> Path:
    """Show the files the user named (``resume --file``, ``@path`` in a follow-up) whole in
    the current prompt, which is written again."""
    state = store.load(session_id)
    refuse_if_interrupted(store, session_id)
    asked = [r if isinstance(r, str) else r.path for r in state.read_file_requests]
    state.read_file_requests += [path for path in files if path not in asked]
    state.named_files = list(dict.fromkeys([*state.named_files, *files]))
    state.named_sequence = state.sequence_number
    return _new_prompt(store, state, prompt)


def answer_question(
    store: SessionStore, session_id: str, answer: str, prompt: PromptOptions = DEFAULT_PROMPT
) -> Path:
    """Record the user's answer to the LLM's ASK and write the prompt that waited for it.

    The turn that asked wrote no prompt (one without the answer would only be a wrong one to
    paste): it is written here, with the answer under "## Answers", and the session takes
    replies again.
    """
    if not answer.strip():
        raise SessionError("The answer is empty; say what the LLM should know")
    state = store.load(session_id)
    if state.question is None:
        raise SessionError(f"Session {session_id} has no question waiting for an answer")
    state.answers.append(Answer(question=state.question, answer=answer.strip()))
    state.question = None
    return _new_prompt(store, state, prompt)


def _new_prompt(store: SessionStore, state: SessionState, prompt: PromptOptions) -> Path:
    """The current prompt written again for what the user just added, and the state saved."""
    state.updated_at = utc_now()
    outbox = write_outbox(store, state, prompt, keep_shown=True).path
    store.save(state)
    return outbox


def make_shell(settings: Settings, store: SessionStore) -> Shell:
    """The Shell the settings ask for; the agent's own folders are read-only inside it."""
    try:
        return Shell(
            timeout=settings.command_timeout,
            max_output=settings.max_output,
            sandbox=settings.sandbox,
            read_only=store.protected,
            limits=Limits.of(settings),
            hide=settings.sandbox_hide,
            secret_files_allow=settings.secret_files_allow,
        )
    except SandboxUnavailable as e:
        raise SettingsError(f"sandbox = '{settings.sandbox}' was asked for, but {e}") from None
    except ValueError as e:  # a backend name the registry does not know
        raise SettingsError(str(e)) from None


def new_session(
    store: SessionStore,
    settings: Settings,
    task: str,
    workspace: Path | None = None,
    *,
    allow_broad: bool = False,
    override: str | None = None,
    files: Sequence[str] = (),
    window: int | None = None,
) -> SessionState:
    """A new session, its first prompt written with the settings' prompt options and the
    Environment section probed in the sandbox its commands will run in (every front end).
    ``allow_broad``, ``override`` and ``files``: as for :func:`start_session`; ``window``: the
    model's window when its endpoint reported it (the code map's budget follows it)."""
    shell = make_shell(settings, store)
    state, _ = start_session(
        store,
        task,
        workspace,
        PromptOptions.from_settings(settings, window),
        environment=lambda folder: probe(shell, folder),
        allow_broad=allow_broad,
        override=override,
        files=files,
        check=session_check(settings.check, shell),
    )
    return state


def set_up_shell(
    shell: Shell, policy: str, listener: FrontEnd, workspace: Path, store: SessionStore
) -> Shell:
    """``shell`` set up for a loop: its commands approved as ``policy`` says (``ask``: by
    ``listener``), the sandbox and what it hides told to the listener, the secret scan's
    record kept for the next process (per workspace)."""
    if policy == "deny":
        shell.approve = lambda command: False
    elif policy == "ask":
        shell.approve = listener.approve
    listener.note(f"RUN_COMMAND: {shell.sandbox_reason}; approval: {policy}")
    if shell.isolated:
        listener.note(f"Hidden from commands: {hidden_line(shell.hidden_paths(), workspace)}")
    key = hashlib.sha256(os.fsencode(str(workspace))).hexdigest()[:16]
    file_scan.keep_clean_in(store.sessions / CACHE / f"clean-files-{key}.marshal")
    return shell


def approval_policy(
    settings: Settings, shell: Shell, interactive: bool, automatic: bool = False
) -> str:
    """``allow``, ``ask`` or ``deny``: the setting, else ask where no OS sandbox is active and
    someone can answer. An automatic loop with neither a sandbox nor someone to ask needs
    the setting: a SettingsError says so."""
    if settings.commands is None and automatic and not shell.isolated and not interactive:
        raise SettingsError(
            f"A model would run RUN_COMMANDs unattended, and {shell.sandbox_reason}; run "
            "it on a terminal to approve each command, or choose --commands allow (or deny)"
        )
    return settings.commands or default_approval(shell.isolated, interactive)


class ObservedShell:
    """The Shell, telling the listener while each command runs (a console spinner)."""

    def __init__(self, shell: Shell, listener: FrontEnd) -> None:
        self._shell = shell
        self._listener = listener

    def __getattr__(self, name: str) -> object:
        return getattr(self._shell, name)

    def run(self, command: str, *args: Any, **kwargs: Any) -> ShellResult:
        """:meth:`Shell.run`, the listener told while it runs."""
        with self._listener.running(command):
            return self._shell.run(command, *args, **kwargs)


def hidden_line(hidden: list[str], workspace: Path) -> str:
    """The hidden paths for the console, without the workspace or a folder holding it: those
    are not hidden from commands (the workspace is bound back on top), so the line would
    contradict the workspace in use. See docs/frontends.md."""
    shown = [p for p in hidden if not workspace.is_relative_to(p)]
    if len(shown) < len(hidden):
        shown.append("all around the workspace (not the workspace itself)")
    return ", ".join(shown) or "nothing"
