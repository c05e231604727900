"""One session's life: its turns as crash-safe transactions and the loop that feeds them.

:mod:`.loop` is the session loop (SessionLoop: the one place that decides when a session stops);
:mod:`.seams` holds the types it shares with sources and front ends (Reply, ReplySource,
Listener, Prompt, Stop). A turn (:mod:`.turn`) is admitted (:mod:`.admission`: the one place
that admits a reply), read (:mod:`.replies`), journaled (:mod:`.journal`, :mod:`.history`),
executed, and rolled back (:mod:`.rollback`) or recovered (:mod:`.recovery`) if it cannot
finish; :mod:`.undo` puts turns back; :mod:`.store` keeps the sessions' files, :mod:`.outbox`
writes the next prompt, :mod:`.lifecycle` starts, answers and follows up a session;
:mod:`.crashpoints` are the kill points the crash tests use. A queue of tasks is a loop of
sessions around the loop: :mod:`.queue` keeps its durable file, :mod:`.queue_runner` runs it.

May import: the base and every wing below it (``prompt``, ``execute``, ``protocol``,
``workspace``, ``sandbox``); never ``sources`` or ``frontends``.
"""
