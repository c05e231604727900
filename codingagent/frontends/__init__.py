"""What the user touches; each front end only formats what the session wing reads for it
(``session.reading``, the one read model of a session).

:mod:`.cli` (the ``codingagent`` command), :mod:`.options` (its shared options and the settings
they load), :mod:`.exits` (the exit codes), :mod:`.inspection` (``log``, ``sessions``,
``show``, ``diff``), :mod:`.reviews` (``codingagent review``), :mod:`.queueing` (a queue of
tasks on the command line), :mod:`.relaying` (``--relay``, ``codingagent relay``),
:mod:`.starting` (where ``start`` puts a session: a project worked on in place, or the seed
layout), :mod:`.accounts` (``login``, ``logout``), :mod:`.kept` (the options a session keeps),
:mod:`.console` (printing on the terminal), :mod:`.console_listener` (the terminal's front end,
a :class:`~codingagent.session.seams.Listener`), :mod:`.approval` (RUN_COMMAND approval, the
LLM's ASK and a held review on a terminal), :mod:`.doctor` (what works on this machine),
:mod:`.page` (the local web page: its server, actions, event stream and views) and
``extension/`` (the browser extension's files).

May import: every wing. Nothing imports it but ``__main__``.
"""
