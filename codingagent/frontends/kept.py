"""Session options: the flags a session was started with are the session's (docs/prompts.md).

``start --protocol every --sandbox none --model local`` keeps those flags in the session's
state; ``resume``, ``step``, ``answer``, ``undo`` and ``ui`` use them unless a flag given
there says otherwise, and then that flag is kept instead. So the Ctrl-C hint ("continue with:
codingagent resume ID") needs no flags. ``--trust-settings`` is never kept: it is a decision
about the workspace's files as they are now. ``--no-model`` drops a kept model.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from codingagent.records.store import SessionStore
from codingagent.settings import load_settings
from codingagent.state import SessionState

NOT_KEPT = frozenset({"trust_settings"})
MODEL_KEYS = ("model_name", "base_url", "model_id", "api_key_env", "model_timeout")
# Option keys whose flag is spelled otherwise.
FLAGS = {
    "command_timeout": "timeout",
    "clipboard": "copy",
    "clipboard_watch": "clipboard",
    "mask_secrets": "mask",
    "model_name": "model",
}


def given(flags: dict[str, Any]) -> dict[str, Any]:
    """The flags actually given (click passes None for the others), those a session keeps."""
    return {key: value for key, value in flags.items() if value is not None and key not in NOT_KEPT}


def kept_flags(
    root: Path, session: str, flags: dict[str, Any], model: bool = False
) -> dict[str, Any]:
    """``flags`` over the options SESSION (in the run directory ``root``) keeps; the flags
    given now are kept (see :func:`keep`). Without ``model`` (a command that takes no reply
    from a model: step, answer, undo, the page) a kept model is left out."""
    store = SessionStore(root)
    merged = keep(store, store.resolve(session), flags)
    return merged if model else {k: v for k, v in merged.items() if k not in MODEL_KEYS}


def keep(store: SessionStore, session_id: str, flags: dict[str, Any]) -> dict[str, Any]:
    """``flags`` with the session's kept options under them; the flags given now are kept.

    Takes the session's lock for the moment it saves, if it has anything new to save: a
    session that another process watches is then refused, as the loop would refuse it.
    """
    flags = dict(flags)
    drop_model = bool(flags.pop("no_model", None))
    new = given(flags)
    state = store.load(session_id)
    kept = dict(state.options)
    if drop_model or any(key in new for key in ("model_name", "base_url")):
        kept = {key: value for key, value in kept.items() if key not in MODEL_KEYS}
    if kept | new != state.options:
        with store.hold(session_id):
            state = store.load(session_id)
            state.options = kept | new
            store.save(state)
    return {**flags, **kept, **new}


def described(state: SessionState) -> str:
    """The options a session keeps, as flags: ``--protocol every --sandbox none``."""
    words = []
    for key, value in sorted(state.options.items()):
        flag = FLAGS.get(key, key).replace("_", "-")
        if isinstance(value, bool):
            words.append(f"--{flag}" if value else f"--no-{flag}")
        else:
            shown = f"{value:g}" if isinstance(value, float) else shlex.quote(str(value))
            words.append(f"--{flag} {shown}")
    return " ".join(words) or "none"


def in_force(root: Path, state: SessionState) -> list[str]:
    """``codingagent show --settings``: the options the session keeps, then each setting
    that holds for its next run and where it comes from (default, a file, the environment,
    the session's options)."""
    options = {key: value for key, value in state.options.items() if key not in MODEL_KEYS}
    settings = load_settings(root, options, workspaces=[Path(state.workspace)])
    origins = settings.origins
    lines = [f"Options kept with session {state.session_id}: {described(state)}"]
    for key, value in settings.model_dump(exclude={"models"}).items():
        where = origins.get(key, "default")
        where = "session options" if where == "command line" else where
        lines.append(f"  {key} = {value!r} ({where})")
    return lines
