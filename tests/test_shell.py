"""Running commands: exit codes, captured output, timeouts, no leftover processes, no secrets."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from processes import gone, needs_proc

from codingagent.sandbox.process import SHELL
from codingagent.sandbox.scrub import scrub_env
from codingagent.sandbox.shell import Shell, ShellResult

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")


def run(command: str, cwd: Path, timeout: float = 10.0, max_output: int = 4000) -> ShellResult:
    return Shell(timeout=timeout, max_output=max_output).run(command, cwd)


def test_exit_codes_and_plain_output(tmp_path: Path) -> None:
    assert run("true", tmp_path) == ShellResult(
        exit_code=0,
        output="",
        timed_out=False,
        duration_s=pytest.approx(0, abs=1),  # type: ignore[arg-type]
        cut_chars=0,
    )
    assert run("exit 3", tmp_path).exit_code == 3
    assert run("no-such-command-xyz", tmp_path).exit_code == 127


@pytest.mark.skipif(SHELL == "/bin/sh", reason="no bash here: commands run under /bin/sh")
@pytest.mark.parametrize("layer", ["none", "auto"])
def test_a_pipeline_fails_when_any_stage_fails(tmp_path: Path, layer: str) -> None:
    """``pytest | tail -5`` must not read green: bash runs commands with pipefail."""
    shell = Shell(timeout=10, sandbox=layer)
    failing = shell.run("printf 'FAILED test_x\\n1 failed\\n'; exit 1", tmp_path)
    assert failing.exit_code == 1
    piped = shell.run("(printf 'FAILED test_x\\n1 failed\\n'; exit 1) | tail -1", tmp_path)
    assert (piped.exit_code, piped.output) == (1, "1 failed\n")
    assert shell.run("false | true | true", tmp_path).exit_code == 1
    assert shell.run("true | true", tmp_path).exit_code == 0


def test_output_is_returned_as_printed(tmp_path: Path) -> None:
    assert run("printf abc", tmp_path).output == "abc"
    assert run("printf 'a\\r\\nb\\n\\n'", tmp_path).output == "a\r\nb\n\n"


def test_stderr_is_merged_in_order(tmp_path: Path) -> None:
    result = run("echo out; echo err >&2; echo out2", tmp_path)
    assert result.output == "out\nerr\nout2\n"


def test_stdin_is_closed(tmp_path: Path) -> None:
    result = run("cat", tmp_path, timeout=5)
    assert (result.exit_code, result.output, result.timed_out) == (0, "", False)
    assert result.duration_s < 1


def test_runs_in_the_given_folder(tmp_path: Path) -> None:
    assert run("pwd -P", tmp_path).output == f"{tmp_path.resolve()}\n"


def test_secrets_are_scrubbed_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "FOO_API_KEY": "k1",
        "GITHUB_TOKEN": "t1",
        "AWS_REGION": "eu",
        "DB_PASSWORD": "p1",
        "LOGIN_PASSWD": "p2",
        "MY_SECRET": "s1",
        "GCP_CREDENTIALS": "c1",
        "lower_token": "t2",
        "PYTHON_KEYRING_PASSWORD": "p3",  # an allowed prefix, but a secret-looking name
        "PIP_INDEX_URL": "https://me:hunter2@pypi.example/simple",  # a password in a URL
        "SOME_SETTING": "not on the allowlist",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("PYTHONHASHSEED", "7")
    output = run("env", tmp_path).output
    lines = output.splitlines()
    assert "LC_ALL=C.UTF-8" in lines
    assert "PYTHONHASHSEED=7" in lines
    assert f"HOME={os.environ['HOME']}" in lines
    for name in secrets:
        assert f"{name}=" not in output


def test_scrub_env_keeps_only_the_allowlist_minus_secrets() -> None:
    env = {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_CTYPE": "C",
        "PIP_INDEX_URL": "https://pypi.example/simple",
        "HTTPS_PROXY": "http://proxy:3128",
        "https_proxy": "http://user:pw@proxy:3128",
        "OPENAI_API_KEY": "x",
        "aws_profile": "p",
        "MYAWS_X": "k",
        "PYTHON_AUTH": "a",
        "DISPLAY": ":0",
    }
    assert scrub_env(env) == {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_CTYPE": "C",
        "PIP_INDEX_URL": "https://pypi.example/simple",
        "HTTPS_PROXY": "http://proxy:3128",
    }


def test_timeout_kills_the_command(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run("echo started; sleep 100", tmp_path, timeout=0.5)
    assert result.timed_out is True
    assert result.exit_code is None
    assert result.output == "started\n"  # what it printed before the deadline is kept
    assert 0.5 <= result.duration_s < 2.5
    assert time.monotonic() - started < 2.5


@pytest.mark.slow  # real time: a time limit, a kill or a poll
@needs_proc
@pytest.mark.parametrize(
    "command",
    [
        "sleep 100 & echo $! > pid; wait",
        "( sleep 100 & echo $! > pid ) ; sleep 100",
        "trap '' TERM; sleep 100 & echo $! > pid; while :; do sleep 1; done",
    ],
    ids=["background", "subshell-background", "ignores-sigterm"],
)
def test_timeout_kills_the_whole_process_group(tmp_path: Path, command: str) -> None:
    result = run(command, tmp_path, timeout=0.5)
    assert result.timed_out
    assert result.duration_s < 3
    assert gone(tmp_path / "pid")


@pytest.mark.slow  # real time: a time limit, a kill or a poll
@needs_proc
@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid(1)")
def test_timeout_kills_a_child_that_left_the_group(tmp_path: Path) -> None:
    command = "setsid sh -c 'echo $$ > pid; exec sleep 100' & sleep 100"
    result = run(command, tmp_path, timeout=0.5)
    assert result.timed_out
    assert gone(tmp_path / "pid")


@needs_proc
def test_background_child_does_not_block_or_outlive_the_command(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run("sleep 30 & echo $! > pid; echo done", tmp_path)
    assert time.monotonic() - started < 1.5
    assert (result.exit_code, result.output, result.timed_out) == (0, "done\n", False)
    assert gone(tmp_path / "pid")


def test_background_child_holding_the_pipe_returns_fast(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run("sleep 30 & echo done", tmp_path)
    assert time.monotonic() - started < 1.5
    assert result.output == "done\n"
    assert result.exit_code == 0


def test_closing_output_early_still_waits_for_the_exit_code(tmp_path: Path) -> None:
    result = run("echo hi; exec >/dev/null 2>&1; sleep 0.3; exit 4", tmp_path)
    assert (result.exit_code, result.output) == (4, "hi\n")


def test_huge_output_keeps_head_and_tail(tmp_path: Path) -> None:
    # One writer (`yes | head` would end in SIGPIPE for yes, a failure under pipefail).
    result = run("awk 'BEGIN { for (i = 0; i < 2500000; i++) print \"y\" }'", tmp_path, 4000)
    half = "y\n" * 1000
    assert result.output == f"{half}\n[... 4996000 characters cut ...]\n{half}"
    assert result.cut_chars == 4_996_000
    assert result.exit_code == 0


def test_output_at_the_limit_is_not_cut(tmp_path: Path) -> None:
    exact = run("head -c 4000 /dev/zero | tr '\\0' x", tmp_path, max_output=4000)
    assert (exact.output, exact.cut_chars) == ("x" * 4000, 0)
    over = run("head -c 4001 /dev/zero | tr '\\0' x", tmp_path, max_output=4000)
    assert over.output == "x" * 2000 + "\n[... 1 characters cut ...]\n" + "x" * 2000
    assert over.cut_chars == 1


def test_cut_does_not_split_characters(tmp_path: Path) -> None:
    # 1 + 3000 * 2 + 1 bytes: both cut edges fall inside a two-byte character.
    result = run("printf a; printf 'é%.0s' $(seq 3000); printf z", tmp_path, max_output=4000)
    assert "\ufffd" not in result.output
    head, note, tail = result.output.split("\n")
    assert head == "a" + "é" * 999
    assert tail == "é" * 999 + "z"
    assert note == "[... 1002 characters cut ...]"  # 3002 characters, 2000 shown
    assert result.cut_chars == 1002


def test_invalid_utf8_output_is_replaced(tmp_path: Path) -> None:
    assert run("printf 'ok\\377\\n'", tmp_path).output == "ok\ufffd\n"
