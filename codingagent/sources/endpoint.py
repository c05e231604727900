"""A model endpoint as the reply source: each prompt is sent to an OpenAI-compatible chat
model, and its answer is the reply (``codingagent start TASK --model NAME``).

The prompt is complete on its own, so it goes as one user message: the model is stateless
between turns, exactly like a chat opened afresh for each paste. ``model_history_turns = N``
puts the last N turns before it (their prompts from ``outbox/``, their replies from the
history), turns applied by copy-paste included. The answer is then handled like a pasted
reply (journaled, deduplicated, undoable); the model, its tokens and seconds go into the
turn's ``meta.json``, which ``codingagent log`` shows.

When the loop stops and how RUN_COMMAND is approved is the session loop's business
(:mod:`codingagent.session.loop`), not this source's.
"""

from __future__ import annotations

import threading

from codingagent.session.history import TurnRecord
from codingagent.session.seams import Listener, Prompt, Reply
from codingagent.session.store import SessionStore
from codingagent.session.turn import TurnReport
from codingagent.sources.chat import Answer, ChatClient


class EndpointSource:
    """Replies from a chat-completions endpoint; a context manager (it holds the client)."""

    def __init__(
        self,
        client: ChatClient,
        store: SessionStore,
        listener: Listener,
        *,
        history_turns: int = 0,
    ) -> None:
        self._client = client
        self._store = store
        self._listener = listener
        self._history_turns = history_turns
        self.description = f"Asking {client.profile.model} at {client.url} for each reply"

    def __enter__(self) -> EndpointSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._client.__exit__(*exc_info)

    def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None:
        messages = [*self._history(prompt), {"role": "user", "content": prompt.text}]
        listener = self._listener
        answer = self._client.complete(messages, stop, listener.progress, listener.note)
        if answer is None:
            return None
        listener.note(_stats(answer))
        if answer.finish_reason == "length":
            listener.note("note: the answer stopped at max_tokens; its end may be missing")
        return Reply(
            answer.text.encode("utf-8"),
            source=f"model {answer.model}",
            meta={
                "model": answer.model,
                "endpoint": self._client.url,
                "tokensIn": answer.tokens_in,
                "tokensOut": answer.tokens_out,
                "modelSeconds": round(answer.seconds, 2),
            },
        )

    def done_with(self, reply: Reply, report: TurnReport) -> None:
        """Nothing to clean up: the answer's bytes are in the turn's history."""

    def _history(self, prompt: Prompt) -> list[dict[str, str]]:
        """The last ``history_turns`` turns as user/assistant message pairs, oldest first."""
        if not self._history_turns:
            return []
        messages = []
        for folder in self._store.turns(prompt.session_id)[-self._history_turns :]:
            turn = TurnRecord(folder)
            asked = self._store.outbox_path(prompt.session_id, turn.meta()["sequence"])
            if not asked.is_file():  # the user cleaned outbox/: that turn is left out
                continue
            answered = turn.reply_path.read_bytes().decode("utf-8", "replace")
            messages += [
                {"role": "user", "content": asked.read_text(encoding="utf-8")},
                {"role": "assistant", "content": answered},
            ]
        return messages


def _stats(answer: Answer) -> str:
    def count(tokens: int | None) -> str:
        return "?" if tokens is None else f"{tokens:,}"

    return (
        f"{answer.model} answered: {count(answer.tokens_in)} tokens in, "
        f"{count(answer.tokens_out)} out, {answer.seconds:.1f} s"
    )
