"""One chat client for every API: it sends a :class:`Conversation` through the profile's
adapter, streams the answer and reports progress, and sorts what goes wrong in two:

* passing trouble is retried with backoff, honouring ``Retry-After``: HTTP 429, 5xx, a
  connection dropped before the answer was complete (a cut stream is never used in part);
* everything the user must fix raises :class:`ChatError` with one line that says what to do:
  the key refused (which variable holds it), an unknown model (the models the server offers),
  no server at the URL, a timeout, an answer not in the API's shape.

Why ``httpx`` and no provider SDK: the wire formats are a few JSON fields and an SSE loop,
while the failures must be told apart exactly; the SDKs retry on their own terms and bring
large dependency trees. The key goes only into the adapter's headers and is blanked out of any
server message (docs/models.md, "The API key").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx

from codingagent.prompt.fitting import estimate
from codingagent.settings import ModelProfile
from codingagent.sources.providers import adapter_for
from codingagent.sources.providers.ollama import OllamaAdapter
from codingagent.sources.providers.windows import Window, discover, server_root
from codingagent.sources.providers.wire import (
    Answer,
    ChatError,
    ContextOverflow,
    Conversation,
    Streamed,
    Transient,
    error_message,
    events,
    json_object,
    json_or_text,
    overflow,
    reason,
    retry_after,
)

ATTEMPTS = 3  # requests per answer: the first and two retries
BACKOFF_S = 1.0  # the first wait before a retry without Retry-After; doubles each time
MAX_WAIT_S = 60.0  # the longest wait honoured from Retry-After
_RETRIED = {429, 500, 502, 503, 504, 529}  # 529: overloaded (Anthropic)

Progress = Callable[[str | None], None]  # a live line's text; None clears it
Note = Callable[[str], None]  # a line worth keeping on the console


class ChatClient:
    """Answers from one endpoint. Use it as a context manager (it holds the connection pool);
    :meth:`complete` returns the answer, or None once ``stop`` is set. ``transport`` replaces
    the network (tests: ``httpx.MockTransport``)."""

    def __init__(self, profile: ModelProfile, transport: httpx.BaseTransport | None = None):
        self.profile = profile
        self.adapter = adapter_for(profile)
        self.url = self.adapter.url
        self._http = httpx.Client(
            transport=transport,
            timeout=httpx.Timeout(profile.timeout, connect=min(profile.timeout, 10.0)),
        )
        self._window: Window | None = None
        self._counted: dict[str, int] = {}  # tokens of texts the server's tokenizer counted

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._http.close()

    def complete(
        self, conversation: Conversation, stop: threading.Event, progress: Progress, note: Note
    ) -> Answer | None:
        """The answer to ``conversation``; transient failures are retried (``note`` says so)."""
        attempt = 1
        while True:
            try:
                return self._request(conversation, stop, progress)
            except Transient as e:
                problem = e
            finally:
                progress(None)
            said = self.adapter.redact(str(problem))
            if attempt == ATTEMPTS:
                raise ChatError(
                    f"{said}; gave up after {ATTEMPTS} attempts. The session is intact: "
                    "resume it when the server is back"
                )
            wait = BACKOFF_S * 2 ** (attempt - 1) if problem.wait is None else problem.wait
            wait = min(wait, MAX_WAIT_S)
            note(f"{said}; retrying in {wait:.1f} s")
            if stop.wait(wait):
                return None
            attempt += 1

    def window(self) -> Window:
        """The model's window and where it came from, asked of the server once
        (:mod:`.windows`). A server that turns out to be Ollama is spoken to in its own chat
        API from then on (:mod:`.ollama`)."""
        if self._window is None:
            probing = self.profile.api in ("openai", "ollama")
            headers = self.adapter.headers(self._http) if probing else {}
            self._window = discover(self._http, self.profile, headers)
            if self._window.server == "ollama":
                ollama = self.adapter.switched(OllamaAdapter, server_root(self.profile.base_url))
                assert isinstance(ollama, OllamaAdapter)
                ollama.trained = self._window.trained or self._window.tokens
                self.adapter = ollama
        return self._window

    def count(self, text: str) -> int:
        """Tokens of ``text``: by the server's tokenizer where it has one (llama-server's
        ``/tokenize``), else by the documented bound (:func:`fitting.estimate`)."""
        url = self.window().tokenize_url
        if url is None:
            return estimate(text)
        if text not in self._counted:
            try:
                response = self._http.post(
                    url, json={"content": text}, headers=self.adapter.headers(self._http)
                )
                tokens = response.json().get("tokens") if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError, AttributeError):
                tokens = None
            self._counted[text] = len(tokens) if isinstance(tokens, list) else estimate(text)
        return self._counted[text]

    def check(self) -> None:
        """Before a session is made: that the endpoint answers, takes the key, and offers the
        model where it lists its models. Raises ChatError saying what is wrong."""
        self.window()
        url = self.adapter.models_url() or self.url
        try:
            response = self._http.get(url, headers=self.adapter.headers(self._http))
        except httpx.HTTPError as e:
            raise self._unreachable(e) from None
        if response.status_code in (401, 403):
            self._fail(response)
        if response.status_code != 200 or self.adapter.models_url() is None:
            return  # it answers; whether it serves the model, the first request tells
        if self.window().server == "llama-server":
            return  # it serves the one model it loaded, whatever a request names
        offered = self.adapter.model_ids(json_or_text(response.text))
        if offered and self.profile.model not in offered:
            raise ChatError(
                f"{self.url} does not offer the model {self.profile.model!r}. "
                f"It offers: {', '.join(offered)}"
            )

    # --- one request -------------------------------------------------------------------------

    def _request(
        self, conversation: Conversation, stop: threading.Event, progress: Progress
    ) -> Answer | None:
        adapter, profile = self.adapter, self.profile
        body = adapter.body(conversation, profile.stream)
        started = time.monotonic()
        progress(f"Waiting for {profile.model} at {self.url}")
        try:
            for fresh in (False, True):
                with self._http.stream(
                    "POST", adapter.post_url(), json=body, headers=adapter.headers(self._http)
                ) as response:
                    if (
                        response.status_code in (401, 403)
                        and not fresh
                        and adapter.refresh(self._http)
                    ):
                        continue  # a credential that expired: once more with a fresh one
                    if response.status_code != 200:
                        response.read()
                        self._fail(response)
                    kind = response.headers.get("content-type", "")
                    if not kind.startswith(("text/event-stream", adapter.stream_type)):
                        response.read()  # asked not to stream, or the server would not
                        whole = json_object(response.text, self.url, adapter.shape)
                        return adapter.read_answer(whole, started)
                    return self._read_stream(response, started, stop, progress)
            raise AssertionError("unreachable: the second try returns or raises")
        except httpx.ConnectError as e:
            raise self._unreachable(e) from None
        except httpx.TimeoutException:
            raise ChatError(
                f"{profile.model} at {self.url} did not answer within {profile.timeout:g} s; "
                + _wait_longer(profile)
            ) from None
        except (httpx.RemoteProtocolError, httpx.NetworkError) as e:
            raise Transient(f"The connection to {self.url} dropped ({reason(e)})") from None
        except httpx.HTTPError as e:
            raise self._unreachable(e) from None

    def _read_stream(
        self, response: httpx.Response, started: float, stop: threading.Event, progress: Progress
    ) -> Answer | None:
        streamed = Streamed(self.profile.model)
        lines = response.iter_lines()
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        for data in events(lines) if sse else (line for line in lines if line.strip()):
            self.adapter.read_event(data, streamed)
            if streamed.ended:
                return streamed.answer(started)
            if stop.is_set():
                return None
            doing = "thinking, " if streamed.thinking else ""
            progress(
                f"{streamed.model}: {doing}{_received(streamed)} tokens received, "
                f"{time.monotonic() - started:.1f} s"
            )
        raise Transient(f"The answer from {self.url} was cut off (the stream did not end)")

    def _unreachable(self, e: httpx.HTTPError) -> ChatError:
        if isinstance(e, httpx.ConnectError):
            return ChatError(
                f"Cannot connect to {self.url} ({reason(e)}): is the server running, "
                "and is base_url right?"
            )
        if isinstance(e, httpx.TimeoutException):
            return ChatError(f"{self.url} did not answer; " + _wait_longer(self.profile))
        # a URL httpx cannot use, a proxy refusing, ...
        return ChatError(f"The request to {self.url} failed: {reason(e)}")

    def _fail(self, response: httpx.Response) -> None:
        """Raise what a non-200 answer means."""
        adapter, status = self.adapter, response.status_code
        said = adapter.redact(error_message(json_or_text(response.text)))
        if status in _RETRIED:
            raise Transient(f"{self.url} answered HTTP {status}: {said}", retry_after(response))
        if status in (401, 403):
            raise ChatError(f"{self.url} refused the API key (HTTP {status}): {adapter.key_hint()}")
        if status in (400, 413, 422) and (told := overflow(json_or_text(response.text))):
            raise ContextOverflow(f"{self.url} answered HTTP {status}: {said}", told[0], told[1])
        if adapter.unknown_model(status, said):
            raise ChatError(
                f"{self.url} does not offer the model {self.profile.model!r}: {said}. "
                f"It offers: {self._offered()}"
            )
        if status == 404:
            raise ChatError(adapter.not_found())
        raise ChatError(f"{self.url} answered HTTP {status}: {said}")

    def _offered(self) -> str:
        """The model ids the server offers, for the unknown-model error."""
        url = self.adapter.models_url()
        if url is None:
            return "(it does not list them)"
        try:
            response = self._http.get(url, headers=self.adapter.headers(self._http))
            response.raise_for_status()
            return ", ".join(self.adapter.model_ids(response.json())) or "no models"
        except (httpx.HTTPError, ValueError, AttributeError) as e:
            return f"(its model list could not be read: {reason(e)})"


def _received(streamed: Streamed) -> str:
    """The tokens of the answer so far: as the API counts them once it says, else our
    estimate from its characters (about four a token)."""
    counted = streamed.usage.get("tokens_out")
    return f"{counted:,}" if counted else f"about {(streamed.characters + 3) // 4:,}"


def _wait_longer(profile: ModelProfile) -> str:
    """How to wait longer, in the terms the user named the endpoint in."""
    if profile.name is None:
        return "is the model still loading? Give --model-timeout SECONDS to wait longer"
    return f"raise timeout in its [models.{profile.name}] profile"
