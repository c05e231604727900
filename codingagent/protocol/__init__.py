"""The language: what a reply may say and how it is read.

:mod:`.commands` holds one model per tag command (CREATE_FILE ... DONE) and the parse errors;
:mod:`.parser` turns a reply's text into those commands (tags at the start of a line, bodies up
to their closing tag, the slips it tolerates and the ones it names); :mod:`.bodies` reads the
bodies that have inner structure (REPLACE blocks, EDIT_FILE lines); :mod:`.manual` is the PROTOCOL
text the model is given. Pure text in, values out: no files, no processes.

May import: the standard library and pydantic only (nothing of ours).
"""
