"""Where a turn is made durable: the crash-safe machinery under every turn.

:mod:`.store` keeps the sessions' files (state, lock, history folders; :mod:`.summaries` is what
``codingagent sessions`` reads of each); :mod:`.journal` exists exactly while a turn is in
flight; :mod:`.history` keeps each turn's record and pre-images; :mod:`.capture` and
:mod:`.shadow` keep what a RUN_COMMAND changed; :mod:`.rollback` puts an interrupted or failed
turn back; :mod:`.undo` puts applied turns back; :mod:`.outbox` writes the next prompt;
:mod:`.crashpoints` are the kill points the crash tests use; :mod:`.runfolder` says where a
run's folders are (the seed layout, or a project's folder in the user's state). The steps of a
turn and the loop that runs them live in ``session``, which imports this wing; this wing never
imports it.

May import: the base, ``prompt``, ``execute``, ``protocol``, ``workspace``, ``sandbox``,
``secrecy``; never ``session`` or anything above.
"""
