"""Issue 27: secrets stay home, even through a command. A hostile model's commands tried
through the real CLI and real bubblewrap; the masker's rules, disguises and files on their own
(docs/secrets.md)."""

from __future__ import annotations

import base64
import json
import textwrap
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from invoking import Run
from sampling import examples

from codingagent.sandbox.backends import sandbox_status
from codingagent.sandbox.shell import Shell
from codingagent.secrecy import rules
from codingagent.secrecy.disguises import encodings
from codingagent.secrecy.masking import Masker, environment_secrets, for_session
from codingagent.secrecy.secret_files import secret_files

needs_bwrap = pytest.mark.skipif(
    sandbox_status("bwrap")[0] != "bwrap", reason="bubblewrap does not work here"
)
KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq5TESTKEY"
GITHUB_TOKEN = "ghp_4vQ9zK2mN7pL0sX5rT8wY3bC6dF1gH4jK7mN"
KEYS = (KEY_ID, AWS_SECRET, GITHUB_TOKEN)
DOT_ENV = (
    f"AWS_ACCESS_KEY_ID={KEY_ID}\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\nGITHUB_TOKEN={GITHUB_TOKEN}\n"
)
# The commands, as a hostile model would send them.
HOSTILE = (
    "[RUN_COMMAND]\ncat .env | base64; cat .env | rev;"
    " python3 -c \"print(open('.env').read().replace('A','A '))\"\n[/RUN_COMMAND]\n"
    '[RUN_COMMAND]\ngrep -o "ghp_[A-Za-z0-9]*" .env | sed "s/./& /g"\n[/RUN_COMMAND]\n'
)


@pytest.fixture(autouse=True)
def own_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's own settings folder, empty, away from the real one."""
    home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def forms(secret: str) -> list[str]:
    """Every form of ``secret`` a prompt must not hold: itself and its disguises, and the
    longest piece of it the hostile commands print (between the inserted spaces)."""
    return [secret, *(form for _, form in encodings(secret)), " ".join(secret)]


def leaks(prompt: str) -> list[str]:
    squeezed = "".join(prompt.split())
    return [form for key in KEYS for form in forms(key) if form in prompt or form in squeezed]


def session_with_env(tmp_path: Path, *flags: str) -> Run:
    run = Run(tmp_path / "run", tmp_path / "ws")
    run.ws.mkdir()
    (run.ws / ".env").write_text(DOT_ENV)
    (run.ws / "app.py").write_text('password_field = "name"\nprint("hello")\n')
    run.start(*flags)
    return run


# --- through the CLI -----------------------------------------------------------------------


@needs_bwrap
def test_the_hostile_commands_print_no_form_of_the_keys(tmp_path: Path) -> None:
    run = session_with_env(tmp_path)
    first = run.prompt()
    assert "Secret files: .env: commands read them as empty files" in first
    assert "ASK the user to allow it by name (setting secret_files_allow)" in first
    result = run.step(HOSTILE)
    assert "Secret files hidden from commands (they read as empty): .env;" in result.stderr
    assert "secret_files_allow" in result.stderr
    prompt = run.prompt()
    # The first command prints nothing of the empty .env; the grep finds no token in it, and
    # under pipefail its pipeline fails with grep's "nothing found".
    assert prompt.count("[OK] RUN_COMMAND") == 1
    assert prompt.count("[FAILED] RUN_COMMAND: Ran 'grep -o") == 1, prompt
    assert leaks(prompt) == []
    assert (run.ws / ".env").read_text() == DOT_ENV  # the file itself is untouched


def test_without_a_sandbox_the_disguises_are_masked_and_the_user_told(tmp_path: Path) -> None:
    run = session_with_env(tmp_path, "--sandbox", "none")
    assert "Secret files: .env: no sandbox hides them, so commands can read them" in run.prompt()
    result = run.step(HOSTILE, "--sandbox", "none")
    assert "No OS sandbox: commands CAN read these secret files: .env" in result.stderr
    prompt = run.prompt()
    assert leaks(prompt) == []
    for kind in ("base64", "reversed", "spaced"):
        assert f"[masked: github-token-{kind} " in prompt
    turns = run.cli("log", run.session).stdout
    assert "secret(s) masked in the next prompt: " in turns
    assert "github-token-base64 1" in turns
    (entry,) = json.loads(run.cli("log", run.session, "--json").stdout)
    assert entry["maskedKinds"]["aws-secret-key-reversed"] >= 1
    assert all(isinstance(n, int) for n in entry["maskedKinds"].values())  # counts, no values


@needs_bwrap
def test_a_secret_file_allowed_by_name_is_readable(tmp_path: Path, own_config_home: Path) -> None:
    (own_config_home / "codingagent").mkdir(parents=True)
    (own_config_home / "codingagent" / "config.toml").write_text('secret_files_allow = [".env"]\n')
    run = session_with_env(tmp_path)
    assert "Secret files commands may read: .env" in run.prompt()
    result = run.step("[RUN_COMMAND]\nwc -c < .env; grep -c AKIA .env\n[/RUN_COMMAND]\n")
    assert "Secret files commands may read (secret_files_allow): .env" in result.stderr
    prompt = run.prompt()
    assert f"    {len(DOT_ENV)}\n    1\n" in prompt  # the real file
    assert leaks(prompt) == []


def test_a_workspace_settings_file_cannot_allow_a_secret_file(tmp_path: Path) -> None:
    run = Run(tmp_path / "run", tmp_path / "ws")
    run.ws.mkdir()
    (run.ws / ".env").write_text(DOT_ENV)
    (run.ws / "codingagent.toml").write_text('secret_files_allow = [".env"]\n')
    run.start("--sandbox", "none")
    assert "Secret files commands may read" not in run.prompt()


def test_code_is_shown_as_written_and_the_workspace_path_never_masked(tmp_path: Path) -> None:
    run = session_with_env(tmp_path, "--sandbox", "none")
    reply = '[READ_FILE path="app.py"]\n[RUN_COMMAND]\nenv; pwd; cd / && env\n[/RUN_COMMAND]\n'
    run.step(reply, "--sandbox", "none")
    prompt = run.prompt()
    assert '   1 | password_field = "name"' in prompt
    assert f"PWD={run.ws.resolve()}" in prompt
    assert f"OLDPWD={run.ws.resolve()}" in prompt
    assert "[masked: password" not in prompt


# --- the sandbox seam ----------------------------------------------------------------------


@pytest.mark.parametrize("layer", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_secret_files_read_as_empty_where_the_sandbox_hides_them(
    tmp_path: Path, layer: str
) -> None:
    (tmp_path / ".env").write_text(DOT_ENV)
    (tmp_path / "keep.txt").write_text("kept\n")
    shell = Shell(timeout=20, sandbox=layer)
    hidden = [str(tmp_path / ".env")] if shell.hides_files else []
    output = shell.run("cat .env keep.txt; test -f .env && echo is-a-file", tmp_path, hidden).output
    if layer == "bwrap":
        assert output == "kept\nis-a-file\n"
    else:
        assert DOT_ENV in output  # no OS layer: nothing hides it (the prompt's masking does)


# --- the parts on their own ----------------------------------------------------------------


def test_secret_files_by_name_and_by_content(tmp_path: Path) -> None:
    for name, text in {
        ".env.production": "X=1\n",
        "deploy/server.pem": "not really\n",
        "config/settings.yaml": "db:\n  password: s3cr3t-Value\n",
        "config/plain.yaml": "db:\n  password: ${DB_PASSWORD}\n",
        "src/app.py": f'TOKEN = "{GITHUB_TOKEN}"\n',  # source code stays visible
        "src/credentials.py": "def load(): ...\n",
        "node_modules/x/.env": "X=1\n",
        "notes.txt": f"my key: {AWS_SECRET} aws_key='{AWS_SECRET}'\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    masker = Masker()
    found = secret_files(tmp_path, ["*.pem"], masker)
    assert found.hidden == (".env.production", "config/settings.yaml", "notes.txt")
    assert found.allowed == ("deploy/server.pem",)
    assert masker.mask(f"echo {AWS_SECRET[::-1]}").text.startswith("echo [masked: aws-secret-key")
    # Source code stays visible, and its keys are learned (issue 36).
    assert masker.mask(GITHUB_TOKEN[::-1]).text.startswith("[masked: github-token-reversed ")


@pytest.mark.parametrize(
    "line",
    [
        'password_field = "name"',
        'password = "Enter your password:"',
        'token_type = "bare-quoted-string"',
        "api_key = get_key()",
        'password = "{password}"',
        "password = '%s'",
        'secret = ""',
        "PWD=/home/me/project",
        "OLDPWD=/home/me",
        "KEY_PASSWORD = 'somepass'",
        "url = 'http://user:pass@example.com/'",
        'publicKeyToken="XXXX"',
    ],
)
def test_words_identifiers_and_format_strings_are_not_secrets(line: str) -> None:
    assert Masker().mask(line).text == line


@pytest.mark.parametrize(
    "line",
    [
        "PASSWORD=hunter22",
        '"password": "c0rrect-h0rse"',
        "url = 'postgres://app:Xk9q2mZ7@db:5432/app'",
        "api_key = 'qWeRtYuIoPaSdFgHjKlZ'",
    ],
)
def test_values_are_secrets(line: str) -> None:
    assert "[masked: " in Masker().mask(line).text


def test_what_one_session_learned_is_not_masked_in_another() -> None:
    one, other = for_session("one-session"), for_session("another-session")
    one.mask("TOKEN=Zq8v1Lp0Mx7Rk3Wn")
    assert "[masked: token " in one.mask("later: Zq8v1Lp0Mx7Rk3Wn").text
    assert other.mask("later: Zq8v1Lp0Mx7Rk3Wn").text == "later: Zq8v1Lp0Mx7Rk3Wn"


def test_secrets_of_the_agents_environment_are_known() -> None:
    env = {"OPENAI_API_KEY": "sk-proj-Abc123Def456", "PWD": "/w", "HOME": "/h", "EDITOR": "vi"}
    assert environment_secrets(env) == [("sk-proj-Abc123Def456", "api-key")]
    masker = Masker(env)
    assert masker.mask("sk-proj-Abc123Def456"[::-1]).text.startswith("[masked: api-key-reversed ")


ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+_-"
SECRET = st.text(ALPHABET, min_size=8).filter(lambda s: not s.isalpha())
SURROUNDING = st.text(st.characters(codec="ascii"), max_size=40)


def disguise(secret: str, how: str, before: str, after: str) -> str:
    data = (before + secret + after).encode()
    if how == "base64":
        return base64.encodebytes(data).decode()  # wrapped at 76 columns
    if how == "hex":
        return data.hex()
    if how == "url":
        return quote(before + secret + after, safe="")
    if how == "reversed":
        return (before + secret + after)[::-1]
    separator = {"spaced": " ", "lines": "\n", "list": "', '"}[how]
    return before + separator.join(secret) + after


@given(
    SECRET,
    st.sampled_from(["base64", "hex", "url", "reversed", "spaced", "lines", "list"]),
    SURROUNDING,
    SURROUNDING,
)
@settings(max_examples=examples(300), deadline=None)
def test_a_known_secret_is_masked_in_disguise(secret: str, how: str, before: str, after: str):
    masker = Masker()
    masker.learn(secret, "token")
    text = disguise(secret, how, before, after)
    masked = masker.mask(text)
    assert masker.unmask(masked.text) == text
    joined = masked.text.replace("\n", "")
    assert not any(form in joined for _, form in encodings(secret) if len(form) >= 12)
    assert secret not in joined
    assert masked.kinds, text


def test_detect_secrets_public_api_agrees_with_the_rule_table(tmp_path: Path) -> None:
    """Our copy of detect-secrets' patterns finds what its public scanning API finds."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    samples = textwrap.dedent(f"""\
        id = {KEY_ID}
        aws_secret_key = "{AWS_SECRET}"
        gh = {GITHUB_TOKEN}
        gl = glpat-Xk9q2mZ7Lp0Mx7Rk3Wn1
        slack = xoxb-123456789012-abcdefghij
        stripe = sk_live_{"a1B2c3D4" * 3}
        url = https://admin:Xk9q2mZ7@example.com/
        jwt = eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl
        """)
    path = tmp_path / "samples.txt"
    path.write_text(samples)
    collection = SecretsCollection()
    with default_settings():
        collection.scan_file(str(path))
    theirs = {secret.line_number for _, secret in collection}
    ours = set()
    for found in rules.find(samples):
        if not found.keyword:
            ours.add(samples.count("\n", 0, found.start) + 1)
    assert set(range(1, 9)) <= theirs
    assert ours == set(range(1, 9))
