"""What the model sees: :mod:`.render` writes a prompt (HEADER, PROTOCOL, results, requested
files, the workspace overview, the task) from the session's state; :mod:`.overview` is the
workspace listing and project summary it shows; :mod:`.compose` puts them together for one
session and masks secrets in the result.

May import: the base, ``protocol`` (the PROTOCOL text), ``workspace`` (listing), ``sandbox``
(the environment note), ``secrecy`` (masking).
"""
