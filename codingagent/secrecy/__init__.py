"""Secrets kept out of prompts: :mod:`.masking` finds secrets in text the model would see
(file contents, command output, the environment) and replaces each with a mask naming its kind.

May import: the standard library and detect-secrets (nothing of ours).
"""
