"""The local web page (``codingagent ui``): the session loop in a browser tab beside the chat.

:mod:`.server` serves the page and its JSON and event-stream API on 127.0.0.1 (:mod:`.intake`
caps a request's body); :mod:`.actions` are what the page does to sessions; :mod:`.events` is
the loop's front end for the page; :mod:`.views` formats what the session wing reads
(``session.reading``: sessions, turns, their diffs) as the page's JSON.
"""
