"""``doctor``'s rows: each protection of RUN_COMMAND and whether it is active here."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from codingagent.sandbox import cgroup
from codingagent.sandbox.backends import sandbox_status
from codingagent.sandbox.process import POSIX
from codingagent.sandbox.shell import Limits, Shell, mib

if TYPE_CHECKING:
    from codingagent.settings import Settings


def protections(settings: Settings) -> list[tuple[str, str]]:
    """Each protection of RUN_COMMAND and whether it is active here, for ``doctor``."""
    shell = Shell(sandbox=sandbox_status(settings.sandbox)[0], limits=Limits.of(settings))
    limits = shell.limits

    def limit(size: int | None, what: str) -> str:
        return "off (setting)" if size is None else f"active: {mib(size)} {what}"

    process_limit = {
        "cgroup": f"active: {limits.nproc} per command (pids cgroup)",
        "rlimit": f"active: {limits.nproc} per command (RLIMIT_NPROC in a user namespace)",
        "none": "off: no pids cgroup can be made here"
        + (", and RLIMIT_NPROC does not bind root" if POSIX and os.geteuid() == 0 else ""),
    }[shell.process_limit()]
    escape = "pids cgroup" if cgroup.pids_root() else "the sandbox's own PID namespace"
    return [
        ("environment scrub", "active: allow-list, secret names, secret values"),
        *shell.backend.protections(limits.tmp_bytes),
        ("memory limit", limit(limits.memory_bytes, "address space per process")),
        ("process limit", process_limit if limits.nproc is not None else "off (setting)"),
        ("file size limit", limit(limits.file_bytes, "per file")),
        ("CPU time limit", "active: the timeout times the CPUs"),
        (
            "no escaping processes",
            f"active: {escape}"
            if shell.backend.isolated or cgroup.pids_root()
            else "partial: a process that leaves the session and clears its environment"
            " escapes after killing the runner",
        ),
    ]
