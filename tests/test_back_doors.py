"""SPEC 4.1, issue 16: nothing a reply does waits for the user outside the sandbox, and
secrets do not go into prompts. Attacks tried through the real CLI and real bubblewrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingagent.settings import load_settings, user_settings_path


@pytest.fixture(autouse=True)
def own_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's own settings folder, empty, away from the real one."""
    home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


# --- settings a reply could write ----------------------------------------------------------


def test_a_settings_file_in_the_workspace_may_tighten_but_not_loosen(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.codingagent]\nsandbox = "none"\ncommands = "allow"\ncommand_timeout = 5\n'
    )
    (tmp_path / "codingagent.toml").write_text("mask_secrets = false\nmax_turns = 3\n")
    settings = load_settings(tmp_path, workspaces=[tmp_path])
    assert (settings.sandbox, settings.commands, settings.mask_secrets) == ("auto", None, True)
    assert (settings.command_timeout, settings.max_turns) == (5, 3)  # tighter: kept
    ignored = "\n".join(settings.ignored)
    for key in ("sandbox", "commands", "mask_secrets"):
        assert f"Ignored {key} = " in ignored
    assert "pyproject.toml [tool.codingagent]" in ignored and "codingagent.toml" in ignored
    assert settings.origins["command_timeout"].endswith("pyproject.toml [tool.codingagent]")


def test_the_user_can_loosen_by_own_file_environment_flag_or_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path = tmp_path / "project"  # the root and the workspace; the user's file is outside
    tmp_path.mkdir()
    (tmp_path / "codingagent.toml").write_text('sandbox = "none"\n')
    assert load_settings(tmp_path, workspaces=[tmp_path]).sandbox == "auto"
    assert load_settings(tmp_path, workspaces=[tmp_path], trust_files=True).sandbox == "none"
    assert load_settings(tmp_path, {"commands": "allow"}, workspaces=[tmp_path]).commands == "allow"
    assert load_settings(tmp_path).sandbox == "none"  # the root is not a workspace: the user's
    user_settings_path().parent.mkdir(parents=True)
    user_settings_path().write_text('commands = "allow"\nsandbox_hide = ["/srv"]\n')
    settings = load_settings(tmp_path, workspaces=[tmp_path])
    assert (settings.commands, settings.sandbox_hide) == ("allow", ("/srv",))
    assert settings.origins["commands"] == str(user_settings_path())
    # ... and the workspace file cannot undo the user's tightening either
    (tmp_path / "codingagent.toml").write_text("sandbox_hide = []\n")
    assert load_settings(tmp_path, workspaces=[tmp_path]).sandbox_hide == ("/srv",)
    monkeypatch.setenv("CODINGAGENT_SANDBOX_HIDE", "/opt:/srv")
    assert load_settings(tmp_path, workspaces=[tmp_path]).sandbox_hide == ("/opt", "/srv")
