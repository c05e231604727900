"""What an endpoint request holds (sources/transcript.py): the prompt without its PROTOCOL
section, history oldest first and trimmed to status lines past the budget, so a long session's
requests stay bounded; driven through the command line against a scripted model."""

from __future__ import annotations

import itertools

from scripted_model import Say, ScriptedModel
from test_endpoint import DONE, agent, profile, sent

from codingagent.protocol.manual import REMINDER
from codingagent.sources.transcript import TRIMMED, without_protocol

BIG = "x = 1  # " + "padding " * 500  # a 4 KB line


def reply(n: int) -> str:
    return f'[CREATE_FILE path="f{n}.py"]\n{BIG}\n[/CREATE_FILE]\n'


def test_history_past_the_budget_is_trimmed_to_status_lines_and_stays_bounded(tmp_path):
    budget = 12_000
    with ScriptedModel(*(Say(reply(n)) for n in range(1, 8)), Say(DONE)) as model:
        profile(tmp_path, model.url)
        env = {
            "CODINGAGENT_MODEL_HISTORY_TURNS": "30",
            "CODINGAGENT_MODEL_HISTORY_CHARS": str(budget),
        }
        result = agent(tmp_path, "start", "t", "--model", "scripted", env=env)
    assert result.exit_code == 0, result.output
    sizes = []
    for body in model.requests:
        _, messages = sent(body)
        *earlier, _ = messages
        whole = [m for m in earlier if TRIMMED not in m["content"]]
        trimmed = [m for m in earlier if TRIMMED in m["content"]]
        assert sum(len(m["content"]) for m in whole) <= budget
        for message in trimmed:
            assert BIG not in message["content"]
            if message["role"] == "user":
                assert message["content"].startswith("=== HEADER ===\nSession: ")
            else:
                assert message["content"].endswith("[/CREATE_FILE]\n")
        sizes.append(sum(len(m["content"]) for m in messages))
    assert len(sizes) == 8
    # Past the budget, a request grows by a trimmed turn (a few hundred characters), not by
    # a whole one (over 4,000).
    assert all(later - earlier < 1500 for earlier, later in itertools.pairwise(sizes[4:]))
    # The trimmed older turns still say what happened.
    _, last = sent(model.requests[-1])
    assert sum(TRIMMED in m["content"] for m in last) >= 4
    assert "[OK] CREATE_FILE: Created 'f1.py'" in last[2]["content"]


def test_a_prompt_loses_its_protocol_section_whether_full_or_the_reminder():
    for protocol in ("The whole PROTOCOL\nwith lines\n", REMINDER):
        prompt = (
            "=== HEADER ===\nSession: s\n\n=== PROTOCOL ===\n"
            f"{protocol}\n=== CONTEXT ===\nfiles\n\n=== PROMPT ===\ngo\n"
        )
        assert without_protocol(prompt) == (
            "=== HEADER ===\nSession: s\n\n=== CONTEXT ===\nfiles\n\n=== PROMPT ===\ngo\n"
        )
