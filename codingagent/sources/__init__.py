"""Reply sources for the session loop (:class:`codingagent.app.ReplySource`): one module each."""
