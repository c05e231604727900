"""Secrecy: what of the user's secrets may reach a prompt, and what a command may read.

Owns the rule table (:mod:`.rules`), a session's masking of prompts and putting masks back
(:mod:`.masking`), known secrets in disguise (:mod:`.disguises`, and in hex dumps:
:mod:`.hexdumps`), the workspace's secret
files (:mod:`.secret_files`), and the secrets written in the workspace's files, source code
included, learned before the first command (:mod:`.file_scan`, with :mod:`.prefilter` and
:mod:`.matcher`); docs/secrets.md says all of it. The sandbox hides the files this package
finds, through the ``Sandbox`` protocol, without this package naming a backend.

May import: the standard library and hyperscan (nothing of ours).
"""
