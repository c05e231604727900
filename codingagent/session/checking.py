"""The user's check command (docs/prompts.md, "The check"): a command such as ``pytest -q``,
named by the ``check`` setting (``--check``, kept with the session) or confirmed from the
workspace's AGENTS.md, run in the sandbox before the first prompt and after every turn that
changed files; its result is the prompt's ``## Check`` section, and DONE is refused while it
fails.

It runs as a RUN_COMMAND does (the session's sandbox, time limit and limits, the workspace's
secret files hidden), never asking for approval: the user named it. Inside a turn it runs in
the turn's transaction, its changes to the workspace kept for undo by the turn's ``watch`` as a
RUN_COMMAND's are (:mod:`codingagent.transaction.capture`); before the first prompt, and when
``resume`` is given a new check, it runs outside any turn and what it writes stays, as if the
user had run it. A turn runs it at most once: at a DONE, when the turn changed files, else
after its last command, when it changed files; a turn that changed no file keeps the last
result (a check the session has no result for yet is run anyway).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from codingagent.execute import TurnOutcome
from codingagent.prompt.checkview import CAPTURED, CHECK, failing_first, last_line
from codingagent.prompt.outbox import write_outbox
from codingagent.prompt.render import PromptOptions
from codingagent.protocol.manual import seconds
from codingagent.records.store import SessionStore, open_workspace
from codingagent.sandbox.shell import Shell
from codingagent.secrecy.masking import for_session
from codingagent.secrecy.secret_files import SKIP_DIRS, secret_files
from codingagent.state import CheckRun, CommandResult, SessionState
from codingagent.transaction.capture import Watch
from codingagent.workspace import Workspace

FAILURE_KEPT = 16_000  # characters of a failing check's output kept in ``check_failure``
Running = Callable[[str], AbstractContextManager[None]]


def _quiet(command: str) -> AbstractContextManager[None]:
    return nullcontext()


@dataclass(frozen=True)
class Check:
    """The check command and the shell it runs in."""

    command: str
    shell: Shell  # the session's sandbox and limits; never asks, reads ``CAPTURED`` characters
    max_output: int  # characters of its output a prompt shows (the RUN_COMMAND limit)
    running: Running = _quiet  # held while it runs (the console's spinner)


def session_check(command: str | None, shell: Shell, running: Running = _quiet) -> Check | None:
    """The check ``command`` names (None or blank: none), run in a copy of ``shell`` that does
    not ask for approval and reads enough output to find the failing part in."""
    if command is None or not command.strip():
        return None
    plain = copy.copy(shell)
    plain.approve = None
    plain.max_output = max(shell.max_output, CAPTURED)
    return Check(command.strip(), plain, shell.max_output, running)


def run_check(
    check: Check, ws: Workspace, session_id: str, watch: Watch | None = None
) -> tuple[CommandResult, str | None, list[str]]:
    """Run the check in the workspace (inside a turn, with its ``watch``): its result as the
    prompt shows it, its output when it failed (for ``state.check_failure``), and the files
    it created, changed or deleted."""
    root, tree = ws.root, ws.tree
    masker = for_session(session_id)
    allow = check.shell.secret_files_allow
    found = secret_files(root, allow, masker, tree.stats(SKIP_DIRS), tree.version)
    hidden = [str(root / rel) for rel in found.hidden] if check.shell.hides_files else []
    layer = watch.before(f"CHECK '{check.command}'") if watch is not None else None
    with check.running(check.command):
        ran = check.shell.run(check.command, root, hidden, layer)
    ws.forget_paths()  # it may have made a symlink, or a folder one
    changed = watch.after().paths if watch is not None else []
    if layer is None:
        tree.drop()  # it may have written to the workspace: only a new walk knows what
    first, _, more = check.command.partition("\n")
    shown = f"'{first} ...'" if more else f"'{first}'"
    if ran.timed_out:
        summary = f"{shown} timed out after {seconds(check.shell.timeout)}"
    else:
        verb = "passed" if ran.exit_code == 0 else "failed"
        summary = f"{shown} {verb} (exit code {ran.exit_code})"
    output = ran.output or "(no output)"
    took = {"duration_ms": ran.duration_s * 1000}
    if ran.exit_code == 0 and not ran.timed_out:
        passed = CommandResult(command=CHECK, success=True, summary=summary, **took)
        return passed.model_copy(update={"output": last_line(output)}), None, changed
    shown = failing_first(output, check.max_output)
    result = CommandResult(command=CHECK, success=False, summary=summary, output=shown, **took)
    return result, failing_first(output, max(FAILURE_KEPT, check.max_output)), changed


class Checking:
    """One turn's check: run at most once, when the turn changed files (or the session has
    no result of this command yet); the result a DONE asks for, and what the state keeps."""

    def __init__(
        self,
        check: Check,
        state: SessionState,
        ws: Workspace,
        watch: Watch,
        on_result: Callable[[CommandResult], None] | None = None,
    ) -> None:
        self.check = check
        kept = state.check
        self.standing = kept if kept is not None and kept.command == check.command else None
        self._ws = ws
        self._watch = watch
        self._session_id = state.session_id
        self._on_result = on_result
        self.ran: CommandResult | None = None
        self.failure: str | None = None
        self.asked = False  # a DONE asked for the result

    def now(self, outcome: TurnOutcome) -> CommandResult:
        """The check's result after what the turn did so far (a DONE asks)."""
        self.asked = True
        return self.settle(outcome)

    def settle(self, outcome: TurnOutcome) -> CommandResult:
        """Run the check if the turn changed files, or nothing says how it fares yet."""
        if self.ran is None and (outcome.changed or self.standing is None):
            self.ran, self.failure, changed = run_check(
                self.check, self._ws, self._session_id, self._watch
            )
            outcome.written.clear()  # a command may change any file: read back
            outcome.changed += [path for path in changed if path not in outcome.changed]
            for path in changed:
                outcome.shown.pop(path, None)
            if self._on_result is not None:
                self._on_result(self.ran)
        if self.ran is not None:
            return self.ran
        assert self.standing is not None
        return self.standing.result

    def record(self, state: SessionState) -> None:
        """Keep the run in the state (after the turn advanced it): shown in its next prompt;
        a result a DONE was refused on is shown again."""
        sequence = state.sequence_number
        if self.ran is not None:
            state.check = CheckRun(
                command=self.check.command, result=self.ran, ran=sequence, shown=sequence
            )
            state.check_failure = self.failure
        elif self.asked and self.standing is not None and not self.standing.result.success:
            state.check = self.standing.model_copy(update={"shown": sequence})


def turn_checking(
    check: Check | None,
    state: SessionState,
    ws: Workspace,
    watch: Watch,
    on_result: Callable[[CommandResult], None] | None = None,
) -> Checking | None:
    """The turn's :class:`Checking`, or None without a check (a check dropped since the last
    turn is dropped from the state)."""
    if check is None:
        state.check = state.check_failure = None
        return None
    return Checking(check, state, ws, watch, on_result)


def first_check(state: SessionState, check: Check | None, ws: Workspace) -> None:
    """Run the check for the prompt the state is at (before the first prompt, or for a check
    named at ``resume``), outside any turn; without a check, none is kept."""
    if check is None:
        state.check = state.check_failure = None
        return
    result, failure, _ = run_check(check, ws, state.session_id)
    sequence = state.sequence_number
    state.check = CheckRun(command=check.command, result=result, ran=sequence, shown=sequence)
    state.check_failure = failure


def check_anew(
    store: SessionStore,
    state: SessionState,
    check: Check | None,
    prompt: PromptOptions,
    note: Callable[[str], None] | None = None,
) -> bool:
    """At ``resume``: a check the session has no result of (a new ``--check``) is run, and a
    dropped one (``--check ''``) dropped, and the current prompt written again; whether it
    was. ``note`` is told the result."""
    kept = state.check.command if state.check is not None else None
    if kept == (check.command if check is not None else None):
        return False
    first_check(state, check, open_workspace(store, state))
    write_outbox(store, state, prompt, keep_shown=True)
    store.save(state)
    if note is not None:
        note(f"Check: {state.check.result.headline}" if state.check else "Check: none any more")
    return True
