"""The code map in a prompt (docs/prompts.md, "The code map"): the ``## Code Map`` section of
a first prompt (and of ``show --full``), ranked toward the files the user named and the names
the task mentions, and the map of a folder or file READ_FILE ``map="true"`` asks for.

Its budget: the ``map_tokens`` setting; left unset, it follows the model's window
(:func:`map_tokens`: the one place a window is turned into a map budget): the window a model
endpoint reported before the first prompt was written, else the ``context_tokens`` setting.

A first prompt's map parses files within ``FIRST_MAP_PARSE_MS`` (an estimate of the CPU it
costs, not a clock: :mod:`codingagent.codemap.firstread`), so a tree never seen gets a partial
map, saying so, in well under the 200 ms a first prompt may spend on it; the tags cache keeps
what was read, and each later map reads on (a prompt without a map parses nothing: a turn's
cost does not grow with the tree). A READ_FILE ``map="true"`` parses all its folder.
"""

from __future__ import annotations

from pathlib import Path

from codingagent.codemap.repomap import CodeMap, code_map
from codingagent.codemap.tagcache import Stat, cache_file
from codingagent.secrecy.rules import redacted
from codingagent.state import SessionState
from codingagent.workspace import Listing

DEFAULT_MAP_TOKENS = 2048  # when neither the setting nor the model's window says
MIN_MAP_TOKENS = 1024
MAX_MAP_TOKENS = 8192
CHARS_PER_TOKEN = 4
FOLDER_MAP_CHARS = 40_000  # a READ_FILE map of a folder: about 10,000 tokens
FIRST_MAP_PARSE_MS = 120.0  # estimated CPU a first prompt's map may spend parsing files
HEADING = "## Code Map"
LEAD = (
    "(definitions ranked by how much the rest of the code uses them, and toward the files "
    'named in the task; line numbers as READ_FILE shows them; READ_FILE path="FOLDER" '
    'map="true" maps a folder, symbol="NAME" shows one definition)'
)


def map_tokens(setting: int | None, window: int | None = None) -> int:
    """The code map's budget in tokens: the setting when given (0: no map); else a sixteenth
    of the model's context window (``window`` tokens, when it is known: reported by a model
    endpoint, or the ``context_tokens`` setting), within ``MIN_MAP_TOKENS`` to
    ``MAX_MAP_TOKENS``; else ``DEFAULT_MAP_TOKENS``."""
    if setting is not None:
        return setting
    if window:
        return max(MIN_MAP_TOKENS, min(MAX_MAP_TOKENS, window // 16))
    return DEFAULT_MAP_TOKENS


def map_section(
    root: Path,
    listing: Listing,
    state: SessionState,
    tokens: int,
    cache_dir: Path | None,
) -> str | None:
    """The ``## Code Map`` section of a first prompt (None: nothing to map, or no budget)."""
    if tokens <= 0:
        return None
    made = _map(
        root, listing, state, tokens * CHARS_PER_TOKEN, cache_dir, parse_ms=FIRST_MAP_PARSE_MS
    )
    return f"{HEADING}\n{LEAD}\n{made.text}" if made.text else None


def folder_map(
    root: Path, listing: Listing, state: SessionState, folder: str, cache_dir: Path | None
) -> CodeMap:
    """The map of ``folder`` (``"."``: the whole workspace) for READ_FILE ``map="true"``."""
    return _map(root, listing, state, FOLDER_MAP_CHARS, cache_dir, folder)


def _map(
    root: Path,
    listing: Listing,
    state: SessionState,
    chars: int,
    cache_dir: Path | None,
    under: str = "",
    parse_ms: float | None = None,
) -> CodeMap:
    files = [path for path, _ in listing.entries]
    cache = cache_file(cache_dir, root) if cache_dir is not None else None
    return code_map(
        root,
        files,
        chars,
        focus_files=_focus(files, state),
        focus_text=_task(state),
        cache=cache,
        under=under,
        stats=_stats(listing),
        redact=redacted,
        parse_ms=parse_ms,
    )


def _stats(listing: Listing) -> dict[str, Stat]:
    """The sizes and times the listing's walk stat'ed."""
    times = listing.times
    return {path: (size, times[path]) for path, size in listing.entries if path in times}


def _focus(files: list[str], state: SessionState) -> list[str]:
    """The files the user named, and those in the folders they named."""
    named = set(state.named_files)
    return [p for p in files if p in named or any(p.startswith(f"{n}/") for n in named)]


def _task(state: SessionState) -> str:
    return " ".join([state.task, *state.follow_ups])
