"""Protocol 1.2 prompts tell the model what it needs, and not more (issue 14): the rendered
prompts, through real sessions, workspaces, shells and the command line."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from invoking import run
from sampling import examples

from codingagent.prompt.changes import (
    CHANGES_SHOWN,
    LISTED_FILES,
    NOISE_BYTES,
    listing_change,
    resized,
)
from codingagent.prompt.outbox import ensure_outbox, prompt_text
from codingagent.prompt.overview import overview
from codingagent.prompt.render import (
    OutboxContext,
    PromptOptions,
    estimate_tokens,
    render_outbox,
)
from codingagent.protocol.commands import (
    CreateFile,
    DeleteFile,
    Done,
    EditFile,
    Patch,
    ReadFile,
    Replace,
    RunCommand,
    Search,
)
from codingagent.protocol.manual import REMINDER, protocol_text
from codingagent.protocol.parser import TAGS, parse
from codingagent.records.store import SessionStore
from codingagent.sandbox.backends import sandbox_status
from codingagent.sandbox.probe import parse_probe, probe
from codingagent.sandbox.process import SHELL
from codingagent.sandbox.shell import Shell
from codingagent.session.lifecycle import start_session
from codingagent.session.seams import Reply
from codingagent.session.turn import TurnOptions, apply_reply
from codingagent.state import Environment, SessionState
from codingagent.workspace.listing import UNSIZED

bwrap_works = pytest.mark.skipif(
    sandbox_status("auto")[0] != "bwrap", reason="bubblewrap does not work here"
)
ENV = Environment(
    os="Linux 6.1 (Debian GNU/Linux 12 (bookworm))",
    shell="/usr/bin/dash",
    pythons={"python3": "3.11.7"},
    pytest_module="python3",
    tools=["bash", "git", "make"],
    network=False,
    sandboxed=True,
)


def section(text: str, name: str) -> str:
    after = text.split(f"=== {name} ===\n", 1)[1]
    return after.split("\n\n=== ", 1)[0]


def part(text: str, heading: str) -> str | None:
    """The body of one ``## heading`` part of the CONTEXT section, or None."""
    match = re.search(rf"^## {heading}\n(.*?)(?:\n\n## |\n\n=== |\Z)", text, re.S | re.M)
    return match.group(1) if match else None


def body_of(text: str, heading: str) -> str:
    """The body of a ``## heading`` part that must be there."""
    body = part(text, heading)
    assert body is not None, f"no ## {heading} in the prompt"
    return body


def session(tmp_path: Path, files: dict[str, str] | None = None, **options) -> tuple:
    store = SessionStore(tmp_path / "run")
    store.ensure_dirs()
    for rel, text in (files or {}).items():
        (store.workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (store.workspace / rel).write_text(text)
    prompt = PromptOptions(**options)
    state, first = start_session(store, "Make the tests pass", None, prompt, lambda ws: ENV)
    return store, state.session_id, prompt, first.read_text()


def reply(store: SessionStore, sid: str, text: str, prompt: PromptOptions) -> str:
    shell = Shell(timeout=10, sandbox="none")
    report = apply_reply(
        store, sid, Reply(text.encode(), "r.txt"), TurnOptions(shell=shell, prompt=prompt)
    )
    assert report.outbox is not None
    return report.outbox.read_text()


# --- the PROTOCOL text ------------------------------------------------------------------------


def test_protocol_says_what_fails_the_limits_and_that_output_is_merged():
    text = protocol_text(45, 2500)
    assert "a time limit of 45 s" in text
    assert "stdout and stderr come back merged, as one text" in text
    assert "at most 2,500 characters of it, the start and the end" in text
    assert "The command FAILED if it exits with a non-zero code, times out, or\n  the user " in text
    assert "refuses to run it" in text
    assert "refused if any command before it in\n  the reply failed (a test run that exits" in text
    assert "missing\n  folders are created" in text
    assert 'READ_FILE of a folder (path="data/") lists the files in it' in text


def test_the_prompt_states_the_limits_the_settings_give(tmp_path):
    _, _, _, first = session(tmp_path, command_timeout=12.5, max_output=900)
    assert "a time limit of 12.5 s" in section(first, "PROTOCOL")
    assert "at most 900 characters" in section(first, "PROTOCOL")
    assert body_of(first, "Environment").endswith(
        "Limits: 12.5 s a command, then it is killed; 900 characters of output kept "
        "(stdout and stderr merged)"
    )


def test_a_non_zero_exit_fails_the_command_and_done_after_it_is_refused(tmp_path):
    store, sid, prompt, _ = session(tmp_path)
    text = reply(store, sid, "[RUN_COMMAND]\nexit 3\n[/RUN_COMMAND]\n[DONE]\nok\n[/DONE]\n", prompt)
    assert body_of(text, "Previous Command Results").splitlines()[::2] == [
        "[FAILED] RUN_COMMAND: Ran 'exit 3' (exit code 3)",
        "[FAILED] DONE: Not accepted: 1 command(s) above failed; fix them, then send [DONE] again",
    ]


# --- the task once, the PROTOCOL section every time or first ---------------------------------


def test_the_header_names_the_task_and_the_prompt_gives_it(tmp_path):
    _, sid, _, first = session(tmp_path)
    assert section(first, "HEADER") == (
        f"Session: {sid}\nSequence: 1\nTask: Make the tests pass\nProtocol: 1.2"
    )
    assert section(first, "PROMPT") == "Make the tests pass\n"


def test_every_repeats_the_protocol_and_first_sends_a_reminder(tmp_path):
    full = protocol_text(30, 4000).rstrip("\n")
    for protocol, expected in (("every", full), ("first", REMINDER.rstrip("\n"))):
        store, sid, prompt, first = session(tmp_path / protocol, protocol=protocol)
        assert section(first, "PROTOCOL") == full
        second = reply(store, sid, "[MESSAGE]\nworking\n[/MESSAGE]\n", prompt)
        assert section(second, "PROTOCOL") == expected
        assert section(second, "HEADER").splitlines()[2] == "Task: Make the tests pass"


def test_every_example_of_the_reminder_parses_to_the_command_it_describes():
    commands = parse(REMINDER)
    assert [c.kind for c in commands] == [
        "REPLACE",
        "CREATE_FILE",
        "EDIT_FILE",
        "PATCH",
        "DELETE_FILE",
        "READ_FILE",
        "READ_FILE",
        "READ_FILE",
        "READ_FILE",
        "SEARCH",
        "RUN_COMMAND",
        "MESSAGE",
        "ASK",
        "DONE",
    ]
    assert set(TAGS) - {c.kind for c in commands} == set(), "every tag has its example"
    replace, create, edit, patch, delete, lines, symbol, listing, mapped, search, *_ = commands
    assert isinstance(replace, Replace) and isinstance(create, CreateFile)
    assert isinstance(edit, EditFile) and isinstance(patch, Patch)
    assert isinstance(delete, DeleteFile) and isinstance(search, Search)
    assert isinstance(lines, ReadFile) and isinstance(symbol, ReadFile)
    assert isinstance(listing, ReadFile) and isinstance(commands[-1], Done)
    assert replace.path == "app.py" and replace.blocks[0].search == (
        "exact old lines, enough to be unique\n"
    )
    assert replace.blocks[0].replace == "new lines\n"
    assert create.content == "the whole new content\n"
    assert (edit.start_line, edit.end_line) == (3, 5)
    assert patch.text.startswith("--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-old line\n")
    assert delete.path == "old.py"
    assert (lines.start_line, lines.end_line) == (1, 80)
    assert symbol.symbol == "Parser.parse" and listing.path == "."
    assert isinstance(mapped, ReadFile) and (mapped.path, mapped.map) == ("src/", True)
    assert (search.query, search.glob, search.context) == ("def parse", "*.py", 2)
    assert [c.command for c in commands if isinstance(c, RunCommand)] == ["python -m pytest -q"]
    assert commands[-1].summary == "a short summary"
    # The rules a model that never saw the first prompt needs: the Session line, the fence
    # rule, the DONE rule, the way back to the full text.
    assert '"Session: <id> Sequence: <n>"' in REMINDER
    assert "Put the commands inside a ``` code block" in REMINDER
    assert "DONE comes last, and is refused if any command before it failed" in REMINDER
    assert "codingagent show --full" in REMINDER
    assert len(REMINDER) < 0.3 * len(protocol_text(30, 4000))


@pytest.mark.parametrize(
    "bad",
    [
        'I will edit it.\n[EDIT_FILE path="a.py" start_line="x"]\nb\n[/EDIT_FILE]\n',
        "Sure! Here is what I would do: edit a.py.\n",
    ],
    ids=["parse error", "no command"],
)
def test_after_an_unreadable_reply_first_sends_the_full_protocol_again(tmp_path, bad):
    store, sid, prompt, _ = session(tmp_path, protocol="first")
    after_bad = reply(store, sid, bad, prompt)
    assert section(after_bad, "PROTOCOL") == protocol_text(30, 4000).rstrip("\n")
    after_good = reply(store, sid, "[MESSAGE]\nfixed\n[/MESSAGE]\n", prompt)
    assert section(after_good, "PROTOCOL") == REMINDER.rstrip("\n")


def test_the_continuation_prompt_with_first_is_under_40_percent_of_every(tmp_path):
    files = {"cli.py": "def main():\n    pass\n", "test_cli.py": "import cli\n"}
    sizes = {}
    for protocol in ("every", "first"):
        store, sid, prompt, _ = session(tmp_path / protocol, files, protocol=protocol)
        sizes[protocol] = estimate_tokens(
            reply(store, sid, "[RUN_COMMAND]\ntrue\n[/RUN_COMMAND]\n", prompt)
        )
    assert sizes["first"] < 0.4 * sizes["every"]


def test_the_protocol_setting_and_flag_and_show_full(tmp_path):
    root = tmp_path / "cli"
    root.mkdir()
    (root / "codingagent.toml").write_text('protocol = "first"\nsandbox = "none"\n')
    assert run(root, "start", "the task", "--no-watch", "--no-copy").exit_code == 0
    result = run(root, "step", "latest", "-", "--no-copy", input="[MESSAGE]\nhi\n[/MESSAGE]\n")
    assert result.exit_code == 0, result.output
    shown = run(root, "show").output
    assert section(shown, "PROTOCOL") == REMINDER.rstrip("\n")
    assert part(shown, "Environment") is None  # unchanged since the first prompt
    full = run(root, "show", "--full").output
    assert section(full, "PROTOCOL") == protocol_text(30, 4000).rstrip("\n")
    assert body_of(full, "Environment").startswith("OS: ")
    assert run(root, "show").output == shown, "show --full leaves the prompt file as it was"
    # The flag wins over the file.
    result = run(
        root, "step", "latest", "-", "--protocol", "every", input="[MESSAGE]\n2\n[/MESSAGE]\n"
    )
    assert result.exit_code == 0, result.output
    assert section(run(root, "show").output, "PROTOCOL").startswith("You are a coding agent.")
    bad = run(root, "step", "latest", "-", "--protocol", "sometimes", input="x")
    assert bad.exit_code == 2


# --- the Environment section ------------------------------------------------------------------


def test_the_environment_section_says_os_shell_python_tools_network_and_limits(tmp_path):
    _, _, _, first = session(tmp_path)
    assert part(first, "Environment") == (
        "OS: Linux 6.1 (Debian GNU/Linux 12 (bookworm))\n"
        "Shell: /bin/sh -c (dash: POSIX sh, not bash); no pipefail: a pipeline's status is its "
        "last stage's\n"
        "Python: python3 is Python 3.11.7\n"
        "Tools found: bash, git, make, pytest (python3 -m pytest); not found: gcc, node, npm, "
        "cargo, go, java, rg, curl\n"
        "Network: none (commands cannot reach the network)\n"
        "Sandbox: the system is read-only, the workspace writable, /tmp private\n"
        "Limits: 30 s a command, then it is killed; 4,000 characters of output kept "
        "(stdout and stderr merged)"
    )
    assert first.index("## Environment") < first.index("## Workspace Files")


def test_the_environment_is_shown_again_only_when_it_changes(tmp_path):
    store, sid, prompt, _ = session(tmp_path)
    second = reply(store, sid, "[MESSAGE]\n1\n[/MESSAGE]\n", prompt)
    assert part(second, "Environment") is None
    # A prompt written again (deleted, then `show`) shows what it showed before.
    store.outbox_path(sid, 2).unlink()
    assert part(ensure_outbox(store, store.load(sid), prompt).read_text(), "Environment") is None
    # Another limit is a change...
    longer = replace(prompt, command_timeout=60)
    third = reply(store, sid, "[MESSAGE]\n2\n[/MESSAGE]\n", longer)
    assert "Limits: 60 s a command" in body_of(third, "Environment")
    store.outbox_path(sid, 3).unlink()
    rewritten = ensure_outbox(store, store.load(sid), longer).read_text()
    assert "Limits: 60 s a command" in body_of(rewritten, "Environment")
    assert part(reply(store, sid, "[MESSAGE]\n3\n[/MESSAGE]\n", longer), "Environment") is None
    # ... and so is a tool found.
    state = store.load(sid)
    state.environment = ENV.model_copy(update={"tools": [*ENV.tools, "node"]})
    store.save(state)
    fifth = reply(store, sid, "[MESSAGE]\n4\n[/MESSAGE]\n", longer)
    assert "Tools found: bash, git, make, node, pytest" in body_of(fifth, "Environment")


def test_show_full_shows_the_environment_whatever_was_shown(tmp_path):
    store, sid, prompt, _ = session(tmp_path)
    reply(store, sid, "[MESSAGE]\n1\n[/MESSAGE]\n", prompt)
    text = prompt_text(store, store.load(sid), replace(prompt, full_protocol=True))[0]
    assert body_of(text, "Environment").startswith("OS: Linux 6.1")


def test_the_probe_runs_without_approval_and_finds_this_python(tmp_path, monkeypatch):
    # A PATH no probe of this process ran with: the script runs, not a kept answer.
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}:{tmp_path}/bin")
    asked: list[str] = []

    def approve(command: str) -> bool:
        asked.append(command)
        return False

    shell = Shell(timeout=10, sandbox="none", approve=approve)
    env = probe(shell, tmp_path)
    assert asked == [], "the agent's own probe is not the LLM's command"
    assert env.pythons.get("python3", "").count(".") == 2
    assert env.shell and env.os and not env.sandboxed
    assert "sh" in Path(env.shell).name or env.shell.endswith("dash")
    # Commands run under bash with pipefail wherever bash is installed (it is, here).
    assert env.pipefail == (SHELL != "/bin/sh") and env.shell.endswith("bash") == env.pipefail


def test_a_workspace_whose_version_file_picks_another_python_is_probed_on_its_own(
    tmp_path, monkeypatch
):
    """The facts are kept for the process, but a shim (pyenv, asdf) reads a version file in
    the folder a command runs in: there the probe runs again."""
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "python3"
    shim.write_text(  # as pyenv's: the nearest .python-version, in this folder or above
        "#!/bin/sh\n"
        "d=$PWD\n"
        "while :; do\n"
        '  [ -f "$d/.python-version" ] && echo "python=$3 $(cat "$d/.python-version")" && exit\n'
        '  [ "$d" = / ] && break\n'
        '  d=$(dirname "$d")\n'
        "done\n"
        f'exec {sys.executable} "$@"\n'
    )
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    plain, pinned, below = tmp_path / "plain", tmp_path / "pinned", tmp_path / "pinned" / "src"
    below.mkdir(parents=True)
    plain.mkdir()
    (pinned / ".python-version").write_text("3.99.1\n")
    shell = Shell(timeout=10, sandbox="none")
    found = probe(shell, plain).pythons["python3"]
    assert found == ".".join(map(str, sys.version_info[:3]))
    assert probe(shell, tmp_path / "plain").pythons["python3"] == found  # kept
    assert probe(shell, pinned).pythons["python3"] == "3.99.1"
    assert probe(shell, below).pythons["python3"] == "3.99.1"  # the file in a folder above


@bwrap_works
def test_the_probe_runs_inside_the_command_sandbox(tmp_path):
    env = probe(Shell(timeout=10, sandbox="bwrap"), tmp_path)
    assert env.sandboxed and env.network is False  # bubblewrap gives commands no network
    assert env.pythons


def test_the_probe_output_is_read_line_by_line():
    env = parse_probe(
        "os=Linux 6.1\ndistro=Alpine Linux v3.19\nsh=/bin/busybox\npipefail=on\n"
        "python=python3 3.12.1\nnet=route\ntool=git\ntool=pytest\nnoise\n"
    )
    assert env == Environment(
        os="Linux 6.1 (Alpine Linux v3.19)",
        shell="/bin/busybox",
        pipefail=True,
        pythons={"python3": "3.12.1"},
        tools=["git", "pytest"],
        network=True,
    )
    assert parse_probe("") == Environment()


def test_the_environment_says_when_a_pipeline_fails_on_any_stage():
    env = Environment(shell="/usr/bin/bash", pipefail=True)
    text = render_outbox(
        SessionState(session_id="a1b2c3d4", task="t", workspace="/w", environment=env),
        OutboxContext(),
    )
    assert body_of(text, "Environment").splitlines()[1] == (
        "Shell: bash -o pipefail -c (/usr/bin/bash): a pipeline fails when any stage fails"
    )


def test_an_unknown_environment_still_reads_well():
    text = render_outbox(
        SessionState(session_id="a1b2c3d4", task="t", workspace="/w", environment=Environment()),
        OutboxContext(),
    )
    assert body_of(text, "Environment").splitlines()[:5] == [
        "OS: unknown",
        "Shell: /bin/sh -c; no pipefail: a pipeline's status is its last stage's",
        "Python: not found",
        "Tools found: none of the usual ones; not found: bash, git, make, gcc, node, npm, "
        "cargo, go, java, rg, curl",
        "Network: unknown",
    ]


# --- the listing --------------------------------------------------------------------------------


@pytest.mark.slow  # a big tree
def test_a_folder_of_20000_files_does_not_hide_the_code(tmp_path):
    store = SessionStore(tmp_path / "run")
    store.ensure_dirs()
    data = store.workspace / "data"
    data.mkdir()
    for i in range(20_000):
        (data / f"row{i:05}.txt").write_bytes(b"12345\n")
    (store.workspace / "src").mkdir()
    (store.workspace / "src" / "main.py").write_text("print('hi')\n")
    prompt = PromptOptions(listing_chars=2000)
    _, first = start_session(store, "t", None, prompt)
    listing = body_of(first.read_text(), "Workspace Files")
    assert "  src/main.py (12 bytes)" in listing.splitlines()
    assert "  data/ 20,000 files, 117 KB: *.txt" in listing.splitlines()
    assert len(listing) + 1 <= prompt.listing_chars


def test_every_folder_is_represented_before_files_are_listed_and_source_comes_first():
    files = [(f"a{i:02}/deep/x{j}.txt", 10) for i in range(40) for j in range(3)]
    files += [("z/app.py", 50), ("z/notes.txt", 5)] + [(f"z/n{i}.log", 1) for i in range(200)]
    lines = overview(sorted(files), 3000)
    assert sum(len(line) + 1 for line in lines) <= 3000
    for i in range(40):
        assert any(line.startswith(f"  a{i:02}/") for line in lines), i
    assert "  z/app.py (50 bytes)" in lines
    assert not any(line.startswith("  z/n") for line in lines)  # a crowded folder: one line
    assert "  z/ 201 more files, 205 bytes: *.log, *.txt" in lines


def test_too_many_folders_for_a_line_each_are_counted_on_one(tmp_path):
    files = [(f"d{i:04}/f.txt", 3) for i in range(2000)] + [("src/main.py", 9)]
    lines = overview(sorted(files), 1000)
    assert sum(len(line) + 1 for line in lines) <= 1000
    assert "  src/main.py (9 bytes)" in lines  # folders with source files are kept first
    assert re.fullmatch(r"  \./ 1,9\d\d more folders, 1,9\d\d files, [\d.]+ KB", lines[-1])


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(["a", "b", "src", "data", "x.y"]), min_size=0, max_size=4),
            st.sampled_from(["m.py", "r.txt", "README.md", "n", "z.json"]),
            st.integers(0, 10**7),
        ),
        max_size=300,
    ),
    st.integers(400, 6000),
)
def test_the_listing_stays_within_its_budget_and_shows_every_top_folder(entries, budget):
    files = dict(("/".join([*folders, name]), size) for folders, name, size in entries)
    folder_names = {path.split("/")[0] for path in files if "/" in path}
    lines = overview(sorted(files.items()), budget)
    assert sum(len(line) + 1 for line in lines) <= budget
    text = "\n".join(lines)
    for name in folder_names:
        assert f"  {name}/" in text or "more folders" in text


def test_files_the_walk_did_not_stat_are_sized_only_when_listed():
    asked = []

    def size_of(path: str) -> int:
        asked.append(path)
        return 42

    files = [("src/app.py", UNSIZED), ("src/b.py", 7)] + [
        (f"logs/{i}.log", UNSIZED) for i in range(300)
    ]
    lines = overview(sorted(files), 500, size_of=size_of)
    assert lines == [
        "  logs/ 300 files: *.log",  # a size is said only when all of them are known
        "  src/app.py (42 bytes)",
        "  src/b.py (7 bytes)",
    ]
    assert asked == ["src/app.py"]


def test_read_file_of_a_folder_lists_it(tmp_path):
    files = {f"data/r{i:03}.txt": "x\n" for i in range(150)} | {"data/sub/s.py": "pass\n"}
    store, sid, prompt, first = session(tmp_path, files)
    assert part(first, "Workspace Files") == (
        "  data/ 150 files, 300 bytes: *.txt\n  data/sub/s.py (5 bytes)"
    )
    text = reply(
        store, sid, '[READ_FILE path="./data/"]\n[READ_FILE path="data" start_line="2"]\n', prompt
    )
    assert part(text, "Previous Command Results") == (
        "[OK] READ_FILE: The files in './data/' are listed under Requested File Contents\n"
        "[FAILED] READ_FILE: 'data' is a folder: READ_FILE lists it without lines"
    )
    view = body_of(text, "Requested File Contents").splitlines()
    assert view[0] == "--- data ---" and view[-1] == "--- end data ---"
    assert "  data/r000.txt (2 bytes)" in view and "  data/r149.txt (2 bytes)" in view
    assert "  data/sub/s.py (5 bytes)" in view


# --- SEARCH ----------------------------------------------------------------------------------


def test_a_search_is_reported_once(tmp_path):
    store, sid, prompt, _ = session(tmp_path, {"a.py": "x = 1\n", "b.md": "# b\n"})
    text = reply(store, sid, '[SEARCH query="zebra"]\n', prompt)
    assert part(text, "Previous Command Results") == (
        "[OK] SEARCH: No matches for 'zebra' (2 files searched)"
    )
    assert part(text, "Search Results") is None
    text = reply(store, sid, '[SEARCH query="x = 1"]\n', prompt)
    assert part(text, "Previous Command Results") == (
        "[OK] SEARCH: 1 match for 'x = 1' in 1 file (shown under Search Results)"
    )
    assert part(text, "Search Results") == 'SEARCH "x = 1":\na.py:1: x = 1'


# --- the listing: sent when it changed --------------------------------------------------------


def test_an_unchanged_listing_costs_one_line_and_changes_are_listed(tmp_path):
    files = {"app.py": "x = 1\n" * 50, "test_app.py": "import app\n", "docs/a.md": "# a\n"}
    store, sid, prompt, first = session(tmp_path, files)
    assert "  app.py (300 bytes)" in body_of(first, "Workspace Files")
    second = reply(store, sid, "[MESSAGE]\nlooking\n[/MESSAGE]\n", prompt)
    assert part(second, "Workspace Files") == "(unchanged since message 1)"
    ws = store.workspace
    (ws / "app.py").write_text("x = 1\n" * 50 + "y = 2\n")  # 306 bytes: noise, not a change
    third = reply(store, sid, "[MESSAGE]\nstill\n[/MESSAGE]\n", prompt)
    assert part(third, "Workspace Files") == "(unchanged since message 1)"
    (ws / "docs/a.md").unlink()
    fourth = reply(
        store,
        sid,
        '[CREATE_FILE path="src/new.py"]\npass\n[/CREATE_FILE]\n'
        '[CREATE_FILE path="test_app.py"]\n' + "import app\n" * 20 + "[/CREATE_FILE]\n",
        prompt,
    )
    assert part(fourth, "Workspace Files") == (
        '(changes since message 1; READ_FILE path="." lists every file)\n'
        "  added: src/new.py (5 bytes)\n"
        "  removed: docs/a.md\n"
        "  changed: test_app.py (220 bytes)"
    )
    fifth = reply(store, sid, "[MESSAGE]\nok\n[/MESSAGE]\n", prompt)
    assert part(fifth, "Workspace Files") == "(unchanged since message 4)"
    whole = reply(store, sid, '[READ_FILE path="."]\n', prompt)
    assert part(whole, "Workspace Files") == (
        "(every file is listed under Requested File Contents)"
    )
    assert "  src/new.py (5 bytes)" in body_of(whole, "Requested File Contents")


def test_the_full_listing_comes_back_after_many_changes_and_for_a_new_chat(tmp_path):
    store, sid, prompt, _ = session(tmp_path, {"app.py": "x = 1\n"})
    for n in range(CHANGES_SHOWN + 1):
        (store.workspace / f"gen/f{n:03}.txt").parent.mkdir(exist_ok=True)
        (store.workspace / f"gen/f{n:03}.txt").write_text("data\n")
    text = reply(store, sid, "[MESSAGE]\nbuilt\n[/MESSAGE]\n", prompt)
    assert body_of(text, "Workspace Files").startswith("  app.py (6 bytes)\n")
    state = store.load(sid)
    shown = prompt_text(store, state, replace(prompt, full_protocol=True))[0]
    assert body_of(shown, "Workspace Files").startswith("  app.py (6 bytes)\n")
    later = reply(store, sid, "[MESSAGE]\nagain\n[/MESSAGE]\n", prompt)
    assert part(later, "Workspace Files") == "(unchanged since message 2)"


def test_a_prompt_written_again_for_the_same_message_lists_every_file(tmp_path):
    store, sid, prompt, _ = session(tmp_path, {"app.py": "x = 1\n"})
    reply(store, sid, '[CREATE_FILE path="b.py"]\nb\n[/CREATE_FILE]\n', prompt)
    state = store.load(sid)
    store.outbox_path(sid, state.sequence_number).unlink()
    again = ensure_outbox(store, state, prompt).read_text()
    assert part(again, "Workspace Files") == "  app.py (6 bytes)\n  b.py (2 bytes)"


@given(
    st.integers(min_value=1, max_value=10**9), st.integers(min_value=0, max_value=NOISE_BYTES - 1)
)
def test_a_few_bytes_more_or_less_are_noise_and_a_doubling_is_not(size, delta):
    assert not resized(size, size + delta)
    assert not resized(size + delta, size)
    assert resized(size, 2 * size + NOISE_BYTES)
    assert resized(size, 0) and resized(0, size)


def test_a_large_workspace_keeps_only_a_digest_and_lists_all_when_it_changed():
    files = [(f"data/f{n:05}.txt", 10) for n in range(LISTED_FILES + 1)]
    first = listing_change(files, None, None, None)
    assert first.lines is None and first.known is None
    same = listing_change(files, first.known, first.digest, 1)
    assert same.lines == ["(unchanged since message 1)"] and same.known is None
    grown = listing_change([*files, ("new.py", 5)], same.known, same.digest, 1)
    assert grown.lines is None and grown.digest != first.digest
