"""The relay's HTTP server: Starlette on uvicorn, on 127.0.0.1 only, in a thread beside the
session loop (``start --relay``). The routes and the rules are docs/http-api.md's relay section;
why they are so is docs/relay.md.

    POST /relay/v1/pair     {"code"} -> {"token", "session", "task"}   (no token needed)
    GET  /relay/v1/state    the session, its prompt_id and status
    GET  /relay/v1/prompt   ?after=<prompt_id>&wait=<s>&review=<id>: long-poll for a newer
                            prompt (or a held review not seen yet)
    POST /relay/v1/reply    {"prompt_id", "text", "source_url", "rendered"} -> the turn's outcome
    POST /relay/v1/unpair   forget the token

:class:`RelayGuard` decides before any route runs: the ``Origin`` must be an extension's
(``chrome-extension://`` or ``moz-extension://``), and once paired that one extension's
(403 otherwise); every request but ``/pair`` carries ``Authorization: Bearer <token>`` (401
otherwise). One exception, measured in Chromium and Firefox: an extension's background sends
no ``Origin`` on a GET to a host it has permission for, but ``Sec-Fetch-Site: none``
(Chromium) or ``same-origin`` (Firefox), which a web page cannot send to the relay (it serves
no page of its own); such a GET is admitted on its token alone. Refusals are JSON
``{"error": reason}`` and change nothing. CORS answers echo the accepted origin, never ``*``.
The ``Host`` must be a loopback name (any port: a forwarded port, ``ssh -L
9000:127.0.0.1:8766``, arrives with its own).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from codingagent.sources import loopback
from codingagent.sources.inbox import InboxSource
from codingagent.sources.loopback import HOST
from codingagent.sources.relay import Exchange, Pairing, Refused, RelaySource

PREFIX = "/relay/v1"
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
JSON_ROOM = 64 * 1024  # JSON may double a reply's size (\n, \"): room beyond twice the cap
DEFAULT_WAIT = 25.0
HEADERS = {"cache-control": "no-store", "x-content-type-options": "nosniff"}


def _cors(origin: str) -> dict[str, str]:
    return {"access-control-allow-origin": origin, "vary": "Origin"}


class RelayGuard:
    """ASGI middleware: Host, Origin, preflight and token, checked before the app runs."""

    def __init__(self, app: ASGIApp, pairing: Pairing) -> None:
        self.app = app
        self.pairing = pairing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            origin = self._admit(scope, headers)
        except Refused as refused:
            extra = {"www-authenticate": "Bearer"} if refused.status == 401 else {}
            # A 401 is read by the extension (it must pair again); a 403 is not for it.
            given = headers.get("origin")
            cors = _cors(given) if refused.status == 401 and given else {}
            response = JSONResponse(
                {"error": refused.reason}, refused.status, headers=HEADERS | cors | extra
            )
            await response(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and origin is not None:
            await Response(status_code=204, headers=HEADERS | self._preflight(origin, headers))(
                scope, receive, send
            )
            return
        answered = HEADERS | (_cors(origin) if origin is not None else {})

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                for name, value in answered.items():
                    out[name] = value
            await send(message)

        await self.app(scope, receive, with_headers)

    def _admit(self, scope: Scope, headers: Headers) -> str | None:
        """The request's origin when it may go on (None: an extension's GET, see below);
        Refused otherwise."""
        host = headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in LOOPBACK:
            raise Refused(403, "The relay answers only to its loopback address (Host header)")
        pairing = scope["path"] == f"{PREFIX}/pair"
        if (
            "origin" not in headers
            and scope["method"] == "GET"
            and headers.get("sec-fetch-site") in ("none", "same-origin")
            and not pairing
        ):
            # Chromium sends no Origin on a GET from an extension's service worker that holds a
            # host permission, but Sec-Fetch-Site: none, which no web page can send; Firefox
            # sends Sec-Fetch-Site: same-origin, which a page sends only to its own origin, and
            # the relay serves no page. The token alone then says it is the paired extension
            # (docs/relay.md).
            self.pairing.check_token(headers.get("authorization"))
            return None
        origin = self.pairing.check_origin(headers.get("origin"))
        if scope["method"] == "OPTIONS" or pairing:
            return origin
        self.pairing.check_token(headers.get("authorization"))
        return origin

    @staticmethod
    def _preflight(origin: str, headers: Headers) -> dict[str, str]:
        allowed = _cors(origin) | {
            "access-control-allow-methods": "GET, POST, OPTIONS",
            "access-control-allow-headers": "authorization, content-type",
            "access-control-max-age": "600",
        }
        if headers.get("access-control-request-private-network") == "true":
            allowed["access-control-allow-private-network"] = "true"
        return allowed


Handler = Callable[[Request], Awaitable[Response]]


def create_app(exchange: Exchange, pairing: Pairing, max_reply_bytes: int) -> ASGIApp:
    """The relay's app for one session."""
    cap = 2 * max_reply_bytes + JSON_ROOM

    async def pair(request: Request) -> Response:
        body = await _body(request, cap)
        token = pairing.pair(body.get("code"), request.headers["origin"])
        return JSONResponse({"token": token, "session": exchange.session_id, "task": exchange.task})

    async def state(request: Request) -> Response:
        return JSONResponse(exchange.state())

    async def prompt(request: Request) -> Response:
        after = request.query_params.get("after") or None
        try:
            wait = float(request.query_params.get("wait", DEFAULT_WAIT))
        except ValueError:
            raise Refused(400, "'wait' must be a number of seconds") from None
        seen = request.query_params.get("review") or None  # the held review it knows of
        found = await run_in_threadpool(exchange.next_prompt, after, wait, seen)
        if found is None:
            return Response(status_code=204)
        return JSONResponse(found)

    async def reply(request: Request) -> Response:
        body = await _body(request, cap)
        text, url = body.get("text"), body.get("source_url", "")
        rendered = body.get("rendered", False)
        if not isinstance(text, str) or not isinstance(url, str):
            raise Refused(400, "'text' and 'source_url' must be text")
        if not isinstance(rendered, bool):
            raise Refused(400, "'rendered' must be true or false")
        outcome = await run_in_threadpool(exchange.post, body.get("prompt_id"), text, url, rendered)
        return JSONResponse(outcome.as_json())

    async def unpair(request: Request) -> Response:
        pairing.unpair()
        return JSONResponse({"unpaired": True})

    routes = [
        Route(f"{PREFIX}/pair", _refusals(pair), methods=["POST"]),
        Route(f"{PREFIX}/state", _refusals(state)),
        Route(f"{PREFIX}/prompt", _refusals(prompt)),
        Route(f"{PREFIX}/reply", _refusals(reply), methods=["POST"]),
        Route(f"{PREFIX}/unpair", _refusals(unpair), methods=["POST"]),
    ]
    return RelayGuard(Starlette(routes=routes), pairing)


def _refusals(handler: Handler) -> Handler:
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except Refused as refused:
            return JSONResponse({"error": refused.reason}, refused.status)

    return wrapped


async def _body(request: Request, cap: int) -> dict[str, Any]:
    """The request's JSON object, read up to ``cap`` bytes (413 past it)."""
    declared = request.headers.get("content-length", "")
    too_large = Refused(413, "The request is larger than max_reply_bytes allows; not applied")
    if declared.isdigit() and int(declared) > cap:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise too_large
        chunks.append(chunk)
    try:
        body = json.loads(b"".join(chunks))
    except ValueError:
        raise Refused(400, "The request is not JSON") from None
    if not isinstance(body, dict):
        raise Refused(400, "The request is not a JSON object")
    return body


# --- running it --------------------------------------------------------------------------


def listen(port: int) -> socket.socket:
    """The relay's socket on 127.0.0.1:``port`` (0: any free port)."""
    advice = "another agent's relay? choose another --relay-port, or 0 for any free one"
    return loopback.listen(port, 16, "The relay cannot listen", advice)


class RelayServer:
    """uvicorn serving the relay's app on ``sock`` in a daemon thread."""

    def __init__(self, app: ASGIApp, sock: socket.socket) -> None:
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=3
        )
        self._server = uvicorn.Server(config)
        self._sock = sock
        self._thread = threading.Thread(target=self._run, name="relay", daemon=True)

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def _run(self) -> None:
        self._server.run(sockets=[self._sock])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(10)
        self._sock.close()


def open_relay(
    exchange: Exchange,
    pairing: Pairing,
    inbox: InboxSource,
    port: int,
    max_reply_bytes: int,
) -> RelaySource:
    """The relay for ``exchange``'s session on 127.0.0.1:``port``: listening already (a port
    in use is a SettingsError now), served while the source is entered."""
    sock = listen(port)
    server = RelayServer(create_app(exchange, pairing, max_reply_bytes), sock)
    address = f"http://{HOST}:{server.port}"
    return RelaySource(exchange, inbox, server.start, server.stop, address)
