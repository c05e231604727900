"""Started inside a project, the agent works on it (issue 51): a real git repository holding a
small real library, driven through the command line as a user drives it; the agent's folders
go to the user's state folder, never into the project (docs/commands.md, "Where the agent's
folders go"). An empty folder, and a run folder with the seed layout, keep the seed layout."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from codingagent.frontends.cli import main
from codingagent.records.runfolder import Place, agent_folder, attach, place
from codingagent.records.store import SessionStore
from codingagent.settings import load_settings

NPM_INIT_TEST = 'echo "Error: no test specified" && exit 1'  # what `npm init` writes
TASK = "Fix slugify in textkit/slug.py: test_lowercase fails"
LIBRARY = {
    "pyproject.toml": (
        '[project]\nname = "textkit"\nversion = "0.1.0"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n'
    ),
    "README.md": "Small text helpers. Run the tests with pytest.\n",
    "textkit/__init__.py": (
        '"""Small text helpers."""\n\nfrom textkit.slug import slugify\n\n__all__ = ["slugify"]\n'
    ),
    "textkit/slug.py": (
        '"""Turn titles into URL slugs."""\n\nimport re\nimport unicodedata\n\n\n'
        'def slugify(title: str, separator: str = "-") -> str:\n'
        '    """\'Hello, World!\' -> \'hello-world\'."""\n'
        '    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()\n'
        '    words = re.findall(r"[A-Za-z0-9]+", text)\n'
        "    return separator.join(words)\n"
    ),
    "tests/test_slug.py": (
        "from textkit import slugify\n\n\ndef test_lowercase():\n"
        '    assert slugify("Hello, World!") == "hello-world"\n'
    ),
}
FIX = """```
[REPLACE path="textkit/slug.py"]
<<<<<<< SEARCH
    return separator.join(words)
=======
    return separator.join(word.lower() for word in words)
>>>>>>> REPLACE
[/REPLACE]
```
"""


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def write_tree(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's state folder, in the test's own folder."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("CODINGAGENT_ROOT", raising=False)
    return tmp_path / "state"


@pytest.fixture
def clone(tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git clone of a small library with a failing test, no ``workspace/``; the current
    folder."""
    project = write_tree(tmp_path / "textkit", LIBRARY)
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "textkit")
    monkeypatch.chdir(project)
    return project


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def status(project: Path) -> str:
    return git(project, "status", "--porcelain")


def first_prompt(root: Path) -> str:
    (prompt,) = (root / "outbox").glob("*_seq0001.txt")
    return prompt.read_text()


def test_in_a_git_clone_start_works_on_the_project_and_leaves_git_status_clean(clone, state):
    started = cli("start", TASK, "--no-watch", "--sandbox", "none")
    assert started.exit_code == 0, started.output
    root = agent_folder(clone)
    assert root.is_relative_to(state / "codingagent" / "projects")
    assert root.name.startswith("textkit-")
    assert f"started on {clone} (the project itself" in started.stderr
    assert f"The agent's folders (prompts, replies, records) are in {root}" in started.stderr
    assert f"Save the LLM's replies into {root / 'inbox'}" in started.stderr
    prompt = first_prompt(root)
    for rel in LIBRARY:
        assert f"  {rel} (" in prompt, rel
    assert "def slugify(title" in prompt  # the code the task points at
    assert status(clone) == ""
    assert not any((clone / name).exists() for name in ("workspace", "outbox", "sessions"))

    reply = clone.parent / "reply.txt"
    (session,) = SessionStore(root).ids()
    reply.write_text(f"Session: {session} Sequence: 1\n{FIX}")
    stepped = cli("step", str(reply), "--sandbox", "none")
    assert stepped.exit_code == 0, stepped.output
    assert "return separator.join(word.lower() for word in words)" in (
        (clone / "textkit/slug.py").read_text()
    )
    assert status(clone) == " M textkit/slug.py\n"
    shown = cli("diff", "--no-color")
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith("diff --git a/textkit/slug.py b/textkit/slug.py\n")
    assert "+    return separator.join(word.lower() for word in words)\n" in shown.stdout


def test_every_command_finds_the_sessions_from_a_folder_inside_the_project(clone, monkeypatch):
    assert cli("start", TASK, "--no-watch", "--sandbox", "none").exit_code == 0
    monkeypatch.chdir(clone / "textkit")
    listed = cli("sessions", "--json")
    assert listed.exit_code == 0 and TASK in listed.stdout
    assert "=== HEADER ===" in cli("show").stdout
    assert cli("log").exit_code == 0
    resumed = cli("resume", "--no-watch")
    assert resumed.exit_code == 0 and str(agent_folder(clone) / "outbox") in resumed.stderr
    pasted = CliRunner().invoke(main, ["paste"], input=FIX)
    assert pasted.exit_code == 0, pasted.output
    assert str(agent_folder(clone) / "inbox") in pasted.stderr
    assert status(clone) == ""


def test_start_with_workspace_dot_is_the_same_as_a_plain_start(clone):
    started = cli("start", TASK, "--no-watch", "--sandbox", "none", "--workspace", ".")
    assert started.exit_code == 0, started.output
    assert SessionStore(agent_folder(clone)).ids()
    assert status(clone) == ""


def test_undo_from_the_project_puts_its_file_back(clone):
    assert cli("start", TASK, "--no-watch", "--sandbox", "none").exit_code == 0
    reply = clone.parent / "fix.txt"
    reply.write_text(FIX)
    assert cli("step", str(reply), "--sandbox", "none", "--force").exit_code == 0
    assert status(clone) == " M textkit/slug.py\n"
    undone = cli("undo")
    assert undone.exit_code == 0, undone.output
    assert status(clone) == ""


@pytest.mark.slow
def test_under_bubblewrap_a_project_run_leaves_nothing_in_the_project(clone):
    """The default sandbox (bubblewrap where it works): its mounts, the Environment probe and
    a command run leave nothing in the work tree."""
    started = cli("start", TASK, "--no-watch")
    assert started.exit_code == 0, started.output
    reply = clone.parent / "reply.txt"
    reply.write_text(FIX + "[RUN_COMMAND]\npython3 -c 'import textkit'\n[/RUN_COMMAND]\n")
    assert cli("step", str(reply), "--force").exit_code == 0
    assert status(clone) == " M textkit/slug.py\n"


def test_an_empty_folder_keeps_the_seed_layout(tmp_path, state, monkeypatch):
    here = tmp_path / "demo"
    here.mkdir()
    monkeypatch.chdir(here)
    started = cli("start", "Create hello.py", "--no-watch", "--sandbox", "none")
    assert started.exit_code == 0, started.output
    assert started.stderr.startswith(f"Session {SessionStore(here).ids()[0]} started on ")
    assert f"started on {here / 'workspace'}\n" in started.stderr
    assert sorted(p.name for p in here.iterdir()) == ["inbox", "outbox", "sessions", "workspace"]
    assert "note:" not in started.stderr.split("Session")[0]
    assert not state.exists()


def test_a_run_folder_holding_a_project_keeps_its_layout_and_says_the_workspace_is_empty(
    tmp_path, state, monkeypatch
):
    here = write_tree(tmp_path / "run", {"pyproject.toml": "[project]\nname = 'x'\n"})
    for name in ("workspace", "outbox", "inbox", "sessions"):
        (here / name).mkdir()  # as an older codingagent left them
    monkeypatch.chdir(here)
    started = cli("start", "Fix x", "--no-watch", "--sandbox", "none")
    assert started.exit_code == 0, started.output
    before, _, after = started.stderr.partition("Session ")
    assert before == (
        f"note: the workspace {here / 'workspace'} is empty, while {here} holds a project "
        "(pyproject.toml): the model will see none of its files. To work on that project "
        "instead: codingagent start 'Fix x' --workspace .\n"
    )
    assert f"started on {here / 'workspace'}\n" in after
    assert not state.exists()
    # A run folder that ships its empty workspace/ (this repository, for its demo) meant it.
    shipped = write_tree(tmp_path / "shipped", {"pyproject.toml": "[project]\nname = 'x'\n"})
    for name in ("workspace", "outbox", "inbox", "sessions"):
        write_tree(shipped, {f"{name}/.gitkeep": ""})
    monkeypatch.chdir(shipped)
    demo = cli("start", "Create hello.py", "--no-watch", "--sandbox", "none")
    assert demo.exit_code == 0, demo.output
    assert demo.stderr.startswith("Session ") and not state.exists()


def test_an_explicit_root_wins_and_an_empty_workspace_beside_the_project_is_said(
    clone, tmp_path, state
):
    run = tmp_path / "elsewhere"
    started = cli("start", TASK, "--no-watch", "--sandbox", "none", "--root", str(run))
    assert started.exit_code == 0, started.output
    assert f"while {clone} holds a project (pyproject.toml)" in started.stderr
    assert "--workspace .\n" in started.stderr
    assert (run / "workspace").is_dir() and SessionStore(run).ids()
    assert not state.exists() and status(clone) == ""


def test_a_folder_of_source_files_without_git_is_a_project(tmp_path, state, monkeypatch):
    project = write_tree(tmp_path / "tool", {"src/main.c": "int main(void) { return 1; }\n"})
    monkeypatch.chdir(project)
    started = cli("start", "Make main return 0", "--no-watch", "--sandbox", "none")
    assert started.exit_code == 0, started.output
    assert f"started on {project} (the project itself" in started.stderr
    assert sorted(p.name for p in project.iterdir()) == ["src"]
    monkeypatch.chdir(project / "src")  # found again from a folder inside it
    assert "Make main return 0" in cli("sessions", "--json").stdout


def test_a_home_folder_under_git_is_no_project(tmp_path, state, monkeypatch):
    home = tmp_path / "home" / "ann"
    (home / ".git").mkdir(parents=True)  # the user's dotfiles
    (home / "demo").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert place(home / "demo") == Place(home / "demo")
    monkeypatch.chdir(home / "demo")
    started = cli("start", "Create hello.py", "--no-watch", "--sandbox", "none")
    assert started.exit_code == 0, started.output
    assert (home / "demo" / "workspace").is_dir()


def test_where_the_run_folder_is(tmp_path, state):
    project = write_tree(tmp_path / "p", {"go.mod": "module p\n", "docs/notes.txt": "n\n"})
    assert place(project) == Place(agent_folder(project), project)
    assert place(project / "docs") == Place(project / "docs")  # no project of its own, no git
    (agent_folder(project) / "sessions").mkdir(parents=True)
    assert place(project / "docs") == Place(agent_folder(project), project)  # sessions found
    # A git work tree whose top has the seed layout (this repository): the top is the run
    # folder, from anywhere in it.
    repo = write_tree(tmp_path / "repo", {"pkg/a.py": "x = 1\n"})
    (repo / ".git").mkdir()
    (repo / "workspace").mkdir()
    assert place(repo / "pkg") == Place(agent_folder(repo), repo)  # a workspace/ alone: none
    (repo / "sessions").mkdir()
    assert place(repo / "pkg") == Place(repo)
    assert place(repo) == Place(repo)
    other = tmp_path / "other"
    other.mkdir()
    assert place(tmp_path / "p", workspace=other) == Place(agent_folder(other), other)
    assert agent_folder(tmp_path / "a b") != agent_folder(tmp_path / "x" / "a b")
    assert agent_folder(tmp_path / "a b").name.startswith("a-b-")


def test_the_projects_settings_files_count_and_may_only_tighten(clone, state):
    (clone / "codingagent.toml").write_text('command_timeout = 5\nsandbox = "none"\n')
    attach(place(clone))
    settings = load_settings(agent_folder(clone))
    assert settings.command_timeout == 5
    assert settings.sandbox != "none"
    assert any("Ignored sandbox = 'none'" in line for line in settings.ignored)


# --- the check the project declares ------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"},
            ("pyproject.toml ([tool.pytest.ini_options])", "pytest -q"),
        ),
        ({"pyproject.toml": "[tool.pytest]\n"}, ("pyproject.toml ([tool.pytest])", "pytest -q")),
        (
            {"setup.cfg": "[tool:pytest]\ntestpaths = t\n"},
            ("setup.cfg ([tool:pytest])", "pytest -q"),
        ),
        ({"tox.ini": "[tox]\n\n[pytest]\n"}, ("tox.ini ([pytest])", "pytest -q")),
        ({"pytest.ini": ""}, ("pytest.ini", "pytest -q")),
        (
            {"package.json": '{"scripts": {"test": "vitest run"}}'},
            ("package.json (scripts.test)", "npm test"),
        ),
        ({"Cargo.toml": "[package]\nname = 'x'\n"}, ("Cargo.toml", "cargo test")),
        ({"go.mod": "module x\n"}, ("go.mod", "go test ./...")),
        (
            {"Makefile": "all: build\n\ntest: build\n\tpytest\n"},
            ("Makefile (the test target)", "make test"),
        ),
        # pytest's configuration comes first
        (
            {"Makefile": "test:\n\tx\n", "tox.ini": "[pytest]\n"},
            ("tox.ini ([pytest])", "pytest -q"),
        ),
        # what declares nothing
        ({"pyproject.toml": "[project]\nname = 'x'\n", "setup.cfg": "[metadata]\n"}, None),
        ({"pyproject.toml": "not [ toml"}, None),
        ({"package.json": json.dumps({"scripts": {"test": NPM_INIT_TEST}})}, None),
        ({"package.json": "[1, 2]"}, None),
        ({"Makefile": "TEST := 1\ntest := x\nbuild:\n\tcc\n"}, None),
        ({}, None),
    ],
)
def test_the_test_command_a_project_declares(tmp_path, files, expected):
    from codingagent.workspace import Workspace
    from codingagent.workspace.declared import declared_check

    found = declared_check(Workspace(write_tree(tmp_path / "p", files) if files else tmp_path))
    assert (tuple(found) if found else None) == expected


def test_the_declared_check_is_offered_and_never_run_unconfirmed(clone, monkeypatch):
    started = cli("start", TASK, "--no-watch", "--sandbox", "none")
    assert started.exit_code == 0, started.output
    assert (
        "pyproject.toml ([tool.pytest.ini_options]) declares the project's tests, 'pytest -q'; "
        'it is not run without a terminal to confirm it: start with --check "pytest -q" to '
        "use it"
    ) in started.stderr
    root = agent_folder(clone)
    assert "## Check" not in first_prompt(root)
    (state,) = (root / "sessions").glob("*.json")
    assert SessionStore(root).load(state.stem).check is None


@pytest.mark.slow
def test_the_declared_check_runs_once_the_user_confirms_it(clone, monkeypatch):
    monkeypatch.setattr("codingagent.frontends.options._terminal", lambda: True)
    declined = CliRunner().invoke(
        main, ["start", TASK, "--no-watch", "--sandbox", "none"], input="n\n"
    )
    assert declined.exit_code == 0, declined.output
    assert "declares the project's tests:" in declined.stderr
    store = SessionStore(agent_folder(clone))
    assert store.load(store.resolve("latest")).check is None
    agreed = CliRunner().invoke(
        main, ["start", TASK, "--no-watch", "--sandbox", "none"], input="y\n"
    )
    assert agreed.exit_code == 0, agreed.output
    kept = store.load(store.resolve("latest"))
    assert kept.options["check"] == "pytest -q" and kept.check is not None
    assert not kept.check.result.success
    assert "FAILED tests/test_slug.py::test_lowercase" in (kept.check_failure or "")
    assert status(clone) == ""


def test_agents_md_and_check_win_over_the_declared_check(clone):
    (clone / "AGENTS.md").write_text("check: python3 -m pytest -x\n")
    named = cli("start", TASK, "--no-watch", "--sandbox", "none")
    assert "AGENTS.md names a check command, 'python3 -m pytest -x'" in named.stderr
    assert "declares" not in named.stderr
    given = cli("start", TASK, "--no-watch", "--sandbox", "none", "--check", "")
    assert given.exit_code == 0, given.output
    assert "names a check command" not in given.stderr and "declares" not in given.stderr


def test_the_page_in_a_project_starts_sessions_on_the_project(clone):
    from codingagent.frontends.page.actions import SessionActions
    from codingagent.frontends.page.events import Approvals, EventHub

    attach(place(clone))  # as `codingagent ui` run in the project does
    store = SessionStore(agent_folder(clone))
    hub = EventHub()
    actions = SessionActions(
        store, load_settings(store.root, {"sandbox": "none"}), hub, Approvals(hub)
    )
    assert actions.workspace("") == {"path": str(clone), "problem": None}
    assert actions.workspace("tests")["path"] == str(clone / "tests")  # relative to the project
    session = actions.start(TASK, "")
    assert store.load(session).workspace == str(clone)
    assert status(clone) == ""
