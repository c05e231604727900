"""Where RUN_COMMAND runs, and what it cannot reach.

:mod:`.shell` runs one command with a timeout, an output cap, a scrubbed environment
(:mod:`.scrub`), a process limit (:mod:`.cgroup`, :mod:`.runner`) and the approval hook;
:mod:`.process` is the subprocess plumbing it uses. :mod:`.backends` is the seam: the
:class:`~.backends.Sandbox` protocol and the registry of backends read from the entry point
group ``codingagent.sandboxes`` (``bwrap`` = :mod:`.bubblewrap`, ``none``); no module outside
this package names a backend. :mod:`.protections` lists what the settings protect;
:mod:`.probe` finds what commands run in (the Environment section of a prompt).

May import: the base (``settings``, ``state``).
"""
