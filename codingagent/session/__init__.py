"""One session's life: the loop that feeds it replies, and each turn's steps.

:mod:`.loop` is the session loop (SessionLoop: the one place that decides when a session
stops); :mod:`.seams` declares the seams it shares with sources and front ends (the
``ReplySource`` and ``FrontEnd`` protocols) and what crosses them (Reply, Received, Prompt,
TurnReport, Stop). A turn (:mod:`.turn`, its steps in order) takes the reply decoded once
(``protocol.replies``), admitted by :mod:`.admission` (the one place that admits a reply),
held for the user's review by :mod:`.reviewing` when asked, checked by :mod:`.checking`, and
executed and committed through the ``transaction`` wing, which makes it durable;
:mod:`.recovery` finishes or rolls back a turn a crash interrupted and applies its reply afresh;
:mod:`.lifecycle` starts, answers and follows up a session; :mod:`.reading` is the one read
model of a session every front end formats. A queue of tasks runs sessions from the ``queue``
wing above; a session never knows about it.

May import: the base and every wing below it (``review``, ``transaction``, ``records``,
``prompt``, ``execute``, ``protocol``, ``workspace``, ``sandbox``, ``secrecy``, ``codemap``);
never ``queue``, ``sources`` or ``frontends``.
"""
