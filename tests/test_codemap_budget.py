"""The code map's two budgets (docs/prompts.md, "The code map"): the characters it may take,
which follow a model endpoint's window, and the parsing a first map may do on a tree never
seen, after which it says it is partial and each later map reads on."""

from __future__ import annotations

import marshal
import os
import random
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling import examples
from scripted_model import Say, ScriptedModel
from test_local_windows import DONE, docs_profile
from test_project_context import three_hundred_modules

from codingagent.codemap.graph import build, keep_graph, known_graph, renamed
from codingagent.codemap.ranking import rank
from codingagent.codemap.repomap import code_map
from codingagent.codemap.tagcache import Plain, cache_file
from codingagent.frontends.cli import main
from codingagent.prompt.mapview import map_tokens

FIRST_LOOK = "(a first look: the definitions of "


def map_of(prompt: str) -> str:
    return prompt.split("## Code Map\n")[1].split("\n\n")[0]


def first_prompt(root: Path) -> str:
    (first,) = sorted((root / "outbox").glob("*_seq0001.txt"))
    return first.read_text()


def start_with_a_model(root: Path, n_ctx: int) -> str:
    """The first prompt of a session whose model is a llama-server started with ``-c n_ctx``."""
    three_hundred_modules(root / "workspace")
    with ScriptedModel(Say(DONE), models=("local",), api="llama-server") as model:
        model.fake.n_ctx = n_ctx
        docs_profile(root, "llamacpp", model)
        flags = ["--model", "llamacpp", "--sandbox", "none", "--commands", "deny"]
        result = CliRunner().invoke(
            main, ["start", "Add a retry to event dispatching", *flags, "--root", str(root)]
        )
    assert result.exit_code == 0, result.output
    return first_prompt(root)


def test_the_map_budget_follows_the_window_the_endpoint_reports(tmp_path: Path) -> None:
    small = map_of(start_with_a_model(tmp_path / "small", 8192))
    large = map_of(start_with_a_model(tmp_path / "large", 131_072))
    pasted = tmp_path / "pasted"
    three_hundred_modules(pasted / "workspace")
    started = CliRunner().invoke(
        main, ["start", "Add a retry to event dispatching", "--no-watch", "--root", str(pasted)]
    )
    assert started.exit_code == 0, started.output
    unknown = map_of(first_prompt(pasted))
    # a sixteenth of the window, at least 1,024 tokens; 2,048 while the window is unknown;
    # four characters a token (the line under the heading is not counted)
    body = [len(text.split("\n", 1)[1]) for text in (small, large, unknown)]
    assert 3_000 < body[0] <= 1024 * 4 < body[2] <= 2048 * 4 < body[1] <= 8192 * 4
    assert "more files with definitions not shown" not in large  # all 302 files fit
    for text in (small, large, unknown):
        assert text.split("\n")[1] == "pkg/core.py:"
    assert map_tokens(None, 8192) == 1024 and map_tokens(None, 131_072) == 8192
    assert map_tokens(3000, 131_072) == 3000 and map_tokens(None) == 2048


def many_files(ws: Path, count: int) -> list[str]:
    """``count`` small Python files in ten folders, each calling the next one's function,
    with times an hour old (as after a checkout)."""
    paths = []
    for n in range(count):
        path = f"pkg{n % 10}/mod_{n:04d}.py"
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_text(f"def work_{n:04d}(x):\n    return work_{(n + 1) % count:04d}(x)\n")
        paths.append(path)
    old = time.time() - 3600
    for path in paths:
        os.utime(ws / path, (old, old))
    return sorted(paths)


def test_a_first_map_parses_within_its_budget_says_so_and_later_maps_read_on(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    paths = many_files(ws, 300)
    cache = cache_file(tmp_path / "cache", ws)
    # 11 ms for Python's grammar, then ~0.1 ms a file: about 90 files in 20 ms
    first = code_map(ws, paths, 8000, cache=cache, parse_ms=20)
    assert 50 < first.parsed < 150 and first.unread == 300 - first.parsed
    assert first.text.startswith(f"{FIRST_LOOK}{first.parsed} of 300 source files")
    assert 'READ_FILE path="." map="true" reads them all)' in first.text.split("\n")[0]
    assert len(first.text) <= 8000
    # the same tree and cache state give the same map
    again = code_map(ws, paths, 8000, cache=tmp_path / "other" / "tags", parse_ms=20)
    assert again.text == first.text
    # a partial map is not kept: the next one reads on from the cache, to the whole tree
    read = first.parsed
    while True:
        later = code_map(ws, paths, 8000, cache=cache, parse_ms=20)
        read += later.parsed
        if not later.unread:
            break
        assert later.text.startswith(f"{FIRST_LOOK}{read} of 300 source files")
    assert read == 300 and not later.text.startswith(FIRST_LOOK)
    whole = code_map(ws, paths, 8000, cache=tmp_path / "fresh" / "tags")  # no parse budget
    assert later.text == whole.text
    assert code_map(ws, paths, 8000, cache=cache, parse_ms=20).parsed == 0


def test_a_first_map_parses_the_named_files_and_the_task_s_first(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    paths = many_files(ws, 300)
    (ws / "deep" / "inner").mkdir(parents=True)
    (ws / "deep" / "inner" / "zz_named.py").write_text("def chosen_one():\n    pass\n")
    (ws / "zz_billing").mkdir()
    (ws / "zz_billing" / "invoices.py").write_text("def total_due():\n    pass\n")
    paths = sorted([*paths, "deep/inner/zz_named.py", "zz_billing/invoices.py"])
    made = code_map(
        ws,
        paths,
        8000,
        focus_files=["deep/inner/zz_named.py"],
        focus_text="the invoices are wrong",
        cache=tmp_path / "cache" / "tags",
        parse_ms=13,
    )
    assert made.parsed < 30 and made.unread
    assert "deep/inner/zz_named.py:\n   1 | def chosen_one():" in made.text
    assert "zz_billing/invoices.py:\n   1 | def total_due():" in made.text


def test_a_small_tree_is_read_whole_by_the_first_prompt(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    three_hundred_modules(ws)
    run = ["--workspace", str(ws), "--root", str(tmp_path / "run")]
    started = CliRunner().invoke(main, ["start", "Add a retry", "--no-watch", *run])
    assert started.exit_code == 0, started.output
    assert FIRST_LOOK not in first_prompt(tmp_path / "run")


def test_a_folder_map_keeps_the_other_files_tags_and_the_kept_graph_maps_alike(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    paths = many_files(ws, 40)
    cache = cache_file(tmp_path / "cache", ws)
    whole = code_map(ws, paths, 4000, cache=cache, focus_text="work_0007")
    assert whole.parsed == 40
    folder = code_map(ws, paths, 4000, cache=cache, under="pkg3")
    assert folder.parsed == 0 and folder.text.startswith("pkg3/")
    kept = marshal.loads(cache.read_bytes())["files"]
    assert len(kept) == 40  # the folder's map did not drop the other files' tags
    # a map from the graph kept beside the tags is the map made from the tags
    cached = code_map(ws, paths, 3000, cache=cache, focus_text="work_0012 and work_0030")
    fresh = code_map(ws, paths, 3000, focus_text="work_0012 and work_0030")
    assert cached.parsed == 0 and fresh.parsed == 40
    assert cached.text == fresh.text
    assert cached.text.startswith(  # the definitions the task names first
        "pkg2/mod_0012.py:\n   1 | def work_0012(x):\npkg0/mod_0030.py:\n   1 | def work_0030(x):"
    )


def test_a_continuation_parses_nothing_and_the_next_first_map_reads_on(tmp_path: Path) -> None:
    """A turn's prompt shows no map and parses none (its cost must not grow with the tree:
    issue 38); the next session's first map reads on from the cache."""
    ws, root = tmp_path / "ws", tmp_path / "run"
    many_files(ws, 1500)  # more than a first prompt's parse budget: ~1,100 such files
    start = ["start", "Speed up work_0042", "--no-watch", "--workspace", str(ws), "--root"]
    started = CliRunner().invoke(main, [*start, str(root)])
    assert started.exit_code == 0, started.output
    first = map_of(first_prompt(root)).split("\n")[1]
    assert first.startswith(FIRST_LOOK) and " of 1,500 source files" in first
    (session,) = (path.stem for path in (root / "sessions").glob("*.json"))
    (tags,) = (root / "sessions" / ".cache").glob("codemap-*.marshal")
    read_first = len(marshal.loads(tags.read_bytes())["files"])
    assert 0 < read_first < 1500
    reply = tmp_path / "reply.txt"
    reply.write_text(f'Session: {session} Sequence: 1\n[READ_FILE path="pkg0/mod_0000.py"]\n')
    step = CliRunner().invoke(main, ["step", session, str(reply), "--root", str(root)])
    assert step.exit_code == 0, step.output
    later = sorted((root / "outbox").glob("*_seq0002.txt"))[0].read_text()
    assert "## Code Map" not in later
    assert len(marshal.loads(tags.read_bytes())["files"]) == read_first  # nothing parsed
    again = CliRunner().invoke(main, [*start, str(root)])  # a new session: its first map
    assert again.exit_code == 0, again.output
    assert len(marshal.loads(tags.read_bytes())["files"]) == 1500  # read on, to the end
    shown = CliRunner().invoke(main, ["show", session, "--full", "--root", str(root)])
    assert shown.exit_code == 0, shown.output
    whole = map_of(shown.output)
    assert FIRST_LOOK not in whole and whole.split("\n")[1] == "pkg2/mod_0042.py:"


names = st.sampled_from(["alpha_helper", "beta", "_gamma", "deltaValue", "eps", "zeta_zeta"])
plains = st.lists(
    st.tuples(st.lists(names, unique=True, max_size=3), st.dictionaries(names, st.integers(1, 4))),
    min_size=1,
    max_size=8,
)


@settings(max_examples=examples(60), deadline=None)
@given(plains, st.lists(names, max_size=2), st.lists(st.integers(0, 7), max_size=2))
def test_every_definition_is_ranked_once_and_a_kept_graph_ranks_alike(
    files: list[tuple[list[str], dict[str, int]]], task: list[str], named: list[int]
) -> None:
    tags = {
        f"d{n % 3}/f{n}.py": (
            tuple(defined),
            refs,
            "\n".join(
                f"{line}\t{line}\tfunction\t{name}\t{name}\tdef {name}():"
                for line, name in enumerate(defined, 1)
            ),
        )
        for n, (defined, refs) in enumerate(files)
    }
    focus = [f"d{n % 3}/f{n}.py" for n in named if n < len(files)]
    graph = build(tags)
    ranked = list(rank(graph, focus, task))
    expected = sorted(
        (path, line) for path, plain in tags.items() for line in range(1, len(plain[0]) + 1)
    )
    assert sorted((path, d[3]) for path, d in ranked) == expected
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder) / "tags"
        keep_graph(cache, "stamp", graph)
        kept = known_graph(cache, "stamp")
        assert known_graph(cache, "another") is None
    assert kept is not None and list(rank(kept, focus, task)) == ranked


def _plains(files: list[tuple[list[str], dict[str, int]]]) -> dict[str, Plain]:
    return {
        f"f{n}.py": (tuple(defined), refs, " ".join(defined))
        for n, (defined, refs) in enumerate(files)
    }


@settings(max_examples=examples(150), deadline=None)
@given(plains, st.data())
def test_a_graph_patched_for_new_definitions_is_the_graph_built(
    files: list[tuple[list[str], dict[str, int]]], data: st.DataObject
) -> None:
    """Definitions added or removed (each file referencing what it did): the patched graph is
    the one built from the new tags whenever the patch is taken, and the patch is taken when
    no such name is an edge (a new function nothing calls)."""
    before = _plains(files)
    after = dict(before)
    for path in data.draw(st.lists(st.sampled_from(sorted(before)), max_size=3, unique=True)):
        defined, refs, _ = before[path]
        kept = [name for name in defined if data.draw(st.booleans())]
        new = data.draw(st.lists(st.sampled_from(["new_one", "fresh", "beta"]), unique=True))
        now = tuple(dict.fromkeys([*kept, *new]))
        after[path] = (now, refs, " ".join(now))
    changed = frozenset().union(*(set(before[p][0]) ^ set(after[p][0]) for p in before))
    built = build(after)
    patched = renamed(build(before), after, changed)
    if patched is not None:
        assert patched == built
    edges = {n for n in changed if n in built.key_names or n in build(before).key_names}
    in_order = all(
        [n for n in before[p][0] if n not in changed]
        == [n for n in after[p][0] if n not in changed]
        for p in before
    )
    if in_order and not edges and len(changed) <= 16:
        assert patched is not None


def test_a_name_that_becomes_an_edge_is_not_patched_in() -> None:
    """A call that waited for its function (referenced, defined nowhere) becomes an edge when
    the function is added: the graph is built, not patched."""
    before = _plains([([], {"later": 1}), (["alpha_helper"], {})])
    after = _plains([([], {"later": 1}), (["alpha_helper", "later"], {})])
    assert renamed(build(before), after, frozenset({"later"})) is None
    assert "later" in build(after).key_names
    alone = _plains([([], {}), (["alpha_helper", "later"], {"later": 2})])  # called by itself
    assert renamed(
        build(_plains([([], {}), (["alpha_helper"], {"later": 2})])), alone, frozenset({"later"})
    ) == build(alone)


def test_after_an_edit_the_map_is_the_map_made_afresh(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    paths = many_files(ws, 40)
    cache = cache_file(tmp_path / "cache", ws)
    task = "work_0005 and work_0020"
    code_map(ws, paths, 3000, cache=cache, focus_text=task)
    old = time.time() - 60

    def edit(path: str, text: str) -> None:
        (ws / path).write_text(text)
        os.utime(ws / path, (old, old))

    def afresh() -> str:
        return code_map(ws, paths, 3000, focus_text=task).text

    # within a body: the same names, other lines (the kept graph gets the new text)
    edit("pkg5/mod_0005.py", "\n\ndef work_0005(x):\n    return work_0006(x) + 1\n")
    edited = code_map(ws, paths, 3000, cache=cache, focus_text=task)
    assert edited.parsed == 1 and edited.text == afresh()
    assert "pkg5/mod_0005.py:\n   3 | def work_0005(x):" in edited.text
    # a call added: the graph is made again
    edit("pkg5/mod_0005.py", "def work_0005(x):\n    return work_0020(work_0006(x))\n")
    assert code_map(ws, paths, 3000, cache=cache, focus_text=task).text == afresh()
    # a folder's map reads a changed file first: the whole map after it is still made afresh
    edit("pkg3/mod_0003.py", "def work_0003(x):\n    return work_0020(x)\n")
    assert code_map(ws, paths, 3000, cache=cache, under="pkg3").parsed == 1
    again = code_map(ws, paths, 3000, cache=cache, focus_text=task)
    assert again.parsed == 0 and again.text == afresh()


@settings(max_examples=examples(20), deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 2600), st.integers(1, 6))
def test_definitions_come_by_flow_as_one_stable_sort_would_order_them(
    seed: int, count: int, values: int
) -> None:
    from codingagent.codemap.ranking import _by_flow

    rng = random.Random(seed)  # many equal flows: their order is the keys' order
    flow = [rng.randrange(values) / values for _ in range(count)]
    assert list(_by_flow(flow)) == sorted(range(len(flow)), key=flow.__getitem__, reverse=True)
