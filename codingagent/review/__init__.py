"""Review: a reply's file changes held for the user, per file and per hunk (docs/review.md).

``scratch`` (a workspace whose writes stay in memory), ``proposal`` (what a reply's file
commands would do, worked out on a scratch, as hunks of the one diff engine,
``records.hunks``), ``record`` (the held review, durable in ``sessions/<id>/review/``),
``decision`` (what the user accepted, and the turn's file commands as steps that write just
that). ``session/reviewing.py`` holds a reply and applies a decision; the front ends show a
review and ask.

May import: ``transaction/``, ``records/``, ``execute/`` and the wings below them, the base;
never ``session/`` or anything above.
"""
