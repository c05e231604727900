"""The page's server: Starlette on uvicorn, on 127.0.0.1 only.

Every URL starts with a random secret token (``http://127.0.0.1:PORT/TOKEN/``): another local
user or a web page in the same browser cannot guess it. :class:`Guard` refuses, with 403 and
before anything runs, a request without the token, one whose Host is not this server (DNS
rebinding) and a POST from another origin (a cross-site form or script). A request body over
a cap gets 413 before it is read (:mod:`.intake`).

    GET  /                          the page (static/index.html, app.js, app.css)
    GET  /api/sessions              the sessions, and which one to show first
    POST /api/sessions              start one: {"task", "workspace"}
    GET  /api/sessions/{id}         its prompt, turns, diffs and open approvals
    GET  /api/sessions/{id}/full    its prompt with the full PROTOCOL, for a new chat
    POST /api/sessions/{id}/apply   {"reply", "sequence", "rendered"}: one turn (or into inbox/
                                    for a terminal watcher); "sequence": the prompt shown
    POST /api/paste                 {"text", "html"}: what a paste from a browser stands for
    POST /api/sessions/{id}/review  {"accept", "note", "discard"}: decide its held review
    POST /api/sessions/{id}/undo    undo the last turn
    POST /api/sessions/{id}/answer  {"answer"}: the answer to the LLM's [ASK]
    GET  /api/workspace?folder=...  the folder a New session would work on, and why not
    POST /api/approvals/{n}         {"allow"}: the answer to a RUN_COMMAND question
    GET  /api/queue                 the latest queue of tasks: each task, and the one running
    POST /api/queue/skip            ask that queue's runner to skip the running task
    GET  /api/events                server-sent events: what the loop does, as it does it
"""

from __future__ import annotations

import json
import secrets
import socket
import traceback
import webbrowser
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from codingagent.frontends.console import say
from codingagent.frontends.page.actions import SessionActions
from codingagent.frontends.page.events import (
    APPROVAL_TIMEOUT,
    Approvals,
    EventHub,
    PageListener,
    Reviews,
)
from codingagent.frontends.page.intake import BodyLimit, body_cap
from codingagent.frontends.page.views import full_prompt, queue_view, session_view, sessions_list
from codingagent.frontends.relaying import relay_beside_page
from codingagent.prompt.render import PromptOptions
from codingagent.records.queues import QueueStore
from codingagent.records.store import SessionStore
from codingagent.session import reading
from codingagent.settings import Settings, SettingsError, load_settings
from codingagent.sources import loopback
from codingagent.sources.loopback import HOST
from codingagent.sources.pagetext import read_copy
from codingagent.state import SessionError

STATIC = Path(__file__).parent / "static"
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


class Guard:
    """ASGI middleware: the token, the Host and (for anything but GET) the Origin, checked
    before the app sees the request; security headers on every response."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self._problem(scope)
        if problem is not None:
            await PlainTextResponse(problem, 403, headers=SECURITY_HEADERS)(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        scope = {**scope, "root_path": scope.get("root_path", "") + "/" + self.token}
        await self.app(scope, receive, send_with_headers)

    def _problem(self, scope: Scope) -> str | None:
        headers = Headers(scope=scope)
        port = scope["server"][1]
        here = {f"{HOST}:{port}", f"localhost:{port}"}
        if headers.get("host") not in here:
            return "Forbidden: this server answers only to its own address (Host header)"
        given = scope["path"][1:].partition("/")[0]
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            return "Forbidden: open the exact URL that codingagent ui printed (it has a token)"
        if scope["method"] not in ("GET", "HEAD"):
            origin = headers.get("origin")
            if origin is not None and origin not in {f"http://{h}" for h in here}:
                return "Forbidden: a request from another site"
            if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
                return "Forbidden: a request from another site"
        return None


Handler = Callable[[Request], Awaitable[Response]]


def create_app(
    store: SessionStore,
    settings: Settings,
    token: str,
    hub: EventHub,
    first: str | None = None,
    approval_timeout: float = APPROVAL_TIMEOUT,
    approvals: Approvals | None = None,
    reviews: Reviews | None = None,
) -> ASGIApp:
    """The page's app; every URL under ``/TOKEN/``. ``hub`` carries its events; ``approvals``
    the RUN_COMMAND questions and ``reviews`` the held reviews a relay's loop waits on
    (``ui --relay``)."""
    approvals = approvals or Approvals(hub, approval_timeout)
    actions = SessionActions(store, settings, hub, approvals, reviews)

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def list_sessions(request: Request) -> Response:
        rows = await run_in_threadpool(sessions_list, store)
        shown = first or (rows[0]["id"] if rows else None)
        return JSONResponse({"sessions": rows, "first": shown, "root": str(store.root)})

    async def start(request: Request) -> Response:
        body = await _body(request)
        task, workspace = _text(body, "task"), _text(body, "workspace")
        files = tuple(f.strip() for f in _text(body, "files").replace(",", "\n").splitlines())
        session_id = await run_in_threadpool(
            actions.start, task, workspace, tuple(filter(None, files))
        )
        return JSONResponse({"session": session_id})

    async def diff(request: Request) -> Response:
        session_id = store.resolve(request.path_params["session"])
        turn = request.query_params.get("turn")
        if turn is not None and not turn.isdigit():
            raise SessionError("'turn' must be a turn's number")
        number = int(turn) if turn else None
        text, _ = await run_in_threadpool(reading.patch, store, session_id, number)
        name = f"{session_id}{f'-turn{turn}' if turn else ''}.patch"
        disposition = {"Content-Disposition": f'attachment; filename="{name}"'}
        return PlainTextResponse(text, media_type="text/x-diff", headers=disposition)

    async def show(request: Request) -> Response:
        session_id = store.resolve(request.path_params["session"])
        view = await run_in_threadpool(
            session_view, store, session_id, settings.token_budget, settings.context_tokens
        )
        view["approvals"] = approvals.pending(session_id)
        return JSONResponse(view)

    async def full(request: Request) -> Response:
        session_id = store.resolve(request.path_params["session"])
        prompt = PromptOptions.from_settings(settings)
        return JSONResponse(await run_in_threadpool(full_prompt, store, session_id, prompt))

    async def apply(request: Request) -> Response:
        body = await _body(request)
        reply, sequence = _text(body, "reply"), body.get("sequence")
        rendered = body.get("rendered", False)
        if sequence is not None and (type(sequence) is not int or sequence < 1):
            raise SessionError("'sequence' must be the number of the prompt the page showed")
        if not isinstance(rendered, bool):
            raise SessionError("'rendered' must be true or false")
        session = request.path_params["session"]
        done = await run_in_threadpool(actions.apply, session, reply, sequence, rendered)
        return JSONResponse(done)

    async def review(request: Request) -> Response:
        body = await _body(request)
        accepted, discard = body.get("accept", []), body.get("discard", False)
        if not isinstance(accepted, list) or not all(isinstance(a, str) for a in accepted):
            raise SessionError("'accept' must be a list of the numbers accepted ('1', '2.1')")
        if not isinstance(discard, bool):
            raise SessionError("'discard' must be true or false")
        session, note = request.path_params["session"], _text(body, "note")
        done = await run_in_threadpool(actions.review, session, accepted, note, discard)
        return JSONResponse(done)

    async def paste(request: Request) -> Response:
        body = await _body(request)
        text, html = body.get("text"), body.get("html")
        if not isinstance(text, str) or not isinstance(html, str):
            raise SessionError("'text' and 'html' must be what the browser pasted")
        copy = read_copy(text, html)
        return JSONResponse({"text": copy.text, "rendered": copy.rendered})

    async def answer_question(request: Request) -> Response:
        text = _text(await _body(request), "answer")
        done = await run_in_threadpool(actions.answer, request.path_params["session"], text)
        return JSONResponse(done)

    async def workspace(request: Request) -> Response:
        return JSONResponse(actions.workspace(request.query_params.get("folder", "")))

    async def undo(request: Request) -> Response:
        done = await run_in_threadpool(actions.undo, request.path_params["session"])
        return JSONResponse(done)

    async def answer(request: Request) -> Response:
        allow = (await _body(request)).get("allow") is True
        if not approvals.answer(request.path_params["question"], allow):
            raise SessionError("That question was already answered (or timed out)")
        return JSONResponse({"allowed": allow})

    async def queue(request: Request) -> Response:
        return JSONResponse({"queue": await run_in_threadpool(queue_view, store)})

    async def skip(request: Request) -> Response:
        queues = QueueStore(store)
        session_id = await run_in_threadpool(queues.request_skip, queues.resolve("latest"))
        return JSONResponse({"skipping": session_id})

    async def events(request: Request) -> Response:
        async def stream() -> Any:
            async with hub.subscribe() as queue:
                yield {"data": json.dumps({"type": "hello"})}
                while (event := await queue.get()) is not None:
                    yield {"data": json.dumps(event)}

        return EventSourceResponse(stream(), ping=15)

    routes = [
        Route("/", index),
        Mount("/static", StaticFiles(directory=STATIC)),
        Route("/api/sessions", _api(list_sessions)),
        Route("/api/sessions", _api(start), methods=["POST"]),
        Route("/api/sessions/{session}", _api(show)),
        Route("/api/sessions/{session}/full", _api(full)),
        Route("/api/sessions/{session}/diff", _api(diff)),
        Route("/api/sessions/{session}/apply", _api(apply), methods=["POST"]),
        Route("/api/sessions/{session}/review", _api(review), methods=["POST"]),
        Route("/api/paste", _api(paste), methods=["POST"]),
        Route("/api/sessions/{session}/undo", _api(undo), methods=["POST"]),
        Route("/api/sessions/{session}/answer", _api(answer_question), methods=["POST"]),
        Route("/api/workspace", _api(workspace)),
        Route("/api/approvals/{question:int}", _api(answer), methods=["POST"]),
        Route("/api/queue", _api(queue)),
        Route("/api/queue/skip", _api(skip), methods=["POST"]),
        Route("/api/events", events),
    ]
    return Guard(BodyLimit(Starlette(routes=routes), body_cap(settings.max_reply_bytes)), token)


def _api(handler: Handler) -> Handler:
    """Problems the user must fix become ``{"error": message}`` for the page to show; any other
    exception is a bug: the page gets a message, the server's terminal the traceback."""

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except (SessionError, SettingsError) as e:
            return JSONResponse({"error": str(e)}, 400)
        except Exception as e:
            traceback.print_exc()  # for the terminal that runs the server
            return JSONResponse({"error": f"Unexpected error ({type(e).__name__}: {e})"}, 500)

    return wrapped


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise SessionError("The request is not JSON") from None
    if not isinstance(body, dict):
        raise SessionError("The request is not a JSON object")
    return body


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key, "")
    if not isinstance(value, str):
        raise SessionError(f"'{key}' must be text")
    return value


# --- running it ----------------------------------------------------------------------------------


def listen(port: int) -> socket.socket:
    """The page's socket on 127.0.0.1:``port`` (0: any free port)."""
    advice = "choose another --port, or --port 0 for any free one"
    return loopback.listen(port, 64, "Cannot listen", advice)


class PageServer(uvicorn.Server):
    """uvicorn for the page: quiet; on Ctrl-C (or :meth:`stop`) it ends the open event
    streams first, so it stops at once."""

    def __init__(self, app: ASGIApp, hub: EventHub) -> None:
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=5
        )
        super().__init__(config)
        self._hub = hub

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._hub.close()
        super().handle_exit(sig, frame)

    def stop(self) -> None:
        """Ask the server to stop (from another thread)."""
        self._hub.close()
        self.should_exit = True


def url(sock: socket.socket, token: str) -> str:
    return f"http://{HOST}:{sock.getsockname()[1]}/{token}/"


def new_token() -> str:
    return secrets.token_urlsafe(24)


def run(
    root: Path,
    session: str,
    port: int,
    open_browser: bool,
    flags: dict[str, Any],
    relay: bool = False,
) -> None:
    """``codingagent ui``: serve the page for the run directory ``root`` until Ctrl-C; with
    ``relay``, the chat-tab relay for SESSION beside it (docs/relay.md)."""
    store = SessionStore(root)
    settings = load_settings(root, flags)
    none_yet = session in ("", "latest") and not store.ids()
    first = None if none_yet else store.resolve(session)
    if relay and first is None:
        raise SessionError(
            "ui --relay serves the relay for a session, and there is none yet: start one "
            '(codingagent start "TASK" --no-watch), then run ui --relay again'
        )
    sock = listen(port)
    token = new_token()
    hub = EventHub()
    approvals = Approvals(hub, APPROVAL_TIMEOUT)
    reviews = Reviews(hub)
    address = url(sock, token)
    with ExitStack() as stack:
        if relay and first is not None:
            listener = PageListener(first, hub, approvals, reviews)
            stack.enter_context(
                relay_beside_page(store, settings, first, listener, address, reviews.waiting)
            )
            stack.callback(reviews.close)  # (first, on the way out: a waiting loop ends)
        print(address, flush=True)  # stdout: the one line of data, for scripts
        say("The page for your chat tab is at the address above (keep it secret). Ctrl-C stops.")
        if open_browser:
            webbrowser.open(address)
        app = create_app(store, settings, token, hub, first, approvals=approvals, reviews=reviews)
        PageServer(app, hub).run(sockets=[sock])
