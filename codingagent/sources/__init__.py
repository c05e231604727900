"""Where replies come from, one module each, all behind
:class:`codingagent.session.seams.ReplySource`: :mod:`.inbox` (files saved into ``inbox/``,
seen by :mod:`.watching`'s observer), :mod:`.clipboard` (the clipboard loop, over
:mod:`.pasteboard`, the clipboard tools), :mod:`.relay` (the chat-tab relay for the browser
extension, served by :mod:`.relay_server`), :mod:`.endpoint` (a model endpoint, over the HTTP
client :mod:`.chat`).

May import: ``session`` and everything below it; never ``frontends``.
"""
