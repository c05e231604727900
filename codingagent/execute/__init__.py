"""Execution: a reply's commands, run in order against the workspace and the shell.

``dispatch`` runs each command through its handler (one module per command family); ``matching``
finds REPLACE's SEARCH text (pure); ``guard`` catches placeholders and Python that does not
compile; ``context`` holds what the commands of one reply share and the one failure channel.
"""

from .context import TurnOutcome
from .dispatch import execute

__all__ = ["TurnOutcome", "execute"]
