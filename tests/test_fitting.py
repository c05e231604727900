"""Fitting a request into a model's window (codingagent/prompt/fitting.py): the documented
order, the notes that say how to read what was left out, and the property that a fitted
request never exceeds its budget and always keeps the PROTOCOL, the HEADER, the task and the
results' status lines."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling import examples

from codingagent.prompt.fitting import (
    MESSAGE_TOKENS,
    NoFit,
    estimate,
    fit,
    fit_prompt,
    prompt_budget,
    reply_reserve,
    request_tokens,
)
from codingagent.protocol.manual import REMINDER, protocol_text

HEADER = "=== HEADER ===\nSession: 0123abcd\nSequence: 3\nTask: Fix the parser\nProtocol: 1.2"
TASK = "Fix the parser so that it reads nested tags.\nKeep the tests green."


def prompt(
    listing: list[str],
    views: dict[str, int],
    outputs: list[int],
    protocol: str = REMINDER,
    task: str = TASK,
) -> str:
    """A prompt as render.py writes it: HEADER, PROTOCOL, CONTEXT (listing, results with
    output, file views), PROMPT."""
    results = []
    for n, lines in enumerate(outputs):
        results.append(f"[OK] RUN_COMMAND: Ran 'make test{n}' (exit code 0)")
        results.append("  Output:")
        results += [f"    test line {i} of run {n} passed" for i in range(lines)]
    results.append("[FAILED] EDIT_FILE: 'gone.py' does not exist")
    files = []
    for path, lines in views.items():
        files.append(f"--- {path} ---")
        files += [f"{i:>4} | value_{i} = compute({i})" for i in range(1, lines + 1)]
        files.append(f"--- end {path} ---")
    context = [
        "## Workspace Files",
        *listing,
        "",
        "## Previous Command Results",
        *results,
        "",
        "## Requested File Contents",
        *files,
    ]
    return (
        f"{HEADER}\n\n=== PROTOCOL ===\n{protocol.rstrip()}\n\n=== CONTEXT ===\n"
        + "\n".join(context)
        + f"\n\n=== PROMPT ===\n{task}\n"
    )


LISTING = [f"src/pkg{i // 20}/module_{i}.py ({i * 10} bytes)" for i in range(200)]
STATUS = ["[OK] RUN_COMMAND: Ran 'make test0' (exit code 0)", "[FAILED] EDIT_FILE: 'gone.py'"]


def test_a_request_within_the_budget_is_sent_as_it_is():
    text = prompt(LISTING[:5], {"a.py": 10}, [3])
    history = [{"role": "user", "content": "old"}, {"role": "assistant", "content": "reply"}]
    fitted = fit("SYSTEM", history, text, 100_000)
    assert fitted.messages == [*history, {"role": "user", "content": text}]
    assert fitted.cuts == ()
    assert fitted.tokens == request_tokens("SYSTEM", fitted.messages)


def test_older_turns_go_first_then_the_listing_then_contents():
    text = prompt(LISTING, {"big.py": 2000}, [500])
    history = []
    for n in range(3):
        history += [
            {"role": "user", "content": f"prompt {n} " + "x" * 3000},
            {"role": "assistant", "content": f"reply {n}"},
        ]
    whole = request_tokens("S", [*history, {"role": "user", "content": text}])
    # Just under the whole request: only the oldest turn goes.
    fitted = fit("S", history, text, whole - 10)
    assert fitted.cuts == ("the 1 oldest earlier turn",)
    assert fitted.messages[0]["content"].startswith("prompt 1 ")
    # The prompt alone still too large: the listing is cut to its folders, then left out.
    alone = request_tokens("S", [{"role": "user", "content": text}])
    fitted = fit("S", history, text, alone - 10)
    assert fitted.cuts == ("the 3 earlier turns", "the listing cut to its top folders")
    content = fitted.messages[-1]["content"]
    assert "src/ (200 listing lines)" in content and "module_7.py" not in content
    # Smaller still: file contents and output keep their start and end, and say how to read
    # the rest.
    fitted = fit("S", history, text, alone // 3)
    content = fitted.messages[-1]["content"]
    assert "the listing left out" in fitted.cuts
    assert fitted.cuts[-1].startswith("file contents, command output and search results cut to")
    assert "   1 | value_1 = compute(1)" in content and "2000 | value_2000" in content
    assert 'READ_FILE path="big.py" start_line="' in content
    assert "lines of output are left out here" in content and "grep, head, tail" in content
    assert "test line 0 of run 0 passed" in content and "test line 499 of run 0" in content


def test_the_smallest_form_that_does_not_fit_says_what_it_needs():
    text = prompt(LISTING, {"big.py": 300}, [50], protocol=protocol_text(30, 4000))
    with pytest.raises(NoFit) as refused:
        fit(protocol_text(30, 4000), [], text, 500)
    assert refused.value.needed > 500 and refused.value.budget == 500


def test_a_pasted_prompt_keeps_its_protocol_and_its_smallest_form_when_nothing_fits():
    full = protocol_text(30, 4000)
    text = prompt(LISTING, {"big.py": 2000}, [100], protocol=full)
    fitted, cuts = fit_prompt(text, 6000)
    assert estimate(fitted) + MESSAGE_TOKENS <= 6000 + MESSAGE_TOKENS and cuts
    assert full.rstrip() in fitted
    smallest, cuts = fit_prompt(text, 100)
    assert cuts == ("all that can be cut",) and full.rstrip() in smallest and TASK in smallest


def test_the_reply_reserve_and_the_budget():
    assert reply_reserve(8192) == 2048 and prompt_budget(8192) == 6144
    assert reply_reserve(200_000) == 8192  # a quarter, at most 8192
    assert reply_reserve(8192, max_tokens=1000) == 1000
    assert reply_reserve(1024, max_tokens=4000) == 512  # never more than half the window


def counting(text: str) -> int:
    """A tokenizer unlike the estimate (a server's): a token per two words and symbols."""
    return len(text.split()) // 2 + text.count("|") + 1


@settings(max_examples=examples(150), deadline=None)
@given(
    files=st.lists(st.integers(0, 1500), max_size=4),
    outputs=st.lists(st.integers(0, 800), max_size=4),
    listing=st.integers(0, 300),
    turns=st.integers(0, 4),
    full=st.booleans(),
    budget=st.integers(200, 40_000),
    server=st.booleans(),
    task_lines=st.integers(1, 40),
)
def test_a_fitted_request_never_exceeds_its_budget_and_keeps_what_must_stay(
    files, outputs, listing, turns, full, budget, server, task_lines
):
    protocol = protocol_text(30, 4000) if full else REMINDER
    task = "\n".join(f"Step {i}: do the thing number {i}" for i in range(task_lines))
    views = {f"f{i}.py": n for i, n in enumerate(files)}
    text = prompt(LISTING[:listing], views, outputs, protocol=protocol, task=task)
    history = []
    for n in range(turns):
        history += [
            {"role": "user", "content": f"old prompt {n}\n" * 50},
            {"role": "assistant", "content": f"old reply {n}"},
        ]
    count = counting if server else estimate
    try:
        fitted = fit("SYSTEM PROTOCOL", history, text, budget, count)
    except NoFit as e:
        assert e.needed > budget
        return
    assert fitted.tokens <= budget
    assert fitted.tokens == request_tokens("SYSTEM PROTOCOL", fitted.messages, count)
    sent = fitted.messages[-1]["content"]
    assert sent.startswith(HEADER)
    assert protocol.rstrip() in sent
    assert sent.endswith(f"=== PROMPT ===\n{task}\n")
    for status in STATUS:
        assert status in sent or (not outputs and status.startswith("[OK]"))
    assert fitted.system == "SYSTEM PROTOCOL"
