"""What the model knows before it asks (docs/prompts.md): the project's instructions, the
files the user named, a map of the code. Driven through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from invoking import Run

from codingagent.codemap import tags
from codingagent.codemap.repomap import code_map
from codingagent.prompt.instructions import instruction_files
from codingagent.prompt.named import at_words


def make_run(tmp_path: Path, files: dict[str, str]) -> Run:
    ws = tmp_path / "ws"
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    return Run(tmp_path / "run", ws)


def start(run: Run, task: str, *flags: str) -> None:
    result = run.cli(
        "start", task, "--no-watch", "--workspace", str(run.ws), "--sandbox", "none", *flags
    )
    assert result.exit_code == 0, result.output
    (state,) = (run.root / "sessions").glob("*.json")
    run.session = state.stem


def reply(run: Run, body: str) -> str:
    seq = len(list((run.root / "outbox").glob("*.txt")))
    run.step(f"Session: {run.session} Sequence: {seq}\n{body}", "--sandbox", "none")
    return run.prompt()


# --- project instructions ----------------------------------------------------------------


def test_agents_md_is_in_the_first_prompt_and_again_only_after_it_changed(tmp_path: Path) -> None:
    run = make_run(tmp_path, {"AGENTS.md": "Run the tests with `make check`.\n", "a.py": "x = 1\n"})
    start(run, "fix a")
    first = run.prompt()
    assert "## Project Instructions\n--- AGENTS.md ---\nRun the tests with `make check`." in first
    second = reply(run, '[READ_FILE path="a.py"]')
    assert "make check" not in second and "Project Instructions" not in second
    third = reply(run, "[RUN_COMMAND]\necho 'Use tabs.' >> AGENTS.md\n[/RUN_COMMAND]")
    assert "## Project Instructions (changed since you last saw them)" in third
    assert "Use tabs." in third and "make check" in third
    fourth = reply(run, '[READ_FILE path="a.py"]')
    assert "Project Instructions" not in fourth and "Use tabs." not in fourth
    # and `show --full` (a prompt for a new chat) shows it again
    full = run.cli("show", run.session, "--full")
    assert "Use tabs." in full.output


def test_a_nested_agents_md_comes_when_the_model_works_in_its_folder(tmp_path: Path) -> None:
    run = make_run(
        tmp_path,
        {"AGENTS.md": "Root rules.\n", "lib/AGENTS.md": "Lib rules.\n", "lib/x.py": "x = 1\n"},
    )
    start(run, "tidy up")
    first = run.prompt()
    assert "Root rules." in first and "Lib rules." not in first
    second = reply(run, '[READ_FILE path="lib/x.py"]')
    section = second.split("## Project Instructions (changed since you last saw them)\n")[1]
    assert section.startswith("--- lib/AGENTS.md ---\nLib rules.\n--- end lib/AGENTS.md ---\n")
    assert "--- AGENTS.md ---\nRoot rules." in section
    assert "Project Instructions" not in reply(run, '[READ_FILE path="lib/x.py"]')


def test_resume_file_with_an_unknown_name_changes_nothing(tmp_path: Path) -> None:
    run = make_run(tmp_path, {"a.py": "1\n"})
    start(run, "t")
    before = run.prompt()
    result = run.cli("resume", run.session, "--no-watch", "--file", "b.py")
    assert result.exit_code == 1 and "matches 'b.py' (nearest: a.py)" in result.output
    assert run.prompt() == before


@given(
    local=st.from_regex(r"[a-z][a-z0-9._]{0,8}", fullmatch=True),
    domain=st.from_regex(r"[a-z]{1,8}\.(org|com|io)", fullmatch=True),
)
def test_an_email_address_is_never_a_path(local: str, domain: str) -> None:
    assert at_words(f"write to {local}@{domain} about @src/a.py") == ["src/a.py"]


def test_nested_agents_md_nearest_first_then_the_root(tmp_path: Path) -> None:
    files = ["AGENTS.md", "pkg/AGENTS.md", "pkg/sub/AGENTS.md", "pkg/sub/x.py", "other/AGENTS.md"]
    assert instruction_files(files, ["pkg/sub/x.py"], None) == [
        "pkg/sub/AGENTS.md",
        "pkg/AGENTS.md",
        "AGENTS.md",
    ]
    assert instruction_files(files, [], None) == ["AGENTS.md"]
    assert instruction_files(files, [], ()) == []  # the setting turns it off
    assert instruction_files(files, [], ("other/AGENTS.md", "gone.md")) == ["other/AGENTS.md"]


def test_without_agents_md_the_first_of_its_kin_is_shown(tmp_path: Path) -> None:
    kin = [".github/copilot-instructions.md", "CONVENTIONS.md", "GEMINI.md"]
    assert instruction_files(kin, [], None) == ["GEMINI.md"]
    assert instruction_files([*kin, "CLAUDE.md"], [], None) == ["CLAUDE.md"]
    assert instruction_files([".github/copilot-instructions.md"], [], None) == [
        ".github/copilot-instructions.md"
    ]
    assert instruction_files(["docs/CLAUDE.md"], [], None) == []


def test_instructions_are_masked_cut_to_the_budget_and_can_be_turned_off(tmp_path: Path) -> None:
    long = "Build with make.\n" + "".join(f"Rule {n}: be careful.\n" for n in range(2000))
    long += "AWS key: AKIAIOSFODNN7EXAMPLF\n"
    run = make_run(tmp_path, {"CLAUDE.md": long})
    (run.root).mkdir(parents=True)
    (run.root / "codingagent.toml").write_text("instructions_chars = 500\n")
    start(run, "do it")
    prompt = run.prompt()
    assert "--- CLAUDE.md ---\nBuild with make." in prompt
    assert 'READ_FILE path="CLAUDE.md" shows the rest' in prompt
    assert "Rule 100:" not in prompt
    section = prompt.split("## Project Instructions")[1].split("## Workspace Files")[0]
    assert len(section) < 800
    off = make_run(
        tmp_path / "off", {"AGENTS.md": "Never do X.\n", "secret.md": "AKIAIOSFODNN7EXAMPLF"}
    )
    off.root.mkdir(parents=True)
    (off.root / "codingagent.toml").write_text('instructions = ["secret.md"]\n')
    start(off, "do it")
    prompt = off.prompt()
    assert "Never do X." not in prompt
    assert "--- secret.md ---\n[masked:" in prompt and "AKIAIOSFODNN7EXAMPLF" not in prompt


# --- files named up front ----------------------------------------------------------------


def test_file_and_at_path_are_shown_whole_and_no_other_file_is(tmp_path: Path) -> None:
    big = "".join(f"line_{n} = {n}\n" for n in range(1, 701))  # past a READ_FILE window
    run = make_run(
        tmp_path,
        {"src/app.py": big, "src/util.py": "def helper():\n    return 1\n", "README.md": "hi\n"},
    )
    start(
        run,
        "Make @src/util.py faster (mail me@example.org; keep @property)",
        "--file",
        "src/app.py",
    )
    prompt = run.prompt()
    contents = prompt.split("## Requested File Contents\n")[1].split("=== PROMPT ===")[0]
    assert "--- src/app.py ---\n   1 | line_1 = 1\n" in contents
    assert " 700 | line_700 = 700\n--- end src/app.py ---" in contents
    assert "more lines below" not in contents
    assert "--- src/util.py ---\n   1 | def helper():\n   2 |     return 1\n" in contents
    assert contents.count("--- end ") == 2  # README.md is not shown
    state = json.loads((run.root / "sessions" / f"{run.session}.json").read_text())
    assert state["namedFiles"] == ["src/app.py", "src/util.py"]
    # the model saw them whole: an EDIT_FILE by their line numbers is checked against them
    assert set(state["shownFiles"]) == {"src/app.py", "src/util.py"}


def test_globs_folders_and_resume_file(tmp_path: Path) -> None:
    run = make_run(tmp_path, {"a/one.py": "1\n", "a/two.py": "2\n", "b/three.txt": "3\n"})
    start(run, "look at @b", "--file", "a/*.py")
    prompt = run.prompt()
    assert "--- a/one.py ---" in prompt and "--- a/two.py ---" in prompt
    assert "--- b ---\n  b/three.txt (2 bytes)\n--- end b ---" in prompt  # a folder: listed
    result = run.cli("resume", run.session, "--no-watch", "--file", "b/three.txt")
    assert result.exit_code == 0, result.output
    assert "--- b/three.txt ---\n   1 | 3\n" in run.prompt()


def test_a_name_that_matches_nothing_stops_before_any_session(tmp_path: Path) -> None:
    run = make_run(tmp_path, {"src/app.py": "x\n", "src/api.py": "y\n"})
    result = run.cli("start", "t", "--no-watch", "--workspace", str(run.ws), "--file", "src/ap.py")
    assert result.exit_code == 1
    assert "matches 'src/ap.py' (nearest: src/app.py, src/api.py, src)" in result.output
    assert not list((run.root / "sessions").glob("*.json"))
    result = run.cli("start", "fix @src/appp.py", "--no-watch", "--workspace", str(run.ws))
    assert result.exit_code == 1 and "'@src/appp.py' (nearest: src/app.py" in result.output
    assert not list((run.root / "sessions").glob("*.json"))


def test_at_words_leave_mail_addresses_and_decorators_alone() -> None:
    text = "see @src/a.py, mail bob@host.org or @alice; use @property and (@b/c.ts)."
    assert at_words(text) == ["src/a.py", "alice", "property", "b/c.ts"]


# --- the code map --------------------------------------------------------------------------


def three_hundred_modules(ws: Path) -> None:
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "core.py").write_text(
        "def dispatch_event(name, payload):\n    return (name, payload)\n"
    )
    for n in range(300):
        (ws / "pkg" / f"mod_{n:03d}.py").write_text(
            f"from pkg.core import dispatch_event\n\n\ndef handle_{n}(payload):\n"
            f"    return dispatch_event('e{n}', payload)\n"
        )
    (ws / "web").mkdir()
    (ws / "web" / "app.ts").write_text(
        "export class Dashboard {\n  render(target: string): string {\n    return target;\n"
        "  }\n}\n\nexport function mountDashboard(id: string): Dashboard {\n"
        "  return new Dashboard();\n}\n"
    )
    (ws / "svc").mkdir()
    (ws / "svc" / "server.go").write_text(
        "package svc\n\ntype Server struct {\n\tPort int\n}\n\n"
        "func (s *Server) ListenAndServe() error {\n\treturn nil\n}\n"
    )


def test_the_map_of_300_modules_names_the_function_they_call_and_the_ts_and_go_code(
    tmp_path: Path,
) -> None:
    run = make_run(tmp_path, {})
    three_hundred_modules(run.ws)
    start(run, "Add a retry to event dispatching")
    prompt = run.prompt()
    assert len(prompt) < 30_000
    code_map_section = prompt.split("## Code Map\n")[1].split("=== PROMPT ===")[0]
    lines = code_map_section.splitlines()
    assert lines[1:3] == ["pkg/core.py:", "   1 | def dispatch_event(name, payload):"]
    assert "web/app.ts:\n   1 | export class Dashboard {\n" in code_map_section
    assert "   7 | export function mountDashboard(id: string): Dashboard {" in code_map_section
    assert "svc/server.go:\n   3 | type Server struct {\n" in code_map_section
    assert "   7 | func (s *Server) ListenAndServe() error {" in code_map_section
    assert "more files with definitions not shown" in code_map_section
    # the map is in the first prompt only; later, READ_FILE map="true" asks for one
    later = reply(
        run, '[READ_FILE path="svc" map="true"]\n[READ_FILE path="pkg/core.py" map="true"]'
    )
    assert "## Code Map" not in later
    assert "[OK] READ_FILE: The code map of 'svc' is shown under Requested File Contents" in later
    assert (
        "--- svc ---\n(code map)\nsvc/server.go:\n   3 | type Server struct {\n"
        "   7 | func (s *Server) ListenAndServe() error {\n--- end svc ---"
    ) in later
    assert "--- pkg/core.py ---\n(code map)\npkg/core.py:\n   1 | def dispatch_event(" in later
    assert "mod_001" not in later.split("## Requested File Contents")[1]
    missing = reply(run, '[READ_FILE path="nowhere" map="true"]')
    assert "[FAILED] READ_FILE" in missing


def test_the_map_leans_toward_the_named_files(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("def alpha_helper():\n    pass\n")
    (ws / "b.py").write_text("def beta_helper():\n    pass\n")
    (ws / "use_a.py").write_text("from a import alpha_helper\nalpha_helper()\n")
    (ws / "use_b.py").write_text("from b import beta_helper\nbeta_helper()\n")
    paths = ["a.py", "b.py", "use_a.py", "use_b.py"]
    toward_a = code_map(ws, paths, 10_000, focus_files=["use_a.py"]).text
    toward_b = code_map(ws, paths, 10_000, focus_files=["use_b.py"]).text
    assert toward_a.splitlines()[0] == "a.py:" and toward_b.splitlines()[0] == "b.py:"
    by_task = code_map(ws, paths, 10_000, focus_text="make beta_helper faster").text
    assert by_task.splitlines()[0] == "b.py:"


def test_the_tags_cache_reads_only_what_changed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(20):
        (ws / f"m{n}.py").write_text(f"def f{n}():\n    pass\n")
    paths = [f"m{n}.py" for n in range(20)]
    cache = tmp_path / "cache" / "tags"
    first = code_map(ws, paths, 5000, cache=cache)
    assert first.parsed == 20
    # file times older than the cache's racy window, as after a checkout
    import os
    import time

    old = time.time() - 60
    for path in paths:
        os.utime(ws / path, (old, old))
    assert code_map(ws, paths, 5000, cache=cache).parsed == 20  # times changed: read again
    again = code_map(ws, paths, 5000, cache=cache)
    assert again.parsed == 0 and again.text == first.text
    (ws / "m3.py").write_text("def renamed_function():\n    pass\n")
    os.utime(ws / "m3.py", (old, old))  # the size tells the change
    changed = code_map(ws, paths, 5000, cache=cache)
    assert changed.parsed == 1 and "renamed_function" in changed.text
    # the graph kept beside the tags: a map of the same files needs nothing else
    assert sorted(p.suffix for p in cache.parent.iterdir()) == ["", ".graph", ".maps"]
    cache.with_suffix(".graph").write_bytes(b"not marshal")  # made again from the tags
    assert code_map(ws, paths, 5000, cache=cache, focus_text="renamed").parsed == 0
    for kept in cache.parent.iterdir():  # a damaged cache is rebuilt
        kept.write_bytes(b"not marshal")
    rebuilt = code_map(ws, paths, 5000, cache=cache, focus_text="renamed_function")
    assert rebuilt.parsed == 20 and rebuilt.text.startswith("m3.py:\n   1 | def renamed_function")


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("a.py", b"class A:\n    def m(self):\n        pass\n", ["A", "A.m"]),
        ("a.go", b"package a\nfunc (s *S) Run() {}\ntype S struct{}\n", ["Run", "S"]),
        ("a.ts", b"interface I { f(): void }\nexport const g = () => 1;\n", ["I", "I.f", "g"]),
        ("a.rs", b"struct P;\nimpl P { fn new() -> P { P } }\n", ["P", "new"]),
        ("a.rb", b"class K\n  def go\n  end\nend\n", ["K", "K.go"]),
        ("A.java", b"class A { void run() {} }\n", ["A", "A.run"]),
        ("a.c", b"int main(void) { return 0; }\n", ["main"]),
        ("a.js", b"function h() {}\nclass C { m() {} }\n", ["h", "C", "C.m"]),
    ],
)
def test_definitions_in_many_languages(path: str, source: bytes, expected: list[str]) -> None:
    found = tags.file_tags(path, source)
    assert found is not None
    assert [d.qualified for d in found.definitions] == expected


def test_python_without_its_grammar_is_read_with_ast() -> None:
    found = tags._python(b"class A:\n    def m(self):\n        helper()\n")
    assert [(d.qualified, d.line, d.signature) for d in found.definitions] == [
        ("A", 1, "class A:"),
        ("A.m", 2, "    def m(self):"),
    ]
    assert found.references == {"helper": 1}


def test_a_small_window_leaves_the_code_map_out_first(tmp_path: Path) -> None:
    from codingagent.prompt.fitting import estimate, fit_prompt

    run = make_run(tmp_path, {})
    three_hundred_modules(run.ws)
    start(run, "Add a retry to event dispatching")
    prompt = run.prompt()
    code_map_section = prompt.split("## Code Map\n")[1].split("\n\n")[0]
    budget = estimate(prompt) - estimate(code_map_section) + 50
    fitted, cuts = fit_prompt(prompt, budget)
    assert cuts == ("the code map left out",)
    assert "## Code Map\n(the code map is left out here to fit the model's window" in fitted
    listing = prompt.split("## Workspace Files\n")[1].split("\n\n")[0]
    assert f"## Workspace Files\n{listing}\n\n" in fitted  # the listing is whole
    assert "def dispatch_event" not in fitted.split("## Code Map")[1].split("\n\n")[0]
