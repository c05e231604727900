"""Where replies come from, one module each, all behind
:class:`codingagent.session.seams.ReplySource`: :mod:`.inbox` (files saved into ``inbox/``,
seen by :mod:`.watching`'s observer, with :mod:`.hints` from its file events and
:mod:`.writers`: whether a process still writes a file), :mod:`.clipboard` (the clipboard loop,
over :mod:`.pasteboard`, the clipboard tools, told of changes by :mod:`.clipboard_events`),
:mod:`.relay` (the chat-tab relay for the browser extension, served by :mod:`.relay_server`),
:mod:`.endpoint` (a model endpoint, through :mod:`.providers`: one client, one adapter per API,
with :mod:`.transcript`: what a request carries). :mod:`.pagetext` reads an answer from a
rendered page; the relay and the page listen through :mod:`.loopback`, on 127.0.0.1 only.

May import: ``session`` and everything below it; never ``frontends``.
"""
