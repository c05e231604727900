"""Execution: a reply's commands, run in order against the workspace and the shell.

``dispatch`` sends each command to its handler (an exhaustive ``match``) and makes its result;
one module per command family holds the handlers: ``whole_files`` (CREATE_FILE, DELETE_FILE,
READ_FILE), ``edit_file``, ``replace``, ``patch``, ``search``, ``run_command`` and
``conversation`` (MESSAGE, DONE, parse errors).  ``matching`` finds REPLACE's SEARCH text (pure,
no wording; a PATCH body is read by ``protocol.patches``), ``placeholders`` catches placeholders and
Python that does not compile, ``lines`` keeps a file's line endings, and ``context`` holds
what the commands of one reply share and the one failure channel.

Adding a command: its model in ``protocol/commands.py``, its row in ``parser.TAGS``, its handler
and its ``case`` in ``dispatch._handle`` (mypy fails until it has one), its paragraph in the
PROTOCOL text (``protocol/manual.py``).

May import: the base, ``protocol``, ``workspace``, ``sandbox``, ``secrecy``; never ``prompt``
or anything above.
"""

from codingagent.execute.context import TurnOutcome
from codingagent.execute.dispatch import execute

__all__ = ["TurnOutcome", "execute"]
