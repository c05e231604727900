"""A clock the test moves by hand, for code that takes one (``clock=``): timing logic is tested
without sleeping and without depending on how busy the machine is."""

from __future__ import annotations


class ManualClock:
    """Seconds that pass only when :meth:`advance` says so; a drop-in for ``time.monotonic``."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
