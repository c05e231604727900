"""The requests an endpoint is sent (docs/models.md, "What a request holds"): built so a
provider's prompt cache helps and their size stays bounded.

* The PROTOCOL is the system text, the same in every request of a session; the user message is
  the prompt without its PROTOCOL section (full or the short reminder alike).
* With ``model_history_turns``, earlier turns go before the prompt, oldest first, so a request
  starts with the one before it. Turns beyond ``model_history_chars`` (counted from the newest)
  are trimmed: the prompt to its HEADER and result status lines, the reply to its tag lines.
* A reply's leading thinking (a ``<think>`` block, harmony's analysis, ...) is not sent back.
* After a reply the output limit cut (``finish_reason: length``), the next message starts with
  a note naming the last command that was complete and the one left unclosed.
"""

from __future__ import annotations

import re

from codingagent.protocol.commands import ParseError
from codingagent.protocol.parser import parse
from codingagent.protocol.reasoning import split_reasoning
from codingagent.records.history import TurnRecord
from codingagent.records.store import SessionStore
from codingagent.session.seams import Prompt
from codingagent.sources.providers.wire import CUT

_SECTION = re.compile(r"^=== ([A-Z]+) ===\n", re.MULTILINE)
TRIMMED = "(an older turn: only its status lines are kept here)"


def without_protocol(prompt: str) -> str:
    """``prompt`` without its PROTOCOL section (it goes as the system text)."""
    sections = _sections(prompt)
    names = [name for name, _ in sections]
    if "PROTOCOL" in names:
        del sections[names.index("PROTOCOL")]
    return "".join(text for _, text in sections)


def trimmed_prompt(prompt: str) -> str:
    """An old prompt kept short: its HEADER and its results' status lines."""
    kept = [text.rstrip("\n") for name, text in _sections(prompt) if name == "HEADER"][:1]
    results = prompt.partition("## Previous Command Results\n")[2].partition("\n\n")[0]
    status = [line for line in results.splitlines() if line.startswith("[")]
    return "\n".join([*kept, TRIMMED, *status]) + "\n"


def trimmed_reply(reply: str) -> str:
    """An old reply kept short: its tag lines (what it asked for), not their bodies."""
    tags = [line for line in reply.splitlines() if line.lstrip().startswith("[")]
    return "\n".join([TRIMMED, *tags]) + "\n"


def history(store: SessionStore, prompt: Prompt, turns: int, budget: int) -> list[dict[str, str]]:
    """The last ``turns`` turns as user/assistant pairs, oldest first; turns past ``budget``
    characters (from the newest) trimmed."""
    if not turns:
        return []
    pairs: list[tuple[str, str]] = []
    for folder in store.turns(prompt.session_id)[-turns:]:
        turn = TurnRecord(folder)
        outbox = store.outbox_path(prompt.session_id, turn.meta()["sequence"])
        if not outbox.is_file():  # the user cleaned outbox/: that turn is left out
            continue
        answered = _without_thinking(turn.reply_path.read_bytes().decode("utf-8", "replace"))
        pairs.append((without_protocol(outbox.read_text(encoding="utf-8")), answered))
    messages: list[dict[str, str]] = []
    used = 0
    for asked, answered in reversed(pairs):
        used += len(asked) + len(answered)
        if used > budget:
            asked, answered = trimmed_prompt(asked), trimmed_reply(answered)
        messages[:0] = [
            {"role": "user", "content": asked},
            {"role": "assistant", "content": answered},
        ]
    return messages


def cut_note(store: SessionStore, prompt: Prompt) -> str:
    """A note for the model when its last reply was cut by the output limit (else "")."""
    turns = store.turns(prompt.session_id)
    if not turns:
        return ""
    turn = TurnRecord(turns[-1])
    meta = turn.meta()
    if meta.get("finishReason") != CUT or meta.get("sequence") != prompt.sequence - 1:
        return ""
    reply = turn.reply_path.read_bytes().decode("utf-8", "replace")
    commands = parse(split_reasoning(reply).answer)
    complete = [c for c in commands if not isinstance(c, ParseError)]
    after = f"[{complete[-1].name}] at line {complete[-1].line}" if complete else "no command"
    last = commands[-1] if commands else None
    unclosed = ""
    if isinstance(last, ParseError) and "no closing" in last.message:
        unclosed = f" [{last.name}] at line {last.line} was left unclosed and was not run."
    return (
        "NOTE: your last reply was cut off by the output limit (max_tokens) after "
        f"{after}.{unclosed} Continue from there in smaller steps: one file or one command "
        "per reply when they are long.\n\n"
    )


def _without_thinking(reply: str) -> str:
    """A reply as the model is shown it again: its leading thinking left out (models are not
    sent their own reasoning back, and it would take the window's room)."""
    reasoned = split_reasoning(reply)
    if reasoned.answer == reply:
        return reply
    # Never an empty message (some APIs refuse one): reasoning that never closed left nothing.
    return reasoned.answer.lstrip("\n") or "(only reasoning, which was not run)\n"


def _sections(prompt: str) -> list[tuple[str | None, str]]:
    """The prompt cut at its ``=== NAME ===`` lines: (name, text with the heading)."""
    starts = list(_SECTION.finditer(prompt))
    if not starts:
        return [(None, prompt)]
    found: list[tuple[str | None, str]] = [(None, prompt[: starts[0].start()])]
    for match, following in zip(starts, [*starts[1:], None], strict=True):
        end = following.start() if following else len(prompt)
        found.append((match.group(1), prompt[match.start() : end]))
    return found
