"""The code map: definitions and references of a workspace's source files, parsed with
tree-sitter (grammar wheels, one per language) or Python's ``ast``, ranked as aider ranks
them over a graph kept per state of the tree, cached by size and change time; a tree never
seen is parsed within a budget, most likely files first (docs/prompts.md, "The code map").

May import: the base (``fsio``), tree-sitter and its grammars. ``prompt/`` and ``execute/``
import it (the Code Map section; READ_FILE ``symbol=`` for languages other than Python).
"""
