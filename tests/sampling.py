"""What the fast tier (``pytest -m "not slow"``, for every change: it must stay quick) samples
of what the whole suite (``pytest``, as ``.ci/run`` runs it) runs in full (docs/architecture.md,
"Tests"): a fifth of a hypothesis test's examples, and some of the cases of a sweep whose cases
each cost a session or a process. ``tests/conftest.py`` says which tier runs before the test
files are imported."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

FAST_SHARE = 5  # the fast tier tries one example in this many
FAST_DEFAULT = 20  # examples of a test that names no number, in the fast tier (else 100)

fast = False  # set by tests/conftest.py: the run selects the fast tier


def examples(n: int) -> int:
    """``n`` examples, or the fast tier's share of them (at least 10)."""
    return max(10, n // FAST_SHARE) if fast else n


def sampled(cases: Iterable[Any], every: int = 3, first: int = 0) -> list[Any]:
    """``cases`` as parameters of a test: every ``every``-th of them (from the ``first``) runs
    in both tiers, the others in the whole suite only (marked slow), so the fast tier keeps a
    sample of a sweep whose cases each cost a session or a process."""
    return [
        case
        if n >= first and (n - first) % every == 0
        else pytest.param(*_values(case), marks=pytest.mark.slow)
        for n, case in enumerate(cases)
    ]


def _values(case: Any) -> tuple[Any, ...]:
    return case if isinstance(case, tuple) else (case,)
