"""Local models that see the whole prompt (issue 33's "Done when"), through the real command
line against fakes of Ollama and llama-server that behave as documented (tests/fake_local.py),
served on 127.0.0.1, with the profiles exactly as docs/models.md shows them."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from click.testing import CliRunner, Result
from fake_local import LOST, prompt_tokens
from scripted_model import Say, ScriptedModel

from codingagent.frontends.cli import main
from codingagent.protocol.manual import protocol_text
from codingagent.records.store import SessionStore

CREATE = '[CREATE_FILE path="hello.py"]\nprint("hello")\n[/CREATE_FILE]\n'
DONE = "[DONE]\nDone.\n[/DONE]\n"
OLLAMA_MODEL = "qwen2.5-coder:7b"


def agent(root: Path, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--root", str(root), "--commands", "allow"])


def docs_profile(root: Path, name: str, model: ScriptedModel) -> None:
    """The profile docs/models.md shows for this server, with the fake's address."""
    docs = Path(__file__).parents[1] / "docs" / "models.md"
    text = docs.read_text()
    start = text.index(f"[models.{name}]")
    table = text[start : text.index("\n\n", start)]
    port = model.root.rsplit(":", 1)[1]
    table = table.replace(":11434", f":{port}").replace(":8080", f":{port}")
    (root / "codingagent.toml").write_text(table + "\n")


def long_task() -> str:
    """A task pasted from a long issue: the first prompt is ~4,800 tokens."""
    lines = [
        f"Observed on run {i}: the parser drops the closing tag after a nested list."
        for i in range(200)
    ]
    return (
        "Fix the parser (the issue text follows).\n" + "\n".join(lines) + "\nLAST LINE OF THE ISSUE"
    )


def test_ollama_sees_a_long_first_prompt_whole(tmp_path):
    with ScriptedModel(Say(CREATE), Say(DONE), models=(OLLAMA_MODEL,), api="ollama") as model:
        docs_profile(tmp_path, "ollama", model)
        result = agent(tmp_path, "start", long_task(), "--model", "ollama")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "workspace" / "hello.py").is_file()
    first = model.requests[0]
    assert 4000 < prompt_tokens(first["messages"]) < 6000  # over Ollama's default window
    # The native chat API was used, with a window the prompt fits in (up to the trained 32k).
    assert first["options"]["num_ctx"] >= prompt_tokens(first["messages"])
    assert model.fake.windows[0] <= 32768
    seen = model.fake.seen[0]
    assert seen.startswith(protocol_text(30, 4000))  # the system text, whole
    assert "=== HEADER ===" in seen and "LAST LINE OF THE ISSUE" in seen
    assert "Fix the parser (the issue text follows)." in seen


def test_the_fake_ollama_cuts_an_over_long_prompt_from_the_front_without_a_word():
    """The behaviour the agent avoids, as documented: through the OpenAI-compatible endpoint
    the window is Ollama's default, and a longer prompt loses its start."""
    with ScriptedModel(Say(DONE), models=(OLLAMA_MODEL,), api="ollama") as model:
        text = "=== HEADER ===\n" + "word " * 20_000 + "THE END"
        body = {"model": OLLAMA_MODEL, "messages": [{"role": "user", "content": text}]}
        answer = httpx.post(f"{model.url}/chat/completions", json=body).json()
    assert answer["choices"][0]["message"]["content"] == LOST
    assert model.fake.windows == [4096]
    assert "=== HEADER ===" not in model.fake.seen[0] and model.fake.seen[0].endswith("THE END")


def big_file(root: Path) -> None:
    (root / "workspace").mkdir(exist_ok=True)
    line = "value_{i:04d} = compute_something(argument_one={i}, argument_two='" + "x" * 90 + "')\n"
    (root / "workspace" / "big.py").write_text("".join(line.format(i=i) for i in range(2000)))


def test_after_reading_a_2000_line_file_a_c_8192_llama_server_refuses_nothing(tmp_path):
    big_file(tmp_path)
    read = '[READ_FILE path="big.py"]\n'
    with ScriptedModel(Say(read), Say(DONE), models=("local",), api="llama-server") as model:
        docs_profile(tmp_path, "llamacpp", model)
        result = agent(tmp_path, "start", "Look at big.py", "--model", "llamacpp")
    assert result.exit_code == 0, result.output
    assert "Session complete: Done." in result.output
    assert model.fake.refused == [] and model.fake.tokenized > 0
    second = model.requests[1]["messages"][-1]["content"]
    assert prompt_tokens(model.requests[1]["messages"]) <= 8192
    assert 'READ_FILE path="big.py" start_line="' in second  # how to read what was cut
    assert "note: the request was fitted to the model's window of 8,192 tokens" in result.output
    (turn,) = SessionStore(tmp_path).turns(json.loads(_state(tmp_path))["sessionId"])[:1]
    meta = json.loads((turn / "meta.json").read_text())
    assert meta["contextWindow"] == 8192 and meta["fitted"] == []


def _state(root: Path) -> str:
    (path,) = (root / "sessions").glob("*.json")
    return path.read_text()


def test_a_server_that_still_answers_over_the_context_is_asked_once_smaller(tmp_path):
    """/props says more than a slot holds (the fake lies): the first request is refused, the
    next one is fitted to the n_ctx the refusal named, never the same request again."""
    big_file(tmp_path)
    read = '[READ_FILE path="big.py"]\n'
    with ScriptedModel(Say(read), Say(DONE), models=("local",), api="llama-server") as model:
        model.fake.advertised = 32768
        docs_profile(tmp_path, "llamacpp", model)
        result = agent(tmp_path, "start", "Look at big.py", "--model", "llamacpp")
    assert result.exit_code == 0, result.output
    assert len(model.fake.refused) == 1 and model.fake.refused[0] > 8192
    assert "asking once more with a smaller prompt" in result.output
    sent = [prompt_tokens(body["messages"]) for body in model.requests]
    assert all(tokens <= 8192 for tokens in sent)


def test_a_c_1024_server_ends_the_run_with_one_line_naming_the_window_and_the_fix(tmp_path):
    with ScriptedModel(Say(DONE), models=("local",), api="llama-server") as model:
        model.fake.n_ctx = 1024
        docs_profile(tmp_path, "llamacpp", model)
        result = agent(tmp_path, "start", "Write hello.py", "--model", "llamacpp")
    assert result.exit_code == 1, result.output  # a problem to fix (docs/admission.md)
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "1024 tokens" in line and "-c 4096" in line and "needs ~" in line
    assert "nothing was sent" in line
    assert model.requests == [] and model.fake.refused == []
    assert "Traceback" not in result.output


def test_doctor_shows_each_local_models_window_and_where_it_came_from(tmp_path):
    with (
        ScriptedModel(models=(OLLAMA_MODEL,), api="ollama") as ollama,
        ScriptedModel(models=("local",), api="llama-server") as llama,
    ):
        port_o, port_l = ollama.root.rsplit(":", 1)[1], llama.root.rsplit(":", 1)[1]
        (tmp_path / "codingagent.toml").write_text(
            f'[models.ollama]\nbase_url = "http://127.0.0.1:{port_o}/v1"\n'
            f'model = "{OLLAMA_MODEL}"\n'
            f'[models.llamacpp]\nbase_url = "http://127.0.0.1:{port_l}/v1"\nmodel = "local"\n'
            f'[models.mine]\nbase_url = "http://127.0.0.1:{port_l}/v1"\nmodel = "local"\n'
            "context_tokens = 4000\n"
        )
        result = CliRunner().invoke(main, ["doctor", "--root", str(tmp_path)])
    rows = {line.split("  ")[0]: line for line in result.output.splitlines()}
    assert "Ollama found: its own chat API is used (num_ctx)" in rows["model ollama"]
    assert "window 32,768 tokens (Ollama /api/show" in rows["model ollama"]
    assert "window 8,192 tokens (llama-server /props (n_ctx))" in rows["model llamacpp"]
    assert "window 4,000 tokens (the profile's context_tokens)" in rows["model mine"]


def test_a_pasted_session_with_context_tokens_is_fitted_and_shows_n_of_m(tmp_path):
    big_file(tmp_path)
    start = agent(tmp_path, "start", "Look at big.py", "--no-watch", "--context-tokens", "8000")
    assert start.exit_code == 0, start.output
    assert " of 8,000 tokens)" in start.output
    session = json.loads(_state(tmp_path))["sessionId"]
    reply = tmp_path / "reply.txt"
    reply.write_text(f'Session: {session} Sequence: 1\n[READ_FILE path="big.py"]\n')
    step = CliRunner().invoke(
        main, ["step", str(reply), "--root", str(tmp_path), "--context-tokens", "8000"]
    )
    assert step.exit_code == 0, step.output
    text = (tmp_path / "outbox" / f"{session}_seq0002.txt").read_text()
    assert len(text.encode()) / 3 <= 6000  # the budget: 8000 less a quarter for the reply
    assert 'READ_FILE path="big.py" start_line="' in text and "=== PROTOCOL ===" in text
    assert " of 8,000 tokens)" in step.output


def test_a_second_refusal_ends_the_run_with_the_one_line_never_the_same_request(tmp_path):
    """/props claims 32,768 tokens, a slot holds 1,500: the retry cannot fit, so nothing more
    is sent and the run ends as for a window too small."""
    with ScriptedModel(Say(DONE), models=("local",), api="llama-server") as model:
        model.fake.n_ctx, model.fake.advertised = 1500, 32768
        docs_profile(tmp_path, "llamacpp", model)
        result = agent(tmp_path, "start", "Write hello.py", "--model", "llamacpp")
    assert result.exit_code == 1, result.output
    assert len(model.fake.refused) == 1  # one request refused, none sent again
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "the window is 1500 tokens (as the server said)" in line and "-c " in line
