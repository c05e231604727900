"""``python -m codingagent``: the same as the ``codingagent`` command."""

from codingagent.cli import main

main(prog_name="codingagent")
