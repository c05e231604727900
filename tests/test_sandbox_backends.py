"""Every registered sandbox backend keeps the same contract (codingagent/sandbox/backends.py):
run for real, through the backend's own command line, on this machine. A new backend (macOS
sandbox-exec, Landlock, a container) is registered in pyproject.toml and then passes these with
no test written for it; where it does not work here, it must say why, and choosing it by name
must fail with that reason."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from codingagent.sandbox.backends import Job, SandboxUnavailable, backends, choose

NAMES = sorted(backends())


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.fixture
def job(tmp_path: Path) -> Job:
    workspace = tmp_path / "ws"
    (workspace / ".agent").mkdir(parents=True)
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / "key").write_text("secret\n")
    return Job(
        workspace=workspace.resolve(),
        read_only=((workspace / ".agent").resolve(),),
        tmp_bytes=None,
        hide=(str((tmp_path / "hidden").resolve()),),
    )


def test_the_registry_holds_bubblewrap_and_none():
    assert {"bwrap", "none"} <= set(NAMES)
    assert "auto" not in NAMES  # the setting's own word, never a backend's name


@pytest.mark.parametrize("name", NAMES)
def test_a_backend_says_who_it_is_and_why_it_cannot_work(name):
    backend = backends()[name]()
    assert backend.name == name
    assert isinstance(backend.isolated, bool)
    assert isinstance(backend.user_namespace, bool)
    assert backend.describe().strip()
    assert all(row and status for row, status in backend.protections(None))
    problem = backend.problem()
    if problem is None:
        assert choose(name)[0].name == name
    else:
        assert problem.strip()
        with pytest.raises(SandboxUnavailable) as refused:
            choose(name)
        assert str(refused.value) == problem


@pytest.mark.parametrize("name", NAMES)
def test_a_working_backend_runs_a_command_in_the_workspace(name, job):
    backend = backends()[name]()
    if backend.problem() is not None:  # covered above: it says why, and choosing it fails
        assert backend.isolated
        return
    argv = backend.wrap(["sh", "-c", "echo made > made.txt && cat made.txt && pwd"], job)
    done = _run(argv, job.workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["made", str(job.workspace)]
    assert (job.workspace / "made.txt").read_text() == "made\n"


@pytest.mark.parametrize("name", [n for n in NAMES if backends()[n]().isolated])
def test_an_isolating_backend_keeps_a_command_to_the_workspace(name, job):
    backend = backends()[name]()
    if backend.problem() is not None:
        return  # it says why (test above); nothing here to contain
    outside = job.workspace.parent / "outside.txt"
    agent = job.read_only[0] / "x.txt"
    secret = Path(job.hide[0]) / "key"
    script = f"echo x > {outside}; echo x > {agent}; cat {secret}; echo done"
    done = _run(backend.wrap(["sh", "-c", script], job), job.workspace)
    assert done.stdout.strip().splitlines()[-1] == "done"
    assert not outside.exists()  # nothing written outside the workspace
    assert not agent.exists()  # the agent's own folders are read-only
    assert "secret" not in done.stdout  # hidden paths are not seen
    assert job.hide[0] in backend.hidden_paths(job.hide)


@pytest.mark.parametrize("name", NAMES)
def test_a_backend_with_a_layer_keeps_a_commands_writes_in_it(name, job, tmp_path):
    """Where :meth:`Sandbox.layer_problem` says None, a command run with ``Job.layer`` leaves
    the workspace as it was and writes to ``layer/upper``; elsewhere the backend says why."""
    backend = backends()[name]()
    (job.workspace / "old.txt").write_text("old\n")
    layer = tmp_path / "layer"
    problem = backend.layer_problem(job.workspace, layer)
    if problem is not None:
        assert problem.strip()
        return
    (layer / "upper").mkdir(parents=True)
    (layer / "work").mkdir()
    script = "echo new > made.txt && echo more >> old.txt && cat old.txt && pwd"
    done = _run(backend.wrap(["sh", "-c", script], replace(job, layer=layer)), job.workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["old", "more", str(job.workspace)]  # it saw its writes
    assert not (job.workspace / "made.txt").exists()  # the workspace is untouched
    assert (job.workspace / "old.txt").read_text() == "old\n"
    assert (layer / "upper" / "made.txt").read_text() == "new\n"
    assert (layer / "upper" / "old.txt").read_text() == "old\nmore\n"


def test_no_sandbox_has_no_layer_and_says_why(tmp_path):
    assert backends()["none"]().layer_problem(tmp_path, tmp_path / "layer") == "no OS sandbox"
