"""The session's data: what one session is (:class:`SessionState`, saved as JSON after every
turn), what its commands gave (:class:`CommandResult`, :class:`FileRange`, :class:`ReadRequest`),
the user's answers to the LLM's questions, what commands run in (:class:`Environment`), and the
errors a user must fix (:class:`SessionError`, :class:`Damaged` for a file cut short or edited
by hand). Part of the base: it imports nothing of ours."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)
from pydantic.alias_generators import to_camel

_Model = TypeVar("_Model", bound=BaseModel)

SESSION_ID = re.compile(r"^[0-9a-f]{8}$")


class SessionError(Exception):
    """A problem the user must fix (unknown session, ambiguous prefix, session busy...)."""


class Damaged(SessionError):
    """An agent file that cannot be read back: cut short or edited by hand."""

    def __init__(self, path: Path, reason: str, what: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"{path} is not {what} ({reason}): cut short or edited by hand? Put back a good "
            "copy; 'codingagent doctor SESSION' checks all of a session's files"
        )


def damaged(path: Path, error: Exception, what: str = "a valid history file") -> Damaged:
    """The error for the agent file ``path`` that ``error`` says cannot be read back."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(map(str, first["loc"]))
        reason = f"{where}: {first['msg']}" if where else first["msg"]
    elif isinstance(error, FileNotFoundError):
        reason = "it is missing"
    else:
        reason = str(error)
    return Damaged(path, reason, what)


def read_json_model(path: Path, model: type[_Model], missing: str, what: str) -> _Model:
    """``model`` read back from the JSON file ``path``: a :class:`SessionError` saying
    ``missing`` when there is no such file, :class:`Damaged` (naming ``what`` it should be)
    when it does not read back."""
    try:
        return model.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise SessionError(missing) from None
    except ValidationError as e:
        raise damaged(path, e, what) from None


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class Answer(BaseModel):
    """The user's answer to an ASK (protocol 1.2), shown in the next prompt."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    question: str
    answer: str


class SessionState(BaseModel):
    """One session, as stored in ``sessions/{sessionId}.json``.

    The first eight fields are the protocol document's; ``workspace`` (absolute path of the
    folder the LLM works on), ``summary`` (the DONE text), ``shown_files``,
    ``search_results``, the ``follow_ups``, ``question``, ``answers``, the ``environment`` and
    ``parse_failed`` are ours.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    session_id: str = Field(pattern=SESSION_ID.pattern)
    task: str
    sequence_number: int = Field(default=1, ge=1)
    is_complete: bool = False
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
    last_results: list[CommandResult] = Field(default_factory=list)
    # A plain path (protocol 1.0) or a path with a line range (1.1).
    read_file_requests: list[ReadRequest] = Field(default_factory=list)
    workspace: str
    summary: str | None = None
    # Protocol 1.1: sha256 of each file's content as the LLM last saw it (in a file view, or as
    # it wrote it), keyed by workspace path, to warn when EDIT_FILE line numbers may be stale.
    shown_files: dict[str, str] = Field(default_factory=dict)
    # Protocol 1.1: the text blocks of the last reply's SEARCH commands, shown in the next outbox.
    search_results: list[str] = Field(default_factory=list)
    # Instructions the user added with `resume --task`, oldest first, and the sequence of the
    # outbox whose PROMPT is the newest of them.
    follow_ups: list[str] = Field(default_factory=list)
    follow_up_sequence: int | None = None
    # Protocol 1.2: the LLM's ASK waiting for the user's answer (no reply is applied meanwhile,
    # and the next prompt is written once it is answered), and the answers the current prompt
    # shows under "## Answers" (cleared when the next reply is applied).
    question: str | None = None
    answers: list[Answer] = Field(default_factory=list)
    # Protocol 1.2: what the commands run in (probed), and the digest of the Environment section
    # last shown and the prompt it was shown in, to show it again when it changes.
    environment: Environment | None = None
    environment_digest: str | None = None
    environment_sequence: int | None = None
    # Protocol 1.2: the last reply had a command the parser could not read, or no command at
    # all; with protocol = "first" the next prompt carries the full PROTOCOL section again.
    parse_failed: bool = False
    # What the model knows of the workspace listing (docs/prompts.md): each file with its size
    # rounded (None beyond prompt.changes.LISTED_FILES files), their digest, and the message
    # that last showed the listing or its changes.
    listed: dict[str, int] | None = None
    listed_digest: str | None = None
    listed_sequence: int | None = None
    # The options the session was started or resumed with (flags given on the command line
    # or the page): later runs use them unless a flag says otherwise (docs/prompts.md).
    options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    # What the model knows before it asks (docs/prompts.md): the files the user named
    # (``--file``, ``@path``), shown whole in the prompt of ``named_sequence``; the digest of the
    # Project Instructions section last shown, and the message that showed it.
    named_files: list[str] = Field(default_factory=list)
    named_sequence: int | None = None
    instructions_digest: str | None = None
    instructions_sequence: int | None = None
    # The user's check command (docs/prompts.md, "The check"): its last run, and that run's
    # output (the failing part first) while it fails; None when there is no check or it passed.
    check: CheckRun | None = None
    check_failure: str | None = None
    # The digest (protocol.replies.reply_digest) of each applied turn's reply, in turn order: what a
    # reply dropped again is checked against, without reading every turn's record.
    reply_digests: list[str] = Field(default_factory=list)
    # The user's review of the last reply (docs/review.md): what they rejected of its file
    # changes and their note, shown in the current prompt (cleared when the next reply is
    # applied).
    rejected: list[Rejected] = Field(default_factory=list)
    review_note: str | None = None

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2) + "\n"


class Rejected(BaseModel):
    """A change the user rejected in a review (docs/review.md): which file (as the LLM wrote
    it), what of it (``hunk 2 of 3 (lines 10-14 of your version)``, ``the new file``), and its
    lines as a unified diff."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    path: str
    what: str
    lines: list[str] = Field(default_factory=list)


class FileRange(BaseModel):
    """A READ_FILE request for some lines of a file (``None``: from the start, to the end)."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    path: str
    start_line: int | None = None
    end_line: int | None = None
    # The code map of the folder or file, not its text (docs/prompts.md); written only when
    # asked for, so a state file keeps the shape older versions read.
    map: bool = False

    @model_serializer(mode="wrap")
    def _without_map(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.map:
            data.pop("map", None)
        return data


# A file the LLM asked to see: its path alone (the whole file, as in protocol 1.0, so 1.0 state
# files still load), or a FileRange when it asked for some lines.
ReadRequest = str | FileRange


class CommandResult(BaseModel):
    """The outcome of one command, as the LLM sees it in ``## Previous Command Results``.

    Serialised with camelCase keys, like the rest of the session state.
    """

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    command: str
    success: bool
    summary: str
    output: str | None = None
    duration_ms: float = 0.0

    @property
    def headline(self) -> str:
        """``[OK] CREATE_FILE: Created 'a.py'`` — the first line of the result."""
        if self.command == "NOTE":  # a note about the reply itself: nothing ran or failed
            return f"[NOTE] {self.summary}"
        status = "OK" if self.success else "FAILED"
        return f"[{status}] {self.command}: {self.summary}"

    def lines(self) -> list[str]:
        """The result as the outbox shows it: the headline, then the output, if any, indented.

        Single-line output stays on the ``Output:`` line, as in the protocol document; longer
        output follows it as an indented block.
        """
        lines = [self.headline]
        if self.output is None:
            return lines
        out = self.output.rstrip("\n").split("\n")
        if len(out) == 1:
            lines.append(f"  Output: {out[0]}")
        else:
            lines.append("  Output:")
            lines.extend(f"    {line}" if line else "" for line in out)
        return lines


class CheckRun(BaseModel):
    """The check command's last run, as the prompts show it (docs/prompts.md, "The check")."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    command: str
    result: CommandResult  # ``[FAILED] CHECK: 'pytest -q' failed (exit code 1)`` and its output
    ran: int  # the message it was run for: 1 before the first prompt, n + 1 after reply n
    shown: int  # the message whose prompt shows its output (a DONE refused shows it again)


class Environment(BaseModel):
    """The facts the probe found; ``None`` where it could not tell."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    os: str | None = None  # "Linux 6.1.0-18-amd64 (Debian GNU/Linux 12 (bookworm))"
    shell: str | None = None  # the shell commands run in, resolved: "/usr/bin/bash"
    pipefail: bool = False  # a pipeline fails when any stage fails (bash -o pipefail)
    pythons: dict[str, str] = Field(default_factory=dict)  # command -> version
    pytest_module: str | None = None  # the python that can import pytest
    tools: list[str] = Field(default_factory=list)  # of TOOLS (and pytest), those found
    network: bool | None = None  # a route out exists
    sandboxed: bool = False  # an OS sandbox contains the commands
    sandbox: str | None = None  # what the sandbox does, in one line for the model
    hides_files: bool = False  # the sandbox keeps the workspace's secret files from commands
    # The workspace's secret files when the prompt was written (docs/secrets.md): hidden from
    # commands (if ``hides_files``), and those the user allowed them to read.
    secret_files: list[str] = Field(default_factory=list)
    secret_files_allowed: list[str] = Field(default_factory=list)
