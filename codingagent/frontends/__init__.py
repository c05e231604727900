"""What the user touches: :mod:`.cli` (the ``codingagent`` command), :mod:`.console` (printing
on the terminal), :mod:`.console_listener` (the terminal's Listener), :mod:`.approval`
(RUN_COMMAND approval and the LLM's ASK on a terminal), :mod:`.doctor` (what works on this
machine), :mod:`.queueing` (a queue of tasks on the command line), :mod:`.starting` (where ``start``
puts a session: a project worked on in place, or the seed layout), and :mod:`.page` (the local
web page: its server, actions, event stream and views).

May import: every wing. Nothing imports it but ``__main__``.
"""
