"""Reply sources for the session loop (:class:`codingagent.session.seams.ReplySource`): one
module each."""
