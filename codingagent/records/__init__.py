"""The records: what lives on disk, read and written the same way by every wing above.

:mod:`.shelf` is the one base: JSON files kept by id in one folder, written atomically, found by
a prefix, each with its lock. On it stand :mod:`.store` (a run's sessions: the run-directory
layout, each session's state, its folders) and :mod:`.queues` (a queue of tasks). Beside them:
:mod:`.summaries` (the few fields ``codingagent sessions`` lists, read without pydantic),
:mod:`.runfolder` (where a run's folders are: the seed layout, or a project's folder in the
user's state), :mod:`.history` (each turn's record: the reply, the state before, results, meta
and the pre-images, framed and checksummed), :mod:`.changeset` (what turns changed, before and
after, by the one rule "after is the next turn's pre-image, or the file now") and
:mod:`.hunks` (the one diff engine: hunks that can be applied one by one, and their unified
text). Writing a turn's record durably is the turn machinery's (``transaction``); reading it is
anyone's.

May import: the base (``fsio``, ``state``, ``folders``), ``workspace`` (a file as it is now,
pre-images), pydantic; nothing else of the package.
"""
