"""One session's life: the loop that feeds it replies, and each turn's steps.

:mod:`.loop` is the session loop (SessionLoop: the one place that decides when a session stops);
:mod:`.seams` holds the types it shares with sources and front ends (Reply, ReplySource,
Listener, Prompt, TurnReport, Stop). A turn (:mod:`.turn`) is admitted (:mod:`.admission`: the
one place that admits a reply), read (:mod:`.replies`), executed and committed through the
``transaction`` wing, which makes it durable; :mod:`.recovery` finishes or rolls back a turn a
crash interrupted and applies its reply afresh; :mod:`.lifecycle` starts, answers and follows up
a session. A queue of tasks runs sessions from the ``queue`` wing above; a session never knows
about it.

May import: the base and every wing below it (``transaction``, ``prompt``, ``execute``,
``protocol``, ``workspace``, ``sandbox``, ``secrecy``); never ``queue``, ``sources`` or
``frontends``.
"""
