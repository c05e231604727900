"""GitHub Copilot's sign-in: ``codingagent login copilot`` runs the device flow against a fake
of GitHub's endpoints (served on 127.0.0.1) and keeps the token 0600 in the user's config
folder; the polling keeps to the intervals GitHub sends."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from fake_apis import CopilotFake
from scripted_model import ScriptedModel

from codingagent.frontends.cli import main
from codingagent.sources.providers import signin
from codingagent.sources.providers.wire import ChatError


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def test_login_stores_a_0600_token_in_the_config_folder_and_logout_removes_it(
    tmp_path, config_home, monkeypatch
):
    run_folder = tmp_path / "run"
    run_folder.mkdir()
    monkeypatch.chdir(run_folder)
    with ScriptedModel(api="copilot") as github:
        urls = ["--github-url", github.root, "--api-url", github.root]
        result = CliRunner().invoke(main, ["login", "copilot", *urls])
    assert result.exit_code == 0, result.output
    assert f"Open {github.root}/login/device and enter the code WDJB-MJHT" in result.output
    assert github.fake.polled == 2  # pending, then the token
    path = config_home / "codingagent" / "copilot.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert signin.stored() == signin.SignIn(CopilotFake.OAUTH, github.root, github.root)
    assert CopilotFake.OAUTH not in result.output
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p != path]  # nothing else

    out = CliRunner().invoke(main, ["logout", "copilot"])
    assert out.exit_code == 0 and "Signed out of GitHub Copilot" in out.output
    assert not path.exists() and signin.stored() is None


def test_polling_keeps_to_the_interval_and_slows_down_when_asked(config_home):
    github = ScriptedModel(api="copilot")
    github.fake.interval = 5
    slow = {"error": "slow_down", "interval": 7}
    github.fake.polls = [
        {"error": "authorization_pending"},
        slow,
        {"error": "authorization_pending"},
    ]
    waits: list[float] = []
    shown: list[tuple[str, str]] = []
    with httpx.Client(transport=github.transport) as http:
        sign_in = signin.device_flow(
            http, lambda *shown_: shown.append(shown_), github.root, github.root, waits.append
        )
    assert waits == [5, 5, 7, 7] and sign_in.oauth_token == CopilotFake.OAUTH
    assert shown == [(f"{github.root}/login/device", "WDJB-MJHT")]


@pytest.mark.parametrize(
    ("polls", "expires_in", "said"),
    [
        ([{"error": "access_denied", "error_description": "The user denied"}], 900, "denied"),
        ([{"error": "authorization_pending"}] * 5, 2, "The code expired before it was entered"),
    ],
)
def test_a_refused_or_expired_code_is_one_clear_error(config_home, polls, expires_in, said):
    github = ScriptedModel(api="copilot")
    github.fake.polls, github.fake.interval, github.fake.expires_in = polls, 1, expires_in
    with httpx.Client(transport=github.transport) as http, pytest.raises(ChatError, match=said):
        signin.device_flow(http, lambda *_: None, github.root, github.root, lambda _: None)
    assert signin.stored() is None


def test_a_damaged_token_file_says_to_sign_in_again(config_home):
    path = signin.token_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(ChatError, match="run codingagent login copilot again"):
        signin.stored()
