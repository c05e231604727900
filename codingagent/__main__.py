"""``python -m codingagent``: the same as the ``codingagent`` command."""

from codingagent.frontends.cli import main

main(prog_name="codingagent")
