"""Issue 18: socket files, tool homes, secrets in values, memory and process limits, escapes.

Through real bubblewrap, real listeners and real processes: each attack is first shown to
work without the protection (where that is safe), then to fail with it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from importlib.metadata import distribution
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from invoking import run
from processes import needs_proc

from codingagent.sandbox import cgroup as _cgroup
from codingagent.sandbox.backends import sandbox_status
from codingagent.sandbox.protections import protections
from codingagent.sandbox.scrub import scrub_env
from codingagent.sandbox.shell import Limits, Shell
from codingagent.settings import load_settings

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX sandbox")

LAYER, LAYER_REASON = sandbox_status("auto")
needs_bwrap = pytest.mark.skipif(LAYER != "bwrap", reason=f"bubblewrap layer: {LAYER_REASON}")
LAYERS = ["none", pytest.param("bwrap", marks=needs_bwrap)]
CONNECT = (
    f'{sys.executable} -I -c "import socket,sys; s=socket.socket(socket.AF_UNIX);'
    " s.connect(sys.argv[1]); print('got', s.recv(9).decode())\" "
)


@contextlib.contextmanager
def listener(folder: Path) -> Iterator[Path]:
    """A Unix socket file in ``folder`` (made, then removed) that answers every client."""
    folder.mkdir(parents=True)
    path = folder / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.05)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                client, _ = server.accept()
                client.sendall(b"the-agent")
                client.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        stop.set()
        thread.join()
        server.close()
        shutil.rmtree(folder)


def _writable_dir(*candidates: str) -> str:
    for folder in candidates:
        if os.path.isdir(folder) and os.access(folder, os.W_OK):
            return folder
    pytest.skip(f"none of {candidates} is writable here")


@needs_bwrap
@pytest.mark.parametrize("parent", ["/run", "/var/tmp"])
def test_no_host_socket_file_is_reachable(tmp_path: Path, parent: str) -> None:
    # /run gets a fresh tmpfs; elsewhere (/var/tmp) the socket file itself is covered.
    with listener(Path(_writable_dir(parent)) / f"codingagent-test-{uuid.uuid4().hex}") as path:
        command = CONNECT + str(path)
        assert Shell(timeout=10).run(command, tmp_path).output == "got the-agent\n"
        sandboxed = Shell(timeout=10, sandbox="bwrap").run(command, tmp_path)
    assert sandboxed.exit_code != 0
    assert "the-agent" not in sandboxed.output
    assert "Error" in sandboxed.output  # refused or not found, not a crash of the runner


@needs_bwrap
@pytest.mark.parametrize("under_home", [True, False])
def test_a_tool_home_is_visible_without_its_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, under_home: bool
) -> None:
    home = tmp_path / "home"
    base = home if under_home else Path(tempfile.mkdtemp(dir=_writable_dir("/var/tmp")))
    cargo = base / ".cargo"
    (cargo / "bin").mkdir(parents=True)
    (cargo / "registry").mkdir()
    (cargo / "bin" / "tool").write_text("the tool\n")
    (cargo / "credentials.toml").write_text('[registry]\ntoken = "cio-secret-1"\n')
    (cargo / "registry" / "auth.json").write_text("secret-2\n")
    (cargo / ".netrc").write_text("machine x password secret-3\n")
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CARGO_HOME", str(cargo))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    command = (
        'cat "$CARGO_HOME/bin/tool" "$CARGO_HOME/credentials.toml"'
        ' "$CARGO_HOME/registry/auth.json" "$CARGO_HOME/.netrc"; ls "$CARGO_HOME"'
    )
    try:
        assert "secret-1" in Shell(timeout=10).run(command, workspace).output
        output = Shell(timeout=10, sandbox="bwrap").run(command, workspace).output
    finally:
        if not under_home:
            shutil.rmtree(base)
    assert output.startswith("the tool\n")
    assert "credentials.toml" in output  # there, but empty
    assert "secret-" not in output


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PIP_EXTRA_INDEX_URL", "https://pypi.example/simple?access_token=secret-1"),
        ("HTTPS_PROXY", "http://proxy.example:3128/?auth=secret-2"),
        ("PIP_INDEX_URL", "https://x.example/simple/?X-Amz-Signature=secret-3&a=b"),
        ("LANG", "ghp_" + "a1B2" * 9),
        ("PYTHONSTARTUP", "/x/github_pat_" + "Z9" * 15),
        ("TZ", "AKIA" + "ABCDEFGHIJ234567"),
        ("TERM", "xoxb-1234567890-secret"),
        ("PIP_CERT", "glpat-" + "x" * 20),
        ("SHELL", "sk-proj-" + "q" * 30),
        ("PYTHONPATH", "-----BEGIN OPENSSH PRIVATE KEY-----"),
        ("HTTP_PROXY", "https://user:pw@proxy.example"),
    ],
)
def test_values_that_carry_credentials_are_dropped(name: str, value: str) -> None:
    assert scrub_env({name: value, "HOME": "/home/u"}) == {"HOME": "/home/u"}


TOKENS = st.sampled_from(
    ["ghp_", "gho_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "hf_", "sk-", "sk-ant-", "npm_"]
)


@given(
    before=st.text(max_size=30),
    separator=st.sampled_from(["", " ", "=", ":", "/", ",", ";", '"', "'", "@"]),
    token=TOKENS,
    body=st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=36
    ),
    after=st.text(max_size=30),
)
def test_a_known_token_anywhere_in_a_value_drops_it(
    before: str, separator: str, token: str, body: str, after: str
) -> None:
    assume(separator or not before)
    value = f"{before}{separator}{token}{body}{after}"
    assert scrub_env({"PYTHONWARNINGS": value}) == {}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HTTP_PROXY", "http://proxy.example:3128"),
        ("PIP_INDEX_URL", "https://pypi.org/simple?format=json&page=2"),
        ("PATH", "/usr/local/sbin:/usr/bin:/opt/sk-tools/bin"),
        ("LANG", "en_US.UTF-8"),
        ("PYTHONPATH", "/src/keyboard:/src/tokenizer"),
    ],
)
def test_ordinary_values_stay(name: str, value: str) -> None:
    assert scrub_env({name: value}) == {name: value}


@pytest.mark.parametrize("layer", LAYERS)
def test_no_variable_carries_a_url_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layer: str
) -> None:
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://pypi.example/simple?access_token=secret-1")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128/?auth=secret-2")
    monkeypatch.setenv("PYTHONWARNINGS", "ghp_" + "s3cr3t" * 6)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    output = Shell(timeout=10, sandbox=layer).run("env; cat /proc/$$/environ", tmp_path).output
    assert "HTTP_PROXY=http://proxy.example:3128" in output
    assert "secret-" not in output
    assert "s3cr3t" not in output


@pytest.mark.parametrize("layer", LAYERS)
def test_allocating_past_the_memory_limit_fails_clearly(tmp_path: Path, layer: str) -> None:
    shell = Shell(timeout=20, sandbox=layer, limits=Limits(memory_bytes=256 << 20))
    grab = f"{sys.executable} -I -c \"b = bytearray(512 << 20); print('allocated')\""
    result = shell.run(grab, tmp_path)
    assert result.exit_code == 1
    assert "allocated" not in result.output
    assert result.output.endswith("\n[limit reached: memory, 256 MiB per process]")
    # The agent goes on, and a command under the limit is fine.
    assert shell.run(grab.replace("512", "64"), tmp_path).output == "allocated\n"


@pytest.mark.slow  # real time: a watcher, a poll, a sleep or a build
@pytest.mark.parametrize("layer", LAYERS)
def test_forking_past_the_process_limit_fails_clearly(tmp_path: Path, layer: str) -> None:
    shell = Shell(timeout=20, sandbox=layer, limits=Limits(nproc=16))
    if shell.process_limit() == "none":
        pytest.skip("no pids cgroup here, and RLIMIT_NPROC does not bind root")
    result = shell.run("for i in $(seq 40); do sleep 2 & done; wait; echo finished", tmp_path)
    # The shell cannot fork past the limit and says so (dash gives up; bash retries, and may
    # finish once the first sleeps end): the limit held, and the result names it.
    assert "fork" in result.output
    assert result.output.endswith("\n[limit reached: 16 processes and threads]")
    assert shell.run("for i in $(seq 8); do sleep 0.1 & done; wait; echo ok", tmp_path).output == (
        "ok\n"
    )


_AS_NOBODY = """
import sys
from pathlib import Path
from codingagent.sandbox.shell import Limits, Shell
shell = Shell(timeout=20, sandbox="bwrap", limits=Limits(nproc=16))
print(shell.process_limit())
print(shell.run("for i in $(seq 40); do sleep 2 & done; wait; echo finished", Path.cwd()).output)
print(shell.run("for i in $(seq 8); do sleep 0.1 & done; wait; echo ok", Path.cwd()).output)
"""


@pytest.mark.slow  # real time: a watcher, a poll, a sleep or a build
@needs_bwrap
@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="runs a user as root")
def test_for_a_user_the_process_limit_is_an_rlimit_in_the_user_namespace() -> None:
    # Without a pids cgroup (a user may not make one), RLIMIT_NPROC in bubblewrap's user
    # namespace counts only the sandbox's processes: the user's others do not use it up.
    python = next((p for p in (sys.executable, "/usr/bin/python3") if _nobody_can_run(p)), None)
    if python is None:
        pytest.skip("no Python an unprivileged user may run")
    workspace = tempfile.mkdtemp()  # pytest's tmp_path is closed to other users
    os.chmod(workspace, 0o777)
    try:
        done = subprocess.run(
            [python, "-c", _AS_NOBODY],
            **_AS_NOBODY_KWARGS,
            cwd=workspace,
            env={"PATH": "/usr/bin:/bin", "HOME": workspace, "PYTHONPATH": _SOURCE},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        shutil.rmtree(workspace)
    lines = done.stdout.splitlines()
    assert lines[0] == "rlimit", done.stderr
    # The shell cannot fork past the limit (dash gives up at once, bash retries and gives up):
    assert any("fork" in line for line in lines[1:]), lines  # bash may retry and finish
    assert "[limit reached: 16 processes and threads]" in lines
    assert lines[-2:] == ["ok", ""]  # the next command has the whole limit again


# setreuid(): real, effective and saved uid all change, so no capability is left.
_AS_NOBODY_KWARGS: dict[str, Any] = {"user": 65534, "group": 65534, "extra_groups": []}
# The source, and where the package's metadata is (the sandbox registry is its entry points).
_SOURCE = os.pathsep.join(
    [str(Path(__file__).resolve().parent.parent), str(distribution("codingagent").locate_file(""))]
)


def _nobody_can_run(python: str) -> bool:
    if not os.path.exists(python):
        return False
    check = "import sys, codingagent.sandbox.shell; sys.exit(sys.version_info < (3, 11))"
    try:
        done = subprocess.run(
            [python, "-c", check],
            **_AS_NOBODY_KWARGS,
            cwd="/",
            env={"PYTHONPATH": _SOURCE},
            capture_output=True,
        )
    except PermissionError:  # its folder is closed to others (a Python under /root)
        return False
    return done.returncode == 0


@needs_bwrap
def test_the_sandbox_tmp_is_size_limited(tmp_path: Path) -> None:
    shell = Shell(timeout=20, sandbox="bwrap", limits=Limits(tmp_bytes=8 << 20))
    result = shell.run("head -c 20000000 /dev/zero > /tmp/big", tmp_path)
    assert result.exit_code == 1
    assert "No space left on device" in result.output
    assert result.output.endswith("\n[limit reached: 8 MiB in /tmp (or the disk is full)]")
    assert shell.run("head -c 4000000 /dev/zero > /tmp/ok && echo ok", tmp_path).output == "ok\n"


@pytest.mark.slow  # real time: a time limit, a kill or a poll
@needs_proc
@pytest.mark.parametrize("layer", LAYERS)
def test_a_process_that_clears_its_environment_and_kills_the_runner_is_still_killed(
    tmp_path: Path, layer: str
) -> None:
    if layer == "none" and _cgroup.pids_root() is None:
        pytest.skip("without bubblewrap or a pids cgroup this escape is open (README: Sandbox)")
    # No run tag to find it by, a session and parent of its own: only the pids cgroup (or
    # bubblewrap's PID namespace) still holds it.  Its pid inside bubblewrap is not ours, so
    # it is found by its unique command line.
    sleep = f"sleep {1000 + uuid.uuid4().int % 100_000}"
    command = f"setsid env -i {sleep} & sleep 0.3; kill -9 $PPID"
    Shell(timeout=10, sandbox=layer).run(command, tmp_path)
    end = time.monotonic() + 2
    while _running(sleep) and time.monotonic() < end:
        time.sleep(0.02)
    assert not _running(sleep)


def _running(cmdline: str) -> list[int]:
    """The pids of living processes whose command line is ``cmdline``."""
    needle = cmdline.replace(" ", "\0").encode()
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if Path(entry.path, "cmdline").read_bytes().rstrip(b"\0") == needle:
                    found.append(int(entry.name))
    return found


@pytest.mark.skipif(_cgroup.pids_root() is None, reason="no pids cgroup can be made here")
def test_a_stale_empty_cgroup_is_removed_by_a_later_command(tmp_path: Path) -> None:
    root = Path(str(_cgroup.pids_root()))
    stale, fresh = (root / f"codingagent-test-{uuid.uuid4().hex}" for _ in range(2))
    stale.mkdir()
    fresh.mkdir()
    try:
        os.utime(stale, (time.time() - 120, time.time() - 120))
        assert Shell(timeout=10).run("echo hi", tmp_path).output == "hi\n"
        assert not stale.exists()
        assert fresh.exists()  # perhaps a command that is just starting
    finally:
        for folder in (stale, fresh):
            with contextlib.suppress(FileNotFoundError):
                folder.rmdir()


def test_settings_give_the_limits(tmp_path: Path) -> None:
    (tmp_path / "codingagent.toml").write_text(
        "command_memory_mb = 100\ncommand_processes = 0\ncommand_tmp_mb = 7\n"
    )
    limits = Limits.of(load_settings(tmp_path))
    assert (limits.memory_bytes, limits.nproc, limits.tmp_bytes) == (100 << 20, None, 7 << 20)
    defaults = Limits.of(load_settings(tmp_path / "nothing"))
    assert (defaults.memory_bytes, defaults.nproc, defaults.tmp_bytes) == (4 << 30, 256, 512 << 20)


def test_doctor_lists_each_protection(tmp_path: Path) -> None:
    rows = dict(protections(load_settings(tmp_path)))
    assert rows["environment scrub"].startswith("active")
    assert rows["memory limit"] == "active: 4096 MiB address space per process"
    bwrap = LAYER == "bwrap"
    for name in ("no host socket files", "tool credential files", "no network"):
        assert rows[name].startswith("active" if bwrap else "off")
    output = run(tmp_path, "doctor").output
    for name, state in rows.items():
        assert re.search(rf"^{re.escape(name)} +{re.escape(state)}$", output, re.MULTILINE)
