"""A workspace is never the whole disk, a home folder or a system folder (docs/frontends.md):
the rule, on the command line (with its override), and the console's hidden-paths line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from codingagent.frontends.cli import main
from codingagent.session.lifecycle import hidden_line
from codingagent.workspace.choice import broad_reason, resolve_workspace

HOME = Path.home().resolve()


@pytest.mark.parametrize(
    ("folder", "reason"),
    [
        ("/", "it is the root of the file system"),
        ("/etc", "it is a system folder"),
        ("/etc/nginx", "it is inside the system folder /etc"),
        ("/usr", "it is a system folder"),
        ("/var", "it is a system folder"),
        ("/usr/lib/python3", "it is inside the system folder /usr/lib"),
        ("/tmp", "it is a system folder"),
        ("/root", "it is a home folder"),
        (str(HOME), "it is a home folder"),
    ],
)
def test_broad_folders_are_refused_with_the_reason(folder, reason):
    assert broad_reason(Path(folder)) == reason


@pytest.mark.parametrize("folder", ["/opt/project", "/srv/app", "/tmp/x", str(HOME / "code")])
def test_a_project_folder_is_fine(folder):
    assert broad_reason(Path(folder)) is None


def test_every_folder_above_the_home_folder_is_refused():
    for folder in (HOME, *HOME.parents, Path("/home"), Path("/Users")):
        assert broad_reason(folder) is not None, folder


@given(st.lists(st.sampled_from(["..", ".", "a", "b"]), max_size=12))
def test_a_relative_path_is_judged_by_the_folder_it_resolves_to(parts):
    base = Path("/tmp/run/x/y")
    folder = resolve_workspace(os.path.join(*parts) if parts else ".", base)
    assert folder == Path(os.path.normpath(base.joinpath(*parts)))
    # Nothing here is a home or system folder but the root and /tmp themselves.
    assert (broad_reason(folder) is not None) == (folder in (Path("/"), Path("/tmp")))


def test_a_link_to_the_root_is_refused_as_the_root(tmp_path):
    (tmp_path / "everything").symlink_to("/")
    assert broad_reason(resolve_workspace("everything", tmp_path)) == (
        "it is the root of the file system"
    )


def start(root: Path, *args: str, home: Path | None = None):
    runner = CliRunner(env={"HOME": str(home)} if home else None)
    return runner.invoke(main, ["start", "t", "--no-watch", "--root", str(root), *args])


@pytest.mark.parametrize("given_folder", ["/", "../../../../../../../../../../../../.."])
def test_start_refuses_the_root_and_creates_nothing(tmp_path, monkeypatch, given_folder):
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")  # a relative --workspace starts here
    result = start(tmp_path / "run", "--workspace", given_folder, "--sandbox", "none")
    assert result.exit_code == 1
    assert result.output == (
        "error: Refused workspace /: it is the root of the file system, and the LLM's file "
        "commands could change any file in it. Make a folder for the project (mkdir "
        "~/myproject) and use that as the workspace, or pass --allow-broad-workspace if the "
        "LLM may really change any file there\n"
    )
    assert not (tmp_path / "run").exists()


def test_start_refuses_the_home_folder_unless_told_to_allow_it(tmp_path):
    home = tmp_path / "home" / "ann"
    home.mkdir(parents=True)
    refused = start(tmp_path / "run", "--workspace", str(home), "--sandbox", "none", home=home)
    assert refused.exit_code == 1
    assert f"Refused workspace {home}: it is a home folder" in refused.output
    allowed = start(
        tmp_path / "run",
        *("--workspace", str(home), "--sandbox", "none", "--allow-broad-workspace"),
        home=home,
    )
    assert allowed.exit_code == 0, allowed.output
    assert f"started on {home}" in allowed.output


def test_hidden_paths_never_name_the_workspace_or_a_folder_holding_it():
    workspace = Path("/home/ann/project")
    assert hidden_line(["/home", "/root"], workspace) == (
        "/root, all around the workspace (not the workspace itself)"
    )
    assert hidden_line(["/root"], workspace) == "/root"
    assert hidden_line([], workspace) == "nothing"


def test_a_queue_is_refused_on_the_root_and_the_override_is_for_one_session(tmp_path):
    queue = ["start", "one", "two", "--no-watch", "--root", str(tmp_path / "run")]
    refused = CliRunner().invoke(main, [*queue, "--workspace", "/", "--sandbox", "none"])
    assert refused.exit_code == 1
    assert refused.output.startswith("error: Refused workspace /: it is the root")
    insisted = CliRunner().invoke(main, [*queue, "--workspace", "/", "--allow-broad-workspace"])
    assert insisted.exit_code == 2
    assert "--allow-broad-workspace is for one session, not a queue" in insisted.output
    assert not (tmp_path / "run").exists()
