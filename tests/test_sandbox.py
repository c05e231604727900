"""The adversarial suite (issue 4): a hostile reply against the path guard and the command runner.

Every file case snapshots everything outside the workspace (bytes, mode, modification time,
link count) before and after, and checks that no result carries the outside secret: nothing
outside may be read, created or changed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from processes import gone, needs_proc
from sampling import examples

from codingagent.sandbox.backends import SandboxUnavailable, default_approval, sandbox_status
from codingagent.sandbox.shell import Limits, Shell, ShellResult
from codingagent.workspace import PathRejected, Workspace
from codingagent.workspace.pathguard import (
    BACKSLASH,
    CONTROL,
    HARDLINK,
    NAME_TOO_LONG,
    NUL,
    OUTSIDE,
    PROTECTED_AGENT,
    PROTECTED_GIT,
    RESERVED,
    STREAM,
    SYMLINK,
    TOO_LONG,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file system and shell")

SECRET = b"TOP SECRET outside the workspace"
LAYER, LAYER_REASON = sandbox_status("auto")
needs_bwrap = pytest.mark.skipif(LAYER != "bwrap", reason=f"bubblewrap layer: {LAYER_REASON}")
LAYERS = [
    "none",
    pytest.param("bwrap", marks=needs_bwrap),
]


# --- the arena: a workspace with an outside world next to it ----------------------------------


def make_arena(base: Path) -> tuple[Path, Path]:
    """``base/ws`` (the workspace), ``base/ws2`` (a sibling sharing the name prefix) and
    ``base/outside`` with a secret, plus the traps a hostile command could have left."""
    ws, outside = base / "ws", base / "outside"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / "outbox").mkdir()
    (ws / "a" / "b" / "x.txt").write_text("inside")
    (base / "ws2").mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    (ws / "out").symlink_to(outside)  # absolute, to outside
    (ws / "a" / "up").symlink_to("../../outside")  # relative, climbing out
    (ws / "trap").symlink_to(outside / "new.txt")  # dangling, to outside
    (ws / "abs").symlink_to(ws / "a")  # absolute, but inside
    (ws / "inner").symlink_to("a/b")  # relative, inside
    (ws / "loop").symlink_to("loop")
    (ws / "self").symlink_to(".")
    os.link(outside / "secret.txt", ws / "hard.txt")
    return ws, outside


def snapshot(base: Path, skip: Path) -> dict[str, tuple]:
    """Everything under ``base`` except ``skip``: type, bytes, mode, mtime, link count."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) != skip]
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
            found[str(path.relative_to(base))] = (
                info.st_mode,
                info.st_mtime_ns,
                info.st_nlink,
                data,
            )
    return found


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[tuple[Workspace, Path]]:
    ws, _ = make_arena(tmp_path)
    before = snapshot(tmp_path, skip=ws)
    yield Workspace(ws, protected=[ws / "outbox"]), tmp_path
    assert snapshot(tmp_path, skip=ws) == before, "something outside the workspace changed"


OPERATIONS: dict[str, Callable[[Workspace, str], object]] = {
    "read": lambda ws, rel: ws.read_bytes(rel),
    "write": lambda ws, rel: ws.write_text(rel, "PWNED"),
    "delete": lambda ws, rel: ws.delete(rel),
    "is_file": lambda ws, rel: ws.is_file(rel),
    "is_dir": lambda ws, rel: ws.is_dir(rel),
    "resolve": lambda ws, rel: ws.resolve(rel),
}


def attempt(ws: Workspace, operation: str, rel: str) -> object:
    """The operation's result, or the exception it raised; never the outside secret."""
    try:
        result: object = OPERATIONS[operation](ws, rel)
    except (PathRejected, OSError) as e:
        result = e
    assert SECRET not in (result if isinstance(result, bytes) else str(result).encode())
    if isinstance(result, Path):
        assert result.is_relative_to(ws.root)
    return result


def reason(ws: Workspace, operation: str, rel: str) -> str:
    result = attempt(ws, operation, rel)
    assert isinstance(result, PathRejected), f"{operation} {rel!r} gave {result!r}"
    return str(result)


# --- the path guard, case by case --------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("../ws2/x", OUTSIDE),  # the sibling sharing the prefix
        ("..", OUTSIDE),
        ("../outside/secret.txt", OUTSIDE),
        ("a/../../outside/secret.txt", OUTSIDE),
        ("a/b/../../../outside/secret.txt", OUTSIDE),
        ("/etc/passwd", OUTSIDE),
        ("//srv/share/x", OUTSIDE),
        ("C:foo", OUTSIDE),
        ("C:\\x", OUTSIDE),
        ("c:/windows/win.ini", OUTSIDE),
        ("\\\\srv\\s\\x", BACKSLASH),
        ("..\\..\\x", BACKSLASH),
        ("a\0b", NUL),
        ("a\nb", CONTROL),
        ("x/" * 2500, TOO_LONG),  # 5000 characters
        ("n" * 256, NAME_TOO_LONG),
        ("CON", RESERVED),
        ("con.txt", RESERVED),
        ("a/LPT1", RESERVED),
        ("nul ", RESERVED),
        ("a.txt:ads", STREAM),
        ("a.txt::$DATA", STREAM),
        (".GIT/hooks/pre-commit", PROTECTED_GIT),
        (".git/hooks/pre-commit", PROTECTED_GIT),
        ("a/../.Git/config", PROTECTED_GIT),
        ("OUTBOX/next.txt", PROTECTED_AGENT),  # compared case-insensitively
        ("out/secret.txt", OUTSIDE),  # a symlinked folder, absolute
        ("a/up/secret.txt", OUTSIDE),  # a symlinked folder, relative
        ("self/../outside/secret.txt", OUTSIDE),  # `..` after a symlink, as the kernel does it
    ],
)
@pytest.mark.parametrize("operation", ["read", "write", "delete", "is_file", "resolve"])
def test_hostile_paths_are_rejected(
    arena: tuple[Workspace, Path], operation: str, rel: str, expected: str
) -> None:
    ws, _ = arena
    assert reason(ws, operation, rel) == expected


def test_a_5000_character_path_is_too_long(arena: tuple[Workspace, Path]) -> None:
    ws, _ = arena
    assert reason(ws, "write", "a" * 5000) == TOO_LONG


def test_dangling_symlink_to_outside_is_not_created(arena: tuple[Workspace, Path]) -> None:
    ws, base = arena
    for operation in ("write", "read", "delete"):
        assert reason(ws, operation, "trap") == OUTSIDE
    assert not (base / "outside" / "new.txt").exists()


def test_dangling_symlink_inside_is_not_written_through(arena: tuple[Workspace, Path]) -> None:
    ws, _ = arena
    (ws.root / "later").symlink_to("a/later.txt")
    assert reason(ws, "write", "later") == SYMLINK
    assert not (ws.root / "a" / "later.txt").exists()


def test_hard_link_to_an_outside_file_is_refused(arena: tuple[Workspace, Path]) -> None:
    ws, _ = arena
    for operation in ("read", "write", "delete", "is_file"):
        assert reason(ws, operation, "hard.txt") == HARDLINK


def test_symlinks_inside_are_followed_for_reading(arena: tuple[Workspace, Path]) -> None:
    ws, _ = arena
    assert ws.read_bytes("inner/x.txt") == b"inside"
    assert ws.read_bytes("abs/b/x.txt") == b"inside"  # an absolute symlink to inside
    assert ws.relpath("abs/b/x.txt") == "a/b/x.txt"
    # Writing through a symlinked folder inside lands in the real folder, recorded as such.
    assert ws.write_text("inner/new.txt", "n") is True
    assert (ws.root / "a" / "b" / "new.txt").read_text() == "n"


def test_a_fifo_does_not_hang_a_read(arena: tuple[Workspace, Path]) -> None:
    ws, _ = arena
    os.mkfifo(ws.root / "pipe")
    started = time.monotonic()
    with pytest.raises(FileNotFoundError):
        ws.read_bytes("pipe")
    assert not ws.is_file("pipe")
    assert time.monotonic() - started < 1


def test_a_replaced_workspace_folder_is_noticed(tmp_path: Path) -> None:
    ws_dir, outside = make_arena(tmp_path)
    ws = Workspace(ws_dir)
    ws_dir.rename(tmp_path / "moved")
    ws_dir.symlink_to(outside)
    before = snapshot(tmp_path, skip=tmp_path / "moved")
    for operation in ("write", "read", "delete"):
        result = attempt(ws, operation, "secret.txt")
        assert isinstance(result, OSError) and result.errno == errno.ESTALE
    with pytest.raises(OSError, match="The workspace folder was replaced"):
        ws.list_files()
    assert snapshot(tmp_path, skip=tmp_path / "moved") == before


def test_the_listing_shows_nothing_from_outside(arena: tuple[Workspace, Path]) -> None:
    ws, _ = arena
    names = [name for name, _ in ws.list_files().entries]
    assert names == ["a/b/x.txt", "hard.txt"]


# --- the race: a folder swapped for a symlink while the agent writes ---------------------------

_SWAPPER = """
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, seconds = sys.argv[1].encode(), sys.argv[2].encode(), float(sys.argv[3])
end = time.monotonic() + seconds
print("swapping", flush=True)
while time.monotonic() < end:
    for _ in range(100):
        if libc.renameat2(-100, a, -100, b, 2):  # RENAME_EXCHANGE: no moment without `d`
            sys.exit(ctypes.get_errno())
"""


@contextlib.contextmanager
def swapping(folder: Path, link: Path) -> Iterator[None]:
    """Another process exchanges ``folder`` and ``link`` (a symlink) atomically, nonstop."""
    swapper = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(folder), str(link), "30"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "swapping\n"
        yield
    finally:
        swapper.kill()
        swapper.wait()
    assert swapper.returncode == -9, "the swapper stopped on its own"


@pytest.mark.skipif(
    not hasattr(ctypes.CDLL(None), "renameat2"), reason="needs renameat2 (Linux, glibc 2.28+)"
)
def test_swapping_a_folder_for_a_symlink_never_redirects_an_operation(tmp_path: Path) -> None:
    ws_dir, outside = tmp_path / "ws", tmp_path / "outside"
    (ws_dir / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "victim.txt").write_bytes(SECRET)
    (ws_dir / "d.swap").symlink_to(outside)
    ws = Workspace(ws_dir)
    with swapping(ws_dir / "d", ws_dir / "d.swap"):
        naive = plain_writes_until_one_lands_outside(ws_dir / "d", outside)
        before = snapshot(tmp_path, skip=ws_dir)
        outcomes: Counter[str] = Counter()
        for i in range(3000):
            for operation in ("write", "read", "delete")[: 1 + i % 3]:
                result = attempt(ws, operation, "d/victim.txt")
                outcome = "ok" if not isinstance(result, Exception) else type(result).__name__
                outcomes[f"{operation} {outcome}"] += 1
        after = snapshot(tmp_path, skip=ws_dir)
    assert naive, "the swapper never won the race against plain writes: the test proves nothing"
    assert after == before
    assert outcomes["write ok"] > 0 and outcomes["write PathRejected"] > 0, outcomes


def plain_writes_until_one_lands_outside(folder: Path, outside: Path) -> int:
    """The race is real: how many path-based writes into ``folder`` landed ``outside`` (a few
    seconds at most; cleaned up again)."""
    deadline = time.monotonic() + 5
    n = 0
    while time.monotonic() < deadline:
        for _ in range(50):
            n += 1
            with contextlib.suppress(OSError), open(folder / f"naive{n}.txt", "w") as f:
                f.write("x")
        landed = list(outside.glob("naive*"))
        if landed:
            for path in landed:
                path.unlink()
            return len(landed)
    return 0


# --- property: whatever the path, nothing outside is touched -----------------------------------

_COMPONENTS = st.sampled_from(
    [
        *("..", ".", "", "a", "b", "x.txt", "out", "up", "trap", "abs", "inner", "hard.txt"),
        *("loop", "self", "outside", "secret.txt", "ws2", ".git", "OUTBOX", "new"),
        *(" ", "ä", "~", "*", "...", "-x", "a:b", "CON", "\\", "\0", "\t"),
    ]
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(_COMPONENTS, min_size=1, max_size=7),
    prefix=st.sampled_from(["", "a/", "a/b/", "abs/", "inner/", "/"]),
    operation=st.sampled_from(sorted(OPERATIONS)),
)
def test_no_path_lets_an_operation_touch_the_outside(
    parts: list[str], prefix: str, operation: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        ws_dir, _ = make_arena(base)
        before = snapshot(base, skip=ws_dir)
        ws = Workspace(ws_dir, protected=[ws_dir / "outbox"])
        attempt(ws, operation, prefix + "/".join(parts))
        assert snapshot(base, skip=ws_dir) == before


# --- commands: nothing outlives the command ----------------------------------------------------


@pytest.mark.slow  # real time: a time limit, a kill or a poll
@needs_proc
def test_a_setsid_grandchild_does_not_survive_the_timeout(tmp_path: Path) -> None:
    command = "setsid sh -c 'sleep 100 & echo $! > pid; wait' & sleep 100"
    result = Shell(timeout=0.5).run(command, tmp_path)
    assert result.timed_out and result.duration_s < 3
    assert gone(tmp_path / "pid")


@needs_proc
def test_a_double_forked_daemon_does_not_survive_the_command(tmp_path: Path) -> None:
    # The classic daemon: fork, setsid, fork again, parent exits; init would adopt it.
    command = "( setsid sh -c '( sleep 100 & echo $! > pid ) ; exit 0' & ) ; sleep 0.2; echo done"
    started = time.monotonic()
    result = Shell(timeout=10).run(command, tmp_path)
    assert (result.exit_code, result.output) == (0, "done\n")
    assert time.monotonic() - started < 2
    assert gone(tmp_path / "pid")


@pytest.mark.slow  # real time: a time limit, a kill or a poll
@needs_proc
def test_killing_the_runner_does_not_free_its_children(tmp_path: Path) -> None:
    # The command kills the process watching it: its setsid child is found by its tag.
    command = "setsid sleep 100 & echo $! > pid; sleep 0.2; kill -9 $PPID; sleep 100"
    started = time.monotonic()
    result = Shell(timeout=10).run(command, tmp_path)
    assert result.exit_code == -9
    assert time.monotonic() - started < 3
    assert gone(tmp_path / "pid")


@pytest.mark.slow  # real time: a time limit, a kill or a poll
@needs_proc
def test_an_interrupted_agent_stops_the_command(tmp_path: Path) -> None:
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            Shell(timeout=30).run("sleep 100 & echo $! > pid; wait", tmp_path)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert gone(tmp_path / "pid")


_DYING_AGENT = """
import sys
from pathlib import Path
from codingagent.sandbox.shell import Shell
Shell(timeout=30).run("sleep 100 & echo $! > pid; wait", Path(sys.argv[1]))
"""


@needs_proc
def test_a_killed_agent_takes_its_command_along(tmp_path: Path) -> None:
    agent = subprocess.Popen([sys.executable, "-c", _DYING_AGENT, str(tmp_path)])
    deadline = time.monotonic() + 10
    while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    agent.kill()
    agent.wait()
    assert gone(tmp_path / "pid", within=3)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_background_child_does_not_hold_up_the_result(tmp_path: Path, layer: str) -> None:
    started = time.monotonic()
    result = Shell(timeout=10, sandbox=layer).run("sleep 30 & echo done", tmp_path)
    assert time.monotonic() - started < 1.5
    assert (result.exit_code, result.output, result.timed_out) == (0, "done\n", False)


@pytest.mark.parametrize("layer", LAYERS)
def test_the_exit_status_survives_the_layers(tmp_path: Path, layer: str) -> None:
    shell = Shell(timeout=10, sandbox=layer)
    assert shell.run("exit 3", tmp_path).exit_code == 3
    assert shell.run("kill -9 $$", tmp_path).exit_code == -9
    assert shell.run("kill -TERM $$", tmp_path).exit_code == -15


_RSS_HARNESS = """
import sys
from pathlib import Path
from codingagent.sandbox.shell import Shell

def high_water_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

shell = Shell(timeout=2.0, max_output=4000)
shell.run("echo warm-up", Path(sys.argv[1]))
before = high_water_kib()
result = shell.run("yes", Path(sys.argv[1]))
print(before, high_water_kib(), result.cut_chars, result.timed_out, len(result.output))
"""


@pytest.mark.slow  # real time: a watcher, a poll, a sleep or a build
@needs_proc
def test_yes_keeps_the_agents_memory_bounded(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _RSS_HARNESS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    before, after, cut, timed_out, shown = done.stdout.split()
    assert timed_out == "True"
    assert int(cut) > 50_000_000  # `yes` printed at least 100 MB in its 2 s ...
    assert int(after) - int(before) < 16 * 1024  # ... and the agent grew by less than 16 MiB
    assert int(shown) < 4100


@pytest.mark.parametrize("layer", LAYERS)
def test_a_200_mb_write_stops_at_the_file_size_limit(tmp_path: Path, layer: str) -> None:
    limit = 10 * 1024 * 1024
    shell = Shell(timeout=20, sandbox=layer, limits=Limits(file_bytes=limit))
    result = shell.run("head -c 200000000 /dev/zero > big; echo status=$?", tmp_path)
    # The shell names the signal (bash adds its line and the job), then the status 128 + SIGXFSZ.
    assert "File size limit exceeded" in result.output
    assert result.output.endswith("\nstatus=153\n")
    assert (tmp_path / "big").stat().st_size == limit


@pytest.mark.slow  # real time: a time limit, a kill or a poll
def test_limits_are_set_for_the_command(tmp_path: Path) -> None:
    shell = Shell(timeout=5, limits=Limits(cpu_s=7, file_bytes=12345, nproc=None))
    limits = shell.run("cat /proc/self/limits", tmp_path).output
    assert _limit_line(limits, "Max cpu time") == ["7", "8", "seconds"]
    assert _limit_line(limits, "Max file size") == ["12345", "12345", "bytes"]
    assert _limit_line(limits, "Max core file size") == ["0", "0", "bytes"]
    # A CPU-bound loop is stopped by SIGXCPU (24) before its timeout.
    busy = Shell(timeout=10, limits=Limits(cpu_s=1)).run("while :; do :; done", tmp_path)
    assert (busy.exit_code, busy.timed_out) == (-24, False)  # the limit, not the timeout


def _limit_line(limits: str, name: str) -> list[str]:
    line = next(line for line in limits.splitlines() if line.startswith(name))
    return line[len(name) :].split()


@pytest.mark.parametrize("layer", LAYERS)
def test_secret_variables_are_invisible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layer: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-1")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret-2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-3")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:secret-4@db/x")
    output = Shell(timeout=10, sandbox=layer).run("env; cat /proc/$$/environ", tmp_path).output
    assert "PATH=" in output
    assert "secret-" not in output


# --- approval and sandbox choice ----------------------------------------------------------------


def test_a_refused_command_does_not_run(tmp_path: Path) -> None:
    asked: list[str] = []

    def refuse(command: str) -> bool:
        asked.append(command)
        return False

    result = Shell(approve=refuse).run("touch ran", tmp_path)
    assert asked == ["touch ran"]
    assert result == ShellResult(None, "", False, duration_s=0.0, cut_chars=0, approved=False)
    assert not (tmp_path / "ran").exists()
    assert Shell(approve=lambda _: True).run("touch ran", tmp_path).approved
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    ("isolated", "tty", "policy"),
    [(False, True, "ask"), (False, False, "allow"), (True, True, "allow")],
)
def test_default_approval(isolated: bool, tty: bool, policy: str) -> None:
    assert default_approval(isolated, tty) == policy


def test_asking_for_bwrap_where_it_is_missing_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed"):
        Shell(sandbox="bwrap")
    shell = Shell(sandbox="auto")
    assert shell.sandbox_layer == "none"
    assert "apt install bubblewrap" in shell.sandbox_reason
    assert sandbox_status("none")[0] == "none"
    with pytest.raises(ValueError, match="sandbox must be one of auto, bwrap, none"):
        sandbox_status("docker")


# --- bubblewrap: the command's view of the machine ---------------------------------------------


@needs_bwrap
def test_bwrap_has_no_network(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        probe = f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo reached"
        assert Shell(timeout=10).run(probe, tmp_path).output == "reached\n"  # the control
        sandboxed = Shell(timeout=10, sandbox="bwrap").run(probe, tmp_path)
    assert "reached" not in sandboxed.output
    assert sandboxed.exit_code != 0
    interfaces = Shell(sandbox="bwrap").run("tail -n +3 /proc/net/dev", tmp_path).output
    assert [line.split(":")[0].strip() for line in interfaces.splitlines()] == ["lo"]


@needs_bwrap
def test_bwrap_keeps_home_and_the_rest_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, ws, outside = tmp_path / "home", tmp_path / "home" / "proj", tmp_path / "outside"
    ws.mkdir(parents=True)
    outside.mkdir()
    (home / ".bashrc").write_text("original\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_bytes(SECRET)
    (outside / "secret.txt").write_bytes(SECRET)
    monkeypatch.setenv("HOME", str(home))
    before = snapshot(tmp_path, skip=ws)
    command = (
        "echo pwned >> ~/.bashrc; cat ~/.ssh/id_rsa; cat ../../outside/secret.txt;"
        f" echo pwned > {outside}/new.txt; touch /etc/pwned; echo made > made.txt; exit 0"
    )
    result = Shell(timeout=10, sandbox="bwrap").run(command, ws)
    assert SECRET.decode() not in result.output
    assert (ws / "made.txt").read_text() == "made\n"  # the workspace itself is writable
    assert snapshot(tmp_path, skip=ws) == before
    assert not Path("/etc/pwned").exists()


@needs_bwrap
def test_bwrap_drops_root_powers(tmp_path: Path) -> None:
    # Without --cap-drop ALL, root inside could remount / read-write and change the machine.
    result = Shell(timeout=10, sandbox="bwrap").run(
        "mount -o remount,rw / && touch /pwned-by-remount; grep CapEff /proc/self/status",
        tmp_path,
    )
    assert not Path("/pwned-by-remount").exists()
    assert "CapEff:\t0000000000000000" in result.output


@needs_bwrap
def test_bwrap_agent_folders_in_the_workspace_stay_read_only(tmp_path: Path) -> None:
    (tmp_path / "outbox").mkdir()
    (tmp_path / "outbox" / "prompt.txt").write_text("prompt")
    shell = Shell(timeout=10, sandbox="bwrap", read_only=[tmp_path / "outbox"])
    result = shell.run("rm -rf outbox; echo x > outbox/evil.txt; echo ok > mine.txt", tmp_path)
    assert (tmp_path / "outbox" / "prompt.txt").read_text() == "prompt"
    assert not (tmp_path / "outbox" / "evil.txt").exists()
    assert (tmp_path / "mine.txt").read_text() == "ok\n", result.output


@pytest.mark.slow  # real time: a time limit, a kill or a poll
@needs_bwrap
def test_bwrap_kill_minus_one_leaves_the_agent_alive(tmp_path: Path) -> None:
    bystander = subprocess.Popen(["sleep", "60"])  # same user, outside the sandbox
    try:
        # Guarded twice over: only ever run `kill -9 -1` inside a PID namespace.
        command = (
            '[ "$(cat /proc/1/comm)" = bwrap ] || exit 99;'
            " (sleep 0.5; touch survived) & kill -9 -1; sleep 1; touch survived"
        )
        shell = Shell(timeout=10, sandbox="bwrap")
        result = shell.run(command, tmp_path)
        assert result.exit_code != 99, "not in a PID namespace: refused to run kill -9 -1"
        time.sleep(1)
        assert not (tmp_path / "survived").exists()
        assert bystander.poll() is None
        assert shell.run("echo still here", tmp_path).output == "still here\n"
    finally:
        bystander.kill()
        bystander.wait()


@needs_bwrap
def test_bwrap_timeout_kills_the_whole_namespace(tmp_path: Path) -> None:
    marker = f"sleep 100.{os.getpid()}"  # other tests may be sleeping 100 s right now
    command = f"setsid sh -c '{marker}' & trap '' TERM; echo started; {marker}"
    result = Shell(timeout=0.5, sandbox="bwrap").run(command, tmp_path)
    assert (result.timed_out, result.output) == (True, "started\n")
    assert result.duration_s < 2.5
    time.sleep(0.2)
    leftovers = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert leftovers.stdout == ""
