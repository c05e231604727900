"""What the LLM's commands will find: OS, shell, Python, common tools, network.

Models asked these in every session, and spent a command finding out. So a small script runs
once, in the same sandbox and with the same environment as RUN_COMMAND (through the session's
:class:`~codingagent.sandbox.shell.Shell`, without asking for approval: it is the agent's own fixed
script, not the LLM's), and the prompt shows its answers under ``## Environment``.

The network probe sends nothing: it asks the kernel for a route to a documentation address
(RFC 5737) by connecting a UDP socket, which fails at once where there is no network (as
inside bubblewrap).

Probed once per process for a given sandbox and ``PATH``, and again for a workspace in which a
version manager's shims would choose another Python (a ``.python-version`` or ``.tool-versions``
in it or a folder above it): nothing else the script finds depends on the folder it runs in.
The facts are kept in the session state, so a prompt written later without a shell (``show``)
shows the same."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import TYPE_CHECKING

from codingagent.state import Environment

if TYPE_CHECKING:
    from codingagent.sandbox.shell import Shell


TOOLS = ("bash", "git", "make", "gcc", "node", "npm", "cargo", "go", "java", "rg", "curl")


_PROBE_TIMEOUT_S = 20.0


_PYTHON_FACTS = """
import importlib.util, socket, sys
print("python=%s %d.%d.%d" % ((sys.argv[1],) + tuple(sys.version_info[:3])))
if importlib.util.find_spec("pytest"):
    print("pytest-module=" + sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.connect(("192.0.2.1", 9))
    print("net=route")
except OSError:
    print("net=none")
"""


PROBE_SCRIPT = f"""\
echo "os=$(uname -sr 2>/dev/null)"
(. /etc/os-release 2>/dev/null && echo "distro=$PRETTY_NAME")
echo "sh=$(readlink -f "${{BASH:-/bin/sh}}" 2>/dev/null)"
(set -o 2>/dev/null | grep -q 'pipefail[[:space:]]*on') && echo "pipefail=on"
first=""
for p in python3 python; do
  real=$(readlink -f "$(command -v "$p" 2>/dev/null)" 2>/dev/null) || continue
  [ -n "$real" ] || continue
  if [ "$real" = "$first" ]; then  # the same program: its facts under this name
    echo "$facts" | sed -e "s/=python3 /=$p /" -e "s/=python3\\$/=$p/"; continue
  fi
  facts=$("$p" -c '{_PYTHON_FACTS}' "$p" 2>/dev/null) && echo "$facts" && first=$real
done
for t in {" ".join(TOOLS)} pytest; do command -v "$t" >/dev/null 2>&1 && echo "tool=$t"; done
true
"""


# The files a version manager's shims read to choose a tool's version (pyenv, asdf, mise).
VERSION_FILES = (".python-version", ".tool-versions", "mise.toml", ".mise.toml")

_cache: dict[tuple, Environment] = {}


def probe(shell: Shell, workspace: Path) -> Environment:
    """The environment commands run in, found by running the probe script through ``shell``
    in ``workspace`` (once per process for the same sandbox and ``PATH``, and per workspace
    where a version file is in force: see the module's doc)."""
    pinned = str(workspace) if _version_file_above(workspace) else None
    key = (shell.sandbox_layer, shell.hides_files, pinned, os.environ.get("PATH"))
    if key not in _cache:
        unattended = copy.copy(shell)  # the same sandbox and limits, but no approval question
        unattended.approve = None
        unattended.timeout = min(shell.timeout, _PROBE_TIMEOUT_S)
        unattended.max_output = 20_000
        try:
            output = unattended.run(PROBE_SCRIPT, workspace).output
        except OSError:
            output = ""
        facts = parse_probe(output, shell.backend.model_note())
        _cache[key] = facts.model_copy(update={"hides_files": shell.hides_files})
    return _cache[key]


def _version_file_above(folder: Path) -> bool:
    """Whether ``folder`` or a folder above it holds one of :data:`VERSION_FILES`."""
    for each in (folder, *folder.parents):
        if any(os.path.lexists(os.path.join(each, name)) for name in VERSION_FILES):
            return True
    return False


def parse_probe(output: str, sandbox: str | None = None) -> Environment:
    """The facts in the probe script's ``key=value`` lines (unknown lines are ignored)."""
    facts: dict[str, list[str]] = {}
    for line in output.splitlines():
        key, eq, value = line.partition("=")
        if eq and value.strip():
            facts.setdefault(key, []).append(value.strip())

    def first(key: str) -> str | None:
        return facts[key][0] if key in facts else None

    os_name, distro = first("os"), first("distro")
    if os_name and distro:
        os_name = f"{os_name} ({distro})"
    pythons = {}
    for entry in facts.get("python", []):
        command, _, version = entry.partition(" ")
        pythons[command] = version
    network = facts.get("net")
    return Environment(
        os=os_name or distro,
        shell=first("sh"),
        pipefail=first("pipefail") == "on",
        pythons=pythons,
        pytest_module=first("pytest-module"),
        tools=facts.get("tool", []),
        network=None if not network else "route" in network,
        sandboxed=sandbox is not None,
        sandbox=sandbox,
    )
