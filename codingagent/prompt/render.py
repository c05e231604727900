"""Render the outbox: the one self-contained prompt the user pastes into a chat LLM.

Pure: values in, text out. The layout is the protocol document's, section for section:
HEADER, PROTOCOL, CONTEXT (environment, project instructions, workspace files, the code map,
previous results, the user's answers to an ASK, requested files, search results), PROMPT.

What a prompt leaves out (docs/prompts.md): the whole task is under PROMPT in the first
prompt only (the HEADER names it: all of it when short, else its first line); with
``protocol = "first"`` (the default) a continuation prompt carries the short REMINDER instead
of the PROTOCOL section, which comes back after a reply the parser could not read and for
``show --full``; the Environment section is shown in the first prompt, when it changes, and
for ``show --full``; the listing fits a budget of characters
(:mod:`codingagent.prompt.overview`), and later prompts show only its changes
(:mod:`codingagent.prompt.changes`).

Requested files are shown with line numbers (``  12 | code``, docs/protocol.md §5.4), numbered
exactly as EDIT_FILE counts lines (only ``\\n`` ends one), and in a window: at most
``VIEW_LINES`` lines and ``FILE_VIEW_CAP`` characters, with a note saying how to see the rest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from codingagent.prompt.checkview import check_section
from codingagent.prompt.fitting import prompt_budget
from codingagent.prompt.overview import overview
from codingagent.protocol.commands import file_lines, numbered
from codingagent.protocol.manual import (
    CONTINUATION_PROMPT,
    PROTOCOL_VERSION,
    REMINDER,
    protocol_text,
    seconds,
)
from codingagent.sandbox.probe import TOOLS

if TYPE_CHECKING:
    from codingagent.settings import Settings
    from codingagent.state import Environment, SessionState

NO_COMMANDS_NOTE = (
    "(no commands were found in your last reply; write them as tags at the start of a line, "
    "as the PROTOCOL section shows)"
)
VIEW_LINES = 400  # lines of one file shown at a time
FILE_VIEW_CAP = 100_000  # characters of one file shown at a time
TASK_CHARS = 200  # a longer task is named in the HEADER by its first line, clipped


@dataclass(frozen=True)
class PromptOptions:
    """The settings that shape a prompt (see :class:`codingagent.settings.Settings`)."""

    protocol: Literal["every", "first"] = "first"
    listing_chars: int = 8000
    command_timeout: float = 30.0
    max_output: int = 4000
    token_budget: int = 100_000
    mask_secrets: bool = True  # secrets masked before the prompt is written (docs/security.md §6)
    secret_files_allow: tuple[str, ...] = ()  # secret files commands may read (docs/secrets.md)
    full_protocol: bool = False  # the full PROTOCOL and Environment whatever else holds
    context_tokens: int | None = None  # the chat's window: prompts are fitted to it

    @property
    def window_budget(self) -> int | None:
        """The token budget of this session's prompts when the chat's window is known (the
        ``context_tokens`` setting): the window less the reply's reserve
        (:func:`codingagent.prompt.fitting.prompt_budget`); None when it is not. A model
        endpoint's requests are fitted to the window its server reports (docs/models.md)."""
        return None if self.context_tokens is None else prompt_budget(self.context_tokens)

    # What the model knows before it asks (docs/prompts.md): the instruction files (None: the
    # default search; (): none) and their budget; the code map's budget in tokens (None: it
    # follows ``context_tokens``, the chat's window when known); where the code map keeps its
    # tags (the store sets it; None: no cache).
    instructions: tuple[str, ...] | None = None
    instructions_chars: int = 8000
    map_tokens: int | None = None
    cache_dir: Path | None = None
    # The window a model endpoint reported before the first prompt was written (``start
    # --model``: docs/models.md); the code map's budget follows it (prompt/mapview.py).
    model_window: int | None = None

    @classmethod
    def from_settings(cls, settings: Settings, model_window: int | None = None) -> PromptOptions:
        return cls(
            protocol=settings.protocol,
            listing_chars=settings.listing_chars,
            command_timeout=settings.command_timeout,
            max_output=settings.max_output,
            token_budget=settings.token_budget,
            mask_secrets=settings.mask_secrets,
            secret_files_allow=settings.secret_files_allow,
            context_tokens=settings.context_tokens,
            instructions=settings.instructions,
            instructions_chars=settings.instructions_chars,
            map_tokens=settings.map_tokens,
            model_window=model_window,
        )


@dataclass(frozen=True)
class FileView:
    """A requested file: its text, or ``None`` and a note saying why it is not shown.

    ``start_line``/``end_line`` are the lines the LLM asked for (``None``: from the first, to
    the last). With a text, ``note`` is said after the lines (e.g. that the file was too big
    to read whole).
    """

    path: str
    text: str | None
    note: str = ""
    start_line: int | None = None
    end_line: int | None = None
    window: int = VIEW_LINES  # at most this many lines; smaller when the prompt is over budget
    folder: Sequence[tuple[str, int]] | None = None
    base: str = ""
    code_map: str | None = None  # READ_FILE map="true": the map's lines, shown as they are


DEFAULT_PROMPT = PromptOptions()


@dataclass(frozen=True)
class OutboxContext:
    """What the turn engine gathered from the workspace for this outbox."""

    files: Sequence[tuple[str, int]] = ()  # every file of the workspace, sorted
    omitted: int = 0  # files the walk did not even count
    file_views: Sequence[FileView] = ()
    # The size of a file the walk did not stat (only files the listing shows are asked for).
    size_of: Callable[[str], int] | None = None
    # Results and search results left out to keep the prompt within its size limit.
    results_omitted: int = 0
    searches_omitted: int = 0
    # The Workspace Files lines when the model knows the listing (its changes, or that it is
    # unchanged: :mod:`codingagent.prompt.changes`); None: the full listing.
    listing: Sequence[str] | None = None
    # The Project Instructions and Code Map sections, when this prompt shows them.
    instructions: str | None = None
    code_map: str | None = None


def render_outbox(
    state: SessionState, context: OutboxContext, options: PromptOptions = DEFAULT_PROMPT
) -> str:
    sections = [
        ("HEADER", _header(state, options)),
        ("PROTOCOL", _protocol(state, options)),
        ("CONTEXT", _context(state, context, options)),
        ("PROMPT", _prompt(state)),
    ]
    return "\n\n".join(f"=== {name} ===\n{body}" for name, body in sections) + "\n"


def is_prompt(text: str) -> bool:
    """Whether ``text`` is one of our prompts (pasted back by mistake): it starts as every
    prompt :func:`render_outbox` writes does."""
    return text.lstrip().startswith("=== HEADER ===")


def environment_section(state: SessionState, options: PromptOptions) -> str | None:
    """The ``## Environment`` section, if this prompt shows it: the first prompt, one whose
    section differs from the one last shown, a rewrite of the prompt that showed it, and
    ``full_protocol``."""
    if state.environment is None:
        return None
    text = "## Environment\n" + "\n".join(_environment(state.environment, options))
    if (
        options.full_protocol
        or state.sequence_number == 1
        or state.environment_sequence == state.sequence_number
        or state.environment_digest != digest(text)
    ):
        return text
    return None


def digest(text: str) -> str:
    """A short digest of a section, to tell when it changed."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def estimate_tokens(text: str) -> int:
    """Rough token count (about four characters a token for English and code)."""
    return (len(text) + 3) // 4


def task_line(task: str, sequence: int = 1, whole: bool = False) -> str:
    """The HEADER's ``Task:``: the task on one line when short (or ``whole``), else its first
    line, clipped to ``TASK_CHARS``, and where the whole text is (the first PROMPT)."""
    flat = " ".join(task.split())
    if whole or len(flat) <= TASK_CHARS:
        return flat
    first = " ".join(task.strip().splitlines()[0].split())
    if len(first) > TASK_CHARS:
        first = first[: TASK_CHARS - 3].rstrip() + "..."
    where = "below" if sequence == 1 else "in the first message"
    return f"{first} (the whole task is under PROMPT {where})"


def _header(state: SessionState, options: PromptOptions) -> str:
    task = task_line(state.task, state.sequence_number, whole=options.full_protocol)
    follow_ups = "".join(f"Follow-up: {' '.join(f.split())}\n" for f in state.follow_ups)
    return (
        f"Session: {state.session_id}\nSequence: {state.sequence_number}\nTask: {task}\n"
        f"{follow_ups}Protocol: {PROTOCOL_VERSION}"
    )


def _prompt(state: SessionState) -> str:
    if state.follow_up_sequence == state.sequence_number:
        return (
            "The user has a follow-up instruction for this session (the work so far is above):\n"
            f"{state.follow_ups[-1]}\n"
            "Work on it, and send [DONE] with a summary when it is complete."
        )
    return state.task if state.sequence_number == 1 else CONTINUATION_PROMPT


def _protocol(state: SessionState, options: PromptOptions) -> str:
    full = (
        options.protocol == "every"
        or options.full_protocol
        or state.sequence_number == 1
        or state.parse_failed
    )
    if full:
        return protocol_text(options.command_timeout, options.max_output).rstrip("\n")
    return REMINDER.rstrip("\n")


def _environment(env: Environment, options: PromptOptions) -> list[str]:
    unknown = "unknown"
    lines = [f"OS: {env.os or unknown}"]
    if env.pipefail:
        shell = f"bash -o pipefail -c ({env.shell}): a pipeline fails when any stage fails"
    else:
        shell = "/bin/sh -c"
        if env.shell:
            name = env.shell.rsplit("/", 1)[-1]
            shell += f" ({env.shell})" if name == "sh" else f" ({name}: POSIX sh, not bash)"
        shell += "; no pipefail: a pipeline's status is its last stage's"
    lines.append(f"Shell: {shell}")
    pythons = [f"{command} is Python {version}" for command, version in env.pythons.items()]
    lines.append("Python: " + ("; ".join(pythons) or "not found"))
    tools = [t for t in env.tools if t != "pytest"]
    if env.pytest_module:
        tools.append(f"pytest ({env.pytest_module} -m pytest)")
    elif "pytest" in env.tools:
        tools.append("pytest")
    missing = [t for t in TOOLS if t not in env.tools]
    lines.append(
        "Tools found: "
        + (", ".join(tools) or "none of the usual ones")
        + (f"; not found: {', '.join(missing)}" if missing else "")
    )
    if env.network is None:
        lines.append("Network: unknown")
    elif env.network:
        lines.append("Network: there is a route out (commands may reach the network)")
    else:
        lines.append("Network: none (commands cannot reach the network)")
    if env.sandbox or env.sandboxed:  # (states written before the note was kept: sandboxed)
        note = env.sandbox or "the system is read-only, the workspace writable, /tmp private"
        lines.append(f"Sandbox: {note}")
    lines += _secret_files(env)
    lines.append(
        f"Limits: {seconds(options.command_timeout)} a command, then it is killed; "
        f"{options.max_output:,} characters of output kept (stdout and stderr merged)"
    )
    return lines


def _secret_files(env: Environment) -> list[str]:
    """What commands may read of the workspace's secret files (docs/secrets.md)."""
    lines = []
    if env.secret_files and env.hides_files:
        lines.append(
            f"Secret files: {_some(env.secret_files)}: commands read them as empty files (the"
            " sandbox hides them). If a command needs one, ASK the user to allow it by name"
            " (setting secret_files_allow); READ_FILE shows them with their secrets masked"
        )
    elif env.secret_files:
        lines.append(
            f"Secret files: {_some(env.secret_files)}: no sandbox hides them, so commands can"
            " read them; their secrets are masked in what you are shown"
        )
    if env.secret_files_allowed:
        lines.append(f"Secret files commands may read: {_some(env.secret_files_allowed)}")
    return lines


def _some(paths: list[str], most: int = 10) -> str:
    more = f" and {len(paths) - most} more" if len(paths) > most else ""
    return ", ".join(paths[:most]) + more


def _context(state: SessionState, context: OutboxContext, options: PromptOptions) -> str:
    environment = environment_section(state, options)
    parts = [environment] if environment else []
    if context.instructions:
        parts.append(context.instructions)
    parts.append("## Workspace Files\n" + _listing(context, options.listing_chars))
    if context.code_map:
        parts.append(context.code_map)
    if state.sequence_number > 1:
        results = [line for r in state.last_results for line in r.lines()]
        if all(r.command == "NOTE" for r in state.last_results):  # notes only, or nothing
            results.append(NO_COMMANDS_NOTE)
        results += _omitted(context.results_omitted, "result")
        parts.append("## Previous Command Results\n" + "\n".join(results))
    review = _review(state)  # what the user rejected of the last reply's file changes
    if review:
        parts.append(review)
    check = check_section(state, options.full_protocol)  # the user's check command, if any
    if check:
        parts.append(check)
    if state.answers:
        answers = (f"You asked: {a.question}\nThe user answered: {a.answer}" for a in state.answers)
        parts.append("## Answers\n" + "\n\n".join(answers))
    if context.file_views:
        views = [_file_view(view, options.listing_chars, context) for view in context.file_views]
        parts.append("## Requested File Contents\n" + "\n".join(views))
    if state.search_results or context.searches_omitted:
        searches = [*state.search_results, *_omitted(context.searches_omitted, "search result")]
        parts.append("## Search Results\n" + "\n\n".join(searches))
    return "\n\n".join(parts)


def _review(state: SessionState) -> str | None:
    """The user's review of the last reply's file changes (docs/review.md): each change they
    rejected, with its lines, and their note; None when they rejected nothing and said
    nothing (or no review was asked for)."""
    if not state.rejected and not state.review_note:
        return None
    if state.rejected:
        lines = [
            "The user reviewed your file changes before they were written and rejected these; "
            "they are not in the workspace (the rest was written, and a file written in part is "
            "shown as it now is under Requested File Contents):"
        ]
    else:
        lines = ["The user reviewed your file changes and accepted all of them."]
    for rejected in state.rejected:
        lines.append(f"[REJECTED BY USER] {rejected.path}: {rejected.what}")
        lines += [f"    {line}" for line in rejected.lines]
    if state.review_note:
        lines.append(f"Note from the user: {state.review_note}")
    return "## The User's Review\n" + "\n".join(lines)


def _omitted(count: int, what: str) -> list[str]:
    if not count:
        return []
    return [
        f"({count:,} more {what}{'s' if count > 1 else ''} not shown: over the prompt's size limit)"
    ]


def _listing(context: OutboxContext, budget: int) -> str:
    if context.listing is not None:
        return "\n".join(context.listing)
    lines = overview(context.files, budget, context.omitted, size_of=context.size_of)
    return "\n".join(lines) or "(empty workspace)"


def _file_view(view: FileView, listing_chars: int, context: OutboxContext) -> str:
    if view.code_map is not None:
        body = (
            ["(code map)", *view.code_map.splitlines()]
            if view.code_map
            else ["(code map: no classes, functions or methods found)"]
        )
    elif view.folder is not None:
        lines = overview(view.folder, listing_chars, asked=view.base, size_of=context.size_of)
        body = lines or ["(empty folder)"]
    elif view.text is None:
        body = [f"({view.note})"]
    else:
        body = _numbered_window(view)
    return "\n".join([f"--- {view.path} ---", *body, f"--- end {view.path} ---"])


def _numbered_window(view: FileView) -> list[str]:
    """The lines the LLM asked for, numbered, at most one window of them, and notes."""
    assert view.text is not None
    lines = file_lines(view.text)
    notes = [view.note] if view.note else []
    start = view.start_line or 1
    if not lines:
        return ["(empty file)", *_notes(notes)]
    if start > len(lines):
        return [f"(the file has {_lines(len(lines))}; nothing to show from line {start})"]
    stop = min(len(lines), view.end_line or len(lines), start + view.window - 1)
    shown: list[str] = []
    budget = FILE_VIEW_CAP
    for number in range(start, stop + 1):
        line = lines[number - 1]
        if len(line) > budget:
            if not shown:  # one huge line: show its head rather than nothing
                shown.append(line[:budget])
                notes.append(
                    f"line {number} has {len(line):,} characters; only its first "
                    f"{budget:,} are shown"
                )
            break
        budget -= len(line)
        shown.append(line)
    last = start + len(shown) - 1
    if last == len(lines) and shown[-1] == lines[-1]:  # the last line shown whole
        notes += _ending(view.text, lines)
    if last < len(lines):
        notes.append(
            f"{len(lines) - last:,} more {'line' if len(lines) - last == 1 else 'lines'} below; "
            f'READ_FILE with start_line="{last + 1}" to see them'
        )
    return [*numbered(shown, start), *_notes(notes)]


def _ending(text: str, lines: list[str]) -> list[str]:
    """What the numbered lines cannot show of a file's end: a missing final newline, or
    blank last lines (whitespace only)."""
    if not text.endswith("\n"):
        return ["no newline at the end of the file"]
    kept = "\n".join(lines).rstrip()
    blank = len(lines) - (kept.count("\n") + 1 if kept else 0)
    if not blank:
        return []
    return [f"the file ends with {blank} blank line{'s' if blank > 1 else ''}"]


def _notes(notes: list[str]) -> list[str]:
    return [f"({note})" for note in notes]


def _lines(n: int) -> str:
    return f"{n:,} line" if n == 1 else f"{n:,} lines"
