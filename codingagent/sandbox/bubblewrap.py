"""The bubblewrap backend (Linux): what a sandboxed command sees of the machine.

- The whole system read-only, the workspace writable (minus the agent's own folders).
- A fresh, size-limited tmpfs on ``/tmp``, ``$TMPDIR`` and ``$HOME``; the tool folders found
  there (``PATH`` entries, toolchain homes from the environment, the Python installation) are
  bound back read-only, but never their credential files (:data:`CREDENTIAL_PATTERNS`), which
  are replaced by an empty file wherever a toolchain home is.
- No Unix socket file of the host: a fresh tmpfs on ``/run`` (hence ``/var/run``) and the user
  runtime folders (``$XDG_RUNTIME_DIR``, ``/run/user``), and every other listening socket file
  the kernel knows of (``/proc/net/unix``) is covered by an empty file.  A read-only bind does
  not stop ``connect()``, and the Docker socket or the session bus is a full escape.
- No network, own PID, IPC and UTS namespaces, no capabilities, a new session, dies with the
  agent.
"""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from codingagent.sandbox import overlay
from codingagent.sandbox.scrub import TOOL_VARS, scrub_env

if TYPE_CHECKING:
    from codingagent.sandbox.backends import Job

_PROBE_TIMEOUT_S = 10.0
_NO_SPACE = "No space left on device"
# Files a toolchain keeps tokens in (cargo's credentials.toml, npm's .npmrc, ...): hidden in
# every toolchain home and its direct subfolders, whatever their case.
CREDENTIAL_PATTERNS = (
    *("credentials*", "*.token", "token", "auth*", "*secret*"),
    *(".netrc", "_netrc", ".npmrc", ".yarnrc*", ".pypirc", ".git-credentials", ".gem-credentials"),
    *("*.pem", "*.key", "id_rsa*", "id_ecdsa*", "id_ed25519*"),
)
_CREDENTIAL_NAME = re.compile("|".join(fnmatch.translate(p) for p in CREDENTIAL_PATTERNS))
_CREDENTIAL_DEPTH = 2  # the home itself and its direct subfolders (cargo's, gradle's, ...)
_RUNTIME_DIRS = ("/run", "/var/run", "/run/user")


class Bubblewrap:
    """bubblewrap, where it works (detected by one test run, cached for the process)."""

    name = "bwrap"
    isolated = True
    user_namespace = True
    hides_files = True

    def __init__(self) -> None:
        self.program = shutil.which("bwrap")

    def problem(self) -> str | None:
        if not sys.platform.startswith("linux"):
            return "bubblewrap needs Linux"
        if self.program is None:
            return "bubblewrap is not installed (Debian/Ubuntu: apt install bubblewrap)"
        failed = _probe(self.program)
        return f"bubblewrap does not work here ({failed})" if failed else None

    def describe(self) -> str:
        return (
            "bubblewrap: read-only system, writable workspace, private /tmp and home, no host"
            " socket files, no network, own process namespace"
        )

    def model_note(self) -> str | None:
        return "the system is read-only, the workspace writable, /tmp private"

    def wrap(self, argv: list[str], job: Job) -> list[str]:
        program = self.program or "bwrap"
        argv = bwrap_argv(program, job.workspace, job.read_only, job.tmp_bytes, job.hide) + argv
        argv = _hide_secret_files(argv, job.secret_files)
        return argv if job.layer is None else overlay.wrap(argv, job.workspace, job.layer)

    def layer_problem(self, workspace: Path, layer: Path) -> str | None:
        return self.problem() or overlay.problem(workspace, layer)

    def hidden_paths(self, extra: Iterable[str]) -> list[str]:
        return hidden_paths(extra)

    def limit_note(self, output: str, tmp_bytes: int | None) -> str:
        if tmp_bytes is not None and _NO_SPACE in output:
            return f"\n[limit reached: {tmp_bytes >> 20} MiB in /tmp (or the disk is full)]"
        return ""

    def protections(self, tmp_bytes: int | None) -> list[tuple[str, str]]:
        if tmp_bytes is None:
            tmp_limit = "off (setting)"
        elif not sizes_tmpfs(self.program or "bwrap"):
            tmp_limit = "off: this bubblewrap has no --size (0.5 and later)"
        else:
            tmp_limit = f"active: {tmp_bytes >> 20} MiB per tmpfs"
        return [
            ("read-only system", "active: only the workspace is writable"),
            ("no network", "active: own network namespace"),
            ("no host socket files", "active: fresh /run, socket files covered"),
            ("private /tmp and home", "active: fresh tmpfs"),
            (
                "tool credential files",
                "active: hidden: " + ", ".join(CREDENTIAL_PATTERNS[:4]) + ", ...",
            ),
            ("workspace secret files", "active: read as empty (setting secret_files_allow)"),
            ("/tmp size limit", tmp_limit),
        ]


@functools.cache
def _probe(bwrap: str) -> str | None:
    """Run the sandbox once, as a command would run (cached for the process): None if it
    works, else the first line of what went wrong."""
    python = os.path.realpath(sys.executable)
    with tempfile.TemporaryDirectory() as folder:
        argv = [*bwrap_argv(bwrap, Path(folder), (), None), python, "-I", "-S", "-c", "pass"]
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, env=scrub_env(os.environ)
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return str(e)
    if done.returncode == 0:
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else f"exit code {done.returncode}"


def bwrap_argv(
    bwrap: str,
    workspace: Path,
    read_only: Iterable[Path],
    tmp_bytes: int | None,
    hide: Iterable[str] = (),
) -> list[str]:
    """bubblewrap's command line up to ``--``; the order of the mounts matters (later wins)."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    hidden = hidden_paths(hide)
    argv += _hide_argv([path for path in hidden if not Path(path).is_relative_to(workspace)])
    size = [] if tmp_bytes is None or not sizes_tmpfs(bwrap) else ["--size", str(tmp_bytes)]
    scratch = _scratch_dirs()
    for folder in scratch:
        argv += [*size, "--tmpfs", folder]
    runtime = _runtime_dirs(scratch)
    for folder in runtime:
        argv += ["--tmpfs", folder]
    for folder in _tool_dirs(scratch + hidden):
        argv += ["--ro-bind-try", folder, folder]
    for path in credential_files(_tool_homes()):
        argv += ["--ro-bind-try", "/dev/null", path]
    for path in _socket_files([*scratch, *runtime, str(workspace)]):
        argv += ["--ro-bind-try", "/dev/null", path]
    argv += ["--bind", str(workspace), str(workspace)]
    for agent_dir in read_only:
        if agent_dir.is_relative_to(workspace):
            argv += ["--ro-bind-try", str(agent_dir), str(agent_dir)]
    for kept in _git_paths(workspace):
        argv += ["--ro-bind-try", str(kept), str(kept)]
    argv += _hide_argv([path for path in hidden if Path(path).is_relative_to(workspace)])
    return [
        *argv,
        *("--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"),
        *("--die-with-parent", "--new-session", "--cap-drop", "ALL"),
        *("--chdir", str(workspace), "--"),
    ]


def _hide_secret_files(argv: list[str], secret_files: tuple[str, ...]) -> list[str]:
    """``argv`` with an empty, read-only file bound over each of ``secret_files`` (after the
    workspace's own mounts, before ``--``)."""
    if not secret_files:
        return argv
    empty = _empty_file()
    # Not --ro-bind-try: were the empty file gone, the command must fail, not see the secret.
    binds = [arg for path in secret_files for arg in ("--ro-bind", empty, path)]
    at = argv.index("--chdir")
    return argv[:at] + binds + argv[at:]


_EMPTY: list[str] = []  # the empty file made last


def _empty_file() -> str:
    """An empty, read-only regular file of this process (removed at exit; made again if
    something cleaned the temporary folder)."""
    if _EMPTY and os.path.isfile(_EMPTY[-1]) and os.path.getsize(_EMPTY[-1]) == 0:
        return _EMPTY[-1]
    fd, path = tempfile.mkstemp(prefix="codingagent-empty-")
    os.close(fd)
    os.chmod(path, 0o444)
    atexit.register(_remove, path)
    _EMPTY.append(path)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def hidden_paths(extra: Iterable[str] = ()) -> list[str]:
    """What sandboxed commands do not see (docs/security.md §3): every home folder (``/home``,
    ``/root``, the home of each login account) and the ``extra`` paths (setting
    ``sandbox_hide``), those that exist. The workspace and the tool folders a command needs
    are bound back on top."""
    candidates = ["/home", "/root", *_account_homes(), *extra]
    found: list[str] = []
    for path in candidates:
        if not os.path.isabs(path) or not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        if real != "/" and real not in found:
            found.append(real)
    found.sort()  # a parent before its children, which it hides already
    return [p for i, p in enumerate(found) if not any(Path(p).is_relative_to(q) for q in found[:i])]


def _account_homes() -> list[str]:
    """The home folders of the root and login accounts (system accounts' "homes" such as
    ``/bin`` or ``/var/lib/x`` are left alone: builds may need them)."""
    try:
        import pwd
    except ImportError:  # Windows: no bubblewrap there anyway
        return []
    return [
        entry.pw_dir
        for entry in pwd.getpwall()
        if (entry.pw_uid == 0 or 1000 <= entry.pw_uid < 65534) and entry.pw_dir.count("/") >= 2
    ]


def _hide_argv(hidden: list[str]) -> list[str]:
    """An empty tmpfs over each hidden folder, ``/dev/null`` over each hidden file."""
    argv: list[str] = []
    for path in hidden:
        if os.path.isdir(path):
            argv += ["--tmpfs", path]
        else:
            argv += ["--ro-bind", "/dev/null", path]
    return argv


def _git_paths(workspace: Path) -> list[Path]:
    """The workspace's ``.git`` (folder, or a worktree's file) and, for a worktree, the
    repository it points to: read-only inside the sandbox, so no command plants config or
    hooks that git would run outside it (docs/security.md §5), and bound back if a home hid them."""
    git = workspace / ".git"
    if not os.path.isfile(git):
        return [git] if os.path.lexists(git) else []
    try:
        line = git.read_text(encoding="utf-8", errors="replace").strip()
        gitdir = (workspace / line.removeprefix("gitdir:").strip()).resolve()
        common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    except OSError:
        return [git]
    return [git, gitdir, common] if common != gitdir else [git, gitdir]


@functools.cache
def sizes_tmpfs(bwrap: str) -> bool:
    """Whether this bubblewrap can limit a tmpfs's size (``--size``, version 0.5 and later)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in done.stdout


def _scratch_dirs() -> list[str]:
    """The folders a sandboxed command gets an empty, private tmpfs on: /tmp, $TMPDIR, $HOME."""
    return _existing_dirs(["/tmp", os.environ.get("TMPDIR"), os.environ.get("HOME")], [])


def _runtime_dirs(scratch: list[str]) -> list[str]:
    """Where the host keeps its socket files, unless already a scratch folder (or inside one)."""
    runtime = _existing_dirs([*_RUNTIME_DIRS, os.environ.get("XDG_RUNTIME_DIR")], scratch)
    # Inside /run, a fresh /run hides them anyway; a separate tmpfs would fail to mount there.
    return [d for d in runtime if d == "/run" or not Path(d).is_relative_to("/run")]


def _existing_dirs(candidates: list[str | None], skip_under: list[str]) -> list[str]:
    found: list[str] = []
    for folder in candidates:
        if folder and os.path.isabs(folder) and os.path.isdir(folder):
            real = os.path.realpath(folder)
            inside = any(Path(real).is_relative_to(s) for s in skip_under)
            if real != "/" and real not in found and not inside:
                found.append(real)
    return sorted(found)  # a parent before its children: mounted later, a child stays visible


def _tool_homes() -> list[str]:
    """The toolchain homes named in the environment, wherever they are."""
    return _existing_dirs([os.environ.get(name) for name in TOOL_VARS], [])


def _tool_dirs(scratch: list[str]) -> list[str]:
    """Existing folders under ``scratch`` that commands need to see (read-only): ``PATH``
    entries, toolchain homes from the environment, the Python installation."""
    candidates = os.environ.get("PATH", "").split(os.pathsep) + _tool_homes()
    candidates += [sys.prefix, sys.base_prefix, sys.exec_prefix]
    found = []
    for folder in candidates:
        if not folder or not os.path.isabs(folder) or not os.path.isdir(folder):
            continue
        real = os.path.realpath(folder)
        hidden = any(Path(real).is_relative_to(s) for s in scratch)
        if hidden and real not in found:
            found.append(real)
    return found


def credential_files(homes: Iterable[str]) -> list[str]:
    """The files in ``homes`` (and their direct subfolders) named like credentials."""
    found: list[str] = []
    for home in homes:
        for path in _files(home, _CREDENTIAL_DEPTH):
            name = os.path.basename(path).lower()
            if path not in found and _CREDENTIAL_NAME.match(name):
                found.append(path)
    return found


def _files(folder: str, depth: int) -> Iterator[str]:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if depth > 1:
                    yield from _files(entry.path, depth - 1)
            elif entry.is_file():  # a symlink to a file, too: the bind covers its target
                yield entry.path
        except OSError:
            continue


def _socket_files(hidden: list[str]) -> list[str]:
    """Listening socket files of this network namespace outside the ``hidden`` folders (which
    get a fresh tmpfs or are the command's own)."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return []
    found: list[str] = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unnamed or abstract (the network namespace already hides those)
        path = fields[7]
        if path in found or any(Path(path).is_relative_to(h) for h in hidden):
            continue
        try:
            if stat.S_ISSOCK(os.stat(path, follow_symlinks=False).st_mode):
                found.append(path)
        except OSError:
            continue  # gone, or in another mount namespace
    return found
