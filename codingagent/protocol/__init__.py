"""The language: what a reply may say and how it is read.

:mod:`.commands` holds one model per tag command (CREATE_FILE ... DONE) and the parse errors;
:mod:`.parser` turns a reply's text into those commands (tags at the start of a line, bodies up
to their closing tag, the slips it tolerates and the ones it names); :mod:`.replies` decodes a
reply once (its text, thinking split off by :mod:`.reasoning` and :mod:`.harmony`, its Session
line found by :mod:`.drafts`, its echo and slips read by :mod:`.scan`, what a rendered page may
not run by :mod:`.codeblocks`); :mod:`.bodies` reads the bodies that have inner structure
(REPLACE blocks, EDIT_FILE lines), :mod:`.patches` a PATCH body; :mod:`.manual` is the PROTOCOL
text the model is given. Pure text in, values out: no files, no processes.

May import: the base (``state``: a problem with a reply is a ``CommandResult``) and pydantic.
"""
