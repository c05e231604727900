"""What keeps a turn whole: the crash-safe machinery under every turn.

:mod:`.journal` exists exactly while a turn is in flight, and records each file's pre-image
before it changes; :mod:`.capture` and :mod:`.shadow` keep what a RUN_COMMAND changed;
:mod:`.rollback` puts a turn's files back from its record (an interrupted or failed turn);
:mod:`.undo` puts applied turns back; :mod:`.crashpoints` are the kill points the crash tests
use. The record itself (``records.history``) and where sessions live (``records.store``) are
the records wing's; the next prompt is ``prompt.outbox``. The steps of a turn and the loop that
runs them live in ``session``, which imports this wing; this wing never imports it.

May import: the base, ``records``, ``prompt``, ``execute``, ``protocol``, ``workspace``,
``sandbox``, ``secrecy``; never ``session`` or anything above.
"""
