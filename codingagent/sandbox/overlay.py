"""A command run on an overlay of the workspace (Linux overlayfs): its writes land in a layer of
their own, the workspace untouched until the agent commits the layer (docs/undo.md).

The workspace is the overlay's lower layer; ``LAYER/upper`` receives what the command writes
(copied-up files, new files, whiteouts for what it removed), ``LAYER/work`` is overlayfs' own
scratch folder.  The overlay is mounted in a mount namespace of the command's own, made by
``unshare`` just before bubblewrap starts, so no other process ever sees it, and it is gone
with the command's last process.  (bubblewrap 0.9 and later can mount one itself,
``--overlay-src``; Debian 12 ships 0.8, so we mount it: one ``mount`` of the util-linux every
Linux has.)  As root the namespace is a mount namespace only; otherwise it is a user namespace
where we are root (overlayfs may be mounted there since Linux 5.11), and bubblewrap maps the
command back to the user's own id.  The ``userxattr`` option makes overlayfs keep its marks in
``user.overlay.*`` attributes either way.

Standard library only; only :mod:`codingagent.sandbox.bubblewrap` uses it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

UPPER = "upper"  # the layer's folder the command's writes go to
WORK = "work"  # overlayfs' scratch folder, on the same file system
_BAD = (",", ":", "\\", "\n")  # characters the mount options cannot carry as we write them
# $1 the options, $2 the mount point, then the command line: exec'd once the overlay is there.
_MOUNT = 'mount -t overlay overlay -o "$1" "$2" || exit 125; shift 2; exec "$@"'
_PROBE_TIMEOUT_S = 10.0


def problem(workspace: Path, layer: Path) -> str | None:
    """None when a command can run on an overlay of ``workspace`` whose layer is the folder
    ``layer`` (made by the caller, empty), else why not, for people."""
    if not sys.platform.startswith("linux"):
        return "overlays need Linux"
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount (util-linux) is not installed"
    ws, folder = workspace.resolve(), layer.resolve()
    if any(bad in str(path) for path in (ws, folder) for bad in _BAD):
        return f"a path holds one of {' '.join(_BAD[:3])} (mount options cannot name it)"
    if folder.is_relative_to(ws) or ws.is_relative_to(folder):
        return "the session's folder is inside the workspace (the layer must be outside it)"
    try:
        if os.stat(ws).st_dev != os.stat(folder.parent).st_dev:
            return "the session's folder is on another file system than the workspace"
    except OSError as e:
        return f"cannot look at {e.filename} ({e.strerror})"
    failed = _probe(str(folder.parent), os.geteuid() == 0)
    return f"the kernel refused an overlay here ({failed})" if failed else None


def wrap(bwrap_argv: list[str], workspace: Path, layer: Path) -> list[str]:
    """bubblewrap's command line ``bwrap_argv`` run with ``workspace`` an overlay whose writes
    go to ``layer``/upper."""
    argv = list(bwrap_argv)
    prefix = _unshare()
    if os.geteuid() != 0:  # root in our user namespace: the command gets the user's own ids
        argv[1:1] = ["--unshare-user", "--uid", str(os.getuid()), "--gid", str(os.getgid())]
    ws = str(workspace)
    return [*prefix, "/bin/sh", "-c", _MOUNT, "sh", options(ws, layer), ws, *argv]


def options(workspace: str, layer: Path) -> str:
    upper, work = layer / UPPER, layer / WORK
    return f"userxattr,lowerdir={workspace},upperdir={upper},workdir={work}"


def _unshare() -> list[str]:
    if os.geteuid() == 0:
        return ["unshare", "--mount", "--propagation", "private", "--"]
    return ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private", "--"]


@functools.cache
def _probe(parent: str, root: bool) -> str | None:
    """Mount a small overlay in ``parent``'s file system once (cached for the process, by
    folder and whether we are root): None when it works, else what went wrong."""
    try:
        return _try_mount(parent)
    except OSError as e:  # cannot even make the probe's folders there
        return f"cannot write in {parent}: {e.strerror}"


def _try_mount(parent: str) -> str | None:
    with tempfile.TemporaryDirectory(prefix=".codingagent-probe-", dir=parent) as scratch:
        lower, layer = Path(scratch, "lower"), Path(scratch, "layer")
        for folder in (lower, layer / UPPER, layer / WORK):
            folder.mkdir(parents=True)
        script = [*_unshare(), "/bin/sh", "-c", _MOUNT, "sh", options(str(lower), layer)]
        argv = [*script, str(lower), "/bin/sh", "-c", 'echo x > "$0/probe"', str(lower)]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=_PROBE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            return str(e)
        wrote = (layer / UPPER / "probe").is_file() and not (lower / "probe").exists()
        _make_removable(layer / WORK)
    if done.returncode == 0 and wrote:
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"exit code {done.returncode}"


def _make_removable(work: Path) -> None:
    """overlayfs leaves ``work/work`` with mode 000: let its owner remove it."""
    for folder in (work, work / "work"):
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)
