"""A model endpoint as the reply source: each prompt is sent to a chat model through the
profile's API adapter (:mod:`codingagent.sources.providers`), and its answer is the reply
(``codingagent start TASK --model NAME``).

The request is built by :mod:`codingagent.sources.transcript`: the PROTOCOL as the system text,
then the last ``model_history_turns`` turns (their prompts from ``outbox/``, their replies from
the history, turns applied by copy-paste included), then the prompt. The answer is then handled
like a pasted reply (journaled, deduplicated, undoable); the model, its tokens, seconds and
finish reason go into the turn's ``meta.json``, which ``codingagent log`` shows.

Each request is fitted to the model's window (:mod:`codingagent.prompt.fitting`; the window
from :mod:`codingagent.sources.providers.windows`): what was left out is noted on the console
and in the turn's ``meta.json``; a prompt that cannot fit is never sent (:class:`WindowTooSmall`,
a problem to fix), and a server that refuses a request as over its window is asked once more
with a smaller one, never the same. Reasoning a model sends apart from its answer is kept in
``meta.json`` (``thinking``), never parsed.

The endpoint knows which prompt each answer answers (it sent it), so the answer is bound to it
(``Reply.answers``): a wrong or missing ``Session:/Sequence:`` line is applied and noted to the
model, never a reason to refuse. An answer that is refused all the same (a repeat of an applied
reply) is never met with the same request: the next one starts by saying why
(docs/admission.md).

When the loop stops and how RUN_COMMAND is approved is the session loop's business
(:mod:`codingagent.session.loop`), not this source's.
"""

from __future__ import annotations

import math
import threading
from dataclasses import KW_ONLY, dataclass

from codingagent.prompt.fitting import Count, Fitted, NoFit, fit, prompt_budget, reply_reserve
from codingagent.prompt.render import estimate_tokens
from codingagent.records.store import SessionStore
from codingagent.session.seams import FrontEnd, Prompt, Reply, TurnReport
from codingagent.sources import transcript
from codingagent.sources.providers.client import ChatClient
from codingagent.sources.providers.windows import Window, fix_line
from codingagent.sources.providers.wire import (
    Answer,
    ContextOverflow,
    Conversation,
    WindowTooSmall,
)


@dataclass(eq=False)
class EndpointSource:
    """Replies from a model endpoint; a context manager (it holds the client). ``system`` is
    the text every request starts with (the PROTOCOL); the last ``history_turns`` turns, within
    ``history_chars``, go before each prompt (:mod:`.transcript`)."""

    client: ChatClient
    store: SessionStore
    listener: FrontEnd
    system: str
    _: KW_ONLY
    history_turns: int = 0
    history_chars: int = 40_000

    def __post_init__(self) -> None:
        self._refused: str | None = None  # why the last answer was not applied
        self._fitted = Fitted(self.system, [], 0)  # the last request, as fitted to the window
        client = self.client
        self.description = f"Asking {client.profile.model} at {client.url} for each reply"

    def __enter__(self) -> EndpointSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.client.__exit__(*exc_info)

    def conversation(
        self,
        prompt: Prompt,
        budget: int | None = None,
        count: Count | None = None,
        named: int | None = None,
    ) -> Conversation:
        """The request for ``prompt``: the PROTOCOL, the history, the prompt, fitted to the
        model's window (``budget`` tokens, counted by ``count``: by default the window less
        the reply's reserve, counted by the server's tokenizer or the documented bound;
        ``named``: the window a refusal named, when it differs from the one we knew)."""
        store = self.store
        earlier = transcript.history(store, prompt, self.history_turns, self.history_chars)
        told = refused_preface(self._refused, prompt)
        asked = told + transcript.cut_note(store, prompt) + transcript.without_protocol(prompt.text)
        client = self.client
        window = client.window()
        reserve = reply_reserve(named or window.tokens, client.profile.max_tokens)
        budget = window.tokens - reserve if budget is None else budget
        try:
            self._fitted = fit(self.system, earlier, asked, budget, count or client.count)
        except NoFit as e:
            raise WindowTooSmall(self._too_small(window, e.needed + reserve, named)) from None
        return Conversation(self.system, self._fitted.messages, self._fitted.tokens + reserve)

    def next_reply(self, prompt: Prompt, stop: threading.Event) -> Reply | None:
        listener = self.listener
        conversation = self.conversation(prompt)
        self._note_cuts()
        try:
            answer = self.client.complete(conversation, stop, listener.progress, listener.note)
        except ContextOverflow as refused:  # once more, smaller; never the same request
            conversation = self._smaller(prompt, conversation, refused)
            self._note_cuts()
            try:
                answer = self.client.complete(conversation, stop, listener.progress, listener.note)
            except ContextOverflow as again:
                window = self.client.window()
                needed = again.prompt_tokens or self._fitted.tokens
                raise WindowTooSmall(self._too_small(window, needed, again.window)) from None
        if answer is None:
            return None
        listener.note(_stats(answer))
        if answer.thinking:
            listener.note(
                f"{answer.model} thought for {len(answer.thinking):,} characters (kept with "
                "the turn; codingagent log --thinking shows it)"
            )
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
                "endpoint": self.client.url,
                "tokensIn": usage.tokens_in,
                "tokensOut": usage.tokens_out,
                "tokensCached": usage.cache_read,
                "modelSeconds": round(answer.seconds, 2),
                "finishReason": answer.finish_reason,
                "contextWindow": self.client.window().tokens,
                "promptTokens": self._fitted.tokens,
                "fitted": list(self._fitted.cuts),
                **({"thinking": answer.thinking} if answer.thinking else {}),
            },
        )

    def _smaller(
        self, prompt: Prompt, sent: Conversation, refused: ContextOverflow
    ) -> Conversation:
        """The request again after the server said it was over its window: counted as the
        server counted it, within the window it named, and smaller than the one refused."""
        client = self.client
        window = client.window()
        tokens = refused.window or window.tokens
        ratio = 1.25  # unknown: our count was that much too low, at least
        if refused.prompt_tokens:
            ratio = max(1.0, refused.prompt_tokens / max(1, self._fitted.tokens)) * 1.05
        refused_size = math.ceil(self._fitted.tokens * ratio)  # as now counted
        budget = min(prompt_budget(tokens, client.profile.max_tokens), refused_size - 1)
        if budget <= 0:
            raise WindowTooSmall(self._too_small(window, refused.prompt_tokens or 0, tokens))

        def counted(text: str) -> int:
            return math.ceil(client.count(text) * ratio)

        self.listener.note(
            f"note: {client.url} refused the request as over its window ({refused}); "
            "asking once more with a smaller prompt"
        )
        smaller = self.conversation(prompt, budget, counted, refused.window)
        if smaller.messages == sent.messages:
            needed = refused.prompt_tokens or self._fitted.tokens
            raise WindowTooSmall(self._too_small(window, needed, tokens))
        return smaller

    def _note_cuts(self) -> None:
        """Say what was left out of the request to fit the window, if anything."""
        fitted = self._fitted
        if fitted.cuts:
            window = self.client.window()
            self.listener.note(
                f"note: the request was fitted to the model's window of {window.tokens:,} "
                f"tokens ({window.source}): {'; '.join(fitted.cuts)}"
            )

    def _too_small(self, window: Window, needed: int, told: int | None = None) -> str:
        """The one line for a window too small for even the smallest prompt."""
        client = self.client
        tokens = told or window.tokens
        source = "as the server said" if told else window.source
        return (
            f"The prompt does not fit the window of {client.profile.model} at {client.url}: "
            f"the window is {tokens} tokens ({source}), and even the smallest form of the "
            f"prompt needs ~{needed:,} with room for the reply; nothing was sent. To go on, "
            f"{fix_line(window, client.profile, needed)}"
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
