"""A model endpoint as the reply source: each prompt is sent to a chat model through the
profile's API adapter (:mod:`codingagent.sources.providers`), and its answer is the reply
(``codingagent start TASK --model NAME``).

The request is built by :mod:`codingagent.sources.transcript`: the PROTOCOL as the system text,
then the last ``model_history_turns`` turns (their prompts from ``outbox/``, their replies from
the history, turns applied by copy-paste included), then the prompt. The answer is then handled
like a pasted reply (journaled, deduplicated, undoable); the model, its tokens, seconds and
finish reason go into the turn's ``meta.json``, which ``codingagent log`` shows.

The endpoint knows which prompt each answer answers (it sent it), so the answer is bound to it
(``Reply.answers``): a wrong or missing ``Session:/Sequence:`` line is applied and noted to the
model, never a reason to refuse. An answer that is refused all the same (a repeat of an applied
reply) is never met with the same request: the next one starts by saying why
(docs/admission.md).

When the loop stops and how RUN_COMMAND is approved is the session loop's business
(:mod:`codingagent.session.loop`), not this source's.
"""

from __future__ import annotations

import threading

from codingagent.prompt.render import estimate_tokens
from codingagent.session.seams import Listener, Prompt, Reply, TurnReport
from codingagent.sources import transcript
from codingagent.sources.providers.client import ChatClient
from codingagent.sources.providers.wire import Answer, Conversation
from codingagent.transaction.store import SessionStore


class EndpointSource:
    """Replies from a model endpoint; a context manager (it holds the client)."""

    def __init__(
        self,
        client: ChatClient,
        store: SessionStore,
        listener: Listener,
        system: str,
        *,
        history_turns: int = 0,
        history_chars: int = 40_000,
    ) -> None:
        self._client = client
        self._store = store
        self._listener = listener
        self._system = system
        self._history_turns = history_turns
        self._history_chars = history_chars
        self._refused: str | None = None  # why the last answer was not applied
        self.description = f"Asking {client.profile.model} at {client.url} for each reply"

    def __enter__(self) -> EndpointSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._client.__exit__(*exc_info)

    def conversation(self, prompt: Prompt) -> Conversation:
        """The request for ``prompt``: the PROTOCOL, the history, the prompt."""
        store = self._store
        earlier = transcript.history(store, prompt, self._history_turns, self._history_chars)
        told = refused_preface(self._refused, prompt)
        asked = told + transcript.cut_note(store, prompt) + transcript.without_protocol(prompt.text)
        return Conversation(self._system, [*earlier, {"role": "user", "content": asked}])

    def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None:
        listener = self._listener
        answer = self._client.complete(
            self.conversation(prompt), stop, listener.progress, listener.note
        )
        if answer is None:
            return None
        listener.note(_stats(answer))
        if answer.cut:
            listener.note(
                "note: the answer stopped at the output limit (max_tokens); its last command "
                "may be unfinished, and the next request tells the model so"
            )
        usage = answer.usage
        return Reply(
            answer.text.encode("utf-8"),
            source=f"model {answer.model}",
            answers=prompt.sequence,
            meta={
                "model": answer.model,
                "endpoint": self._client.url,
                "tokensIn": usage.tokens_in,
                "tokensOut": usage.tokens_out,
                "tokensCached": usage.cache_read,
                "modelSeconds": round(answer.seconds, 2),
                "finishReason": answer.finish_reason,
            },
        )

    def done_with(self, reply: Reply, report: TurnReport) -> None:
        """Remember why the answer was not applied, if it was not: the next request says it.
        Nothing to clean up: the answer's bytes are in the turn's history."""
        self._refused = report.refusal.to_model if report.refusal is not None else None


def refused_preface(why: str | None, prompt: Prompt) -> str:
    """What a request starts with after the model's last answer was refused ("" if it was not)."""
    if why is None:
        return ""
    return (
        f"Your last reply was not applied: {why}. Answer the prompt below; start your reply "
        f"with `Session: {prompt.session_id} Sequence: {prompt.sequence}`.\n\n"
    )


def _stats(answer: Answer) -> str:
    usage = answer.usage
    tokens_in = "?" if usage.tokens_in is None else f"{usage.tokens_in:,}"
    if usage.tokens_out is None:
        tokens_out = f"about {estimate_tokens(answer.text):,}"
    else:
        tokens_out = f"{usage.tokens_out:,}"
    cached = f" ({usage.cache_read:,} from the provider's cache)" if usage.cache_read else ""
    return (
        f"{answer.model} answered: {tokens_in} tokens in{cached}, {tokens_out} out, "
        f"{answer.seconds:.1f} s"
    )
