"""The local web page (``codingagent ui``): the session loop in a browser tab beside the chat.

:mod:`.server` serves the page and its JSON and event-stream API on 127.0.0.1; :mod:`.events`
is the loop's listener for the page; :mod:`.views` turns sessions and turns into the page's
JSON; :mod:`.diffs` makes each turn's unified diffs from its history.
"""
