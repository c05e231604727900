"""What the model sees: :mod:`.outbox` writes the next prompt into ``outbox/`` (gathered by
:mod:`.compose`, rendered by :mod:`.render`, masked, fitted to the budget); :mod:`.render` writes
a prompt (HEADER, PROTOCOL, results, requested files, the workspace overview, the task) from the
session's state; :mod:`.overview` is the workspace listing it shows and :mod:`.changes` what
changed in it since the model last saw it; :mod:`.instructions`, :mod:`.checkview`,
:mod:`.named`, :mod:`.mapview` and :mod:`.pointing` (the code the task points at) are its
sections; :mod:`.fitting` fits a prompt or a request to a model's window.

May import: the base, ``records`` (where the prompt is written), ``protocol`` (the PROTOCOL
text), ``workspace`` (listing), ``sandbox`` (the environment note), ``secrecy`` (masking),
``codemap`` (the code map).
"""
