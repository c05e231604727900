"""``python -m codingagent``: the same as the ``codingagent`` command."""

from .cli import main

main(prog_name="codingagent")
