"""A cap on the size of what the page's server reads from a request: :class:`BodyLimit`.

A request body over the cap is answered ``413 Payload Too Large`` with a sentence saying why,
before it is read: at once when its ``Content-Length`` says so, and otherwise (a chunked body)
as soon as the bytes received pass the cap, so at most the cap is ever held in memory. A body
within the cap is read whole and handed to the app as it came. See docs/frontends.md.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# JSON doubles the size of some text (``\n``, ``"``): a pasted reply of ``max_reply_bytes`` must
# still fit, with room for the other fields.
JSON_ROOM = 64 * 1024


def body_cap(max_reply_bytes: int) -> int:
    """The largest request body the page reads, for the ``max_reply_bytes`` setting."""
    return 2 * max_reply_bytes + JSON_ROOM


class BodyLimit:
    """ASGI middleware: request bodies over ``cap`` bytes get 413 and are not read."""

    def __init__(self, app: ASGIApp, cap: int) -> None:
        self.app = app
        self.cap = cap

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.cap:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.cap:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # a disconnect, when it comes
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        megabytes = self.cap / 1024 / 1024
        message = (
            f"The request is larger than the page accepts ({megabytes:.1f} MB, twice the "
            "max_reply_bytes setting): a reply that large is not run. Ask the LLM for a "
            "shorter reply in smaller steps, or raise max_reply_bytes"
        )
        response = JSONResponse({"error": message}, 413, headers={"connection": "close"})
        await response(scope, receive, send)
