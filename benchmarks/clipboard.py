"""Measure the clipboard loop: how soon a copied reply is applied, and what an idle watch costs.

    python benchmarks/clipboard.py            # about three minutes
    python benchmarks/clipboard.py --quick    # half a minute, coarse: CPU time is in 10 ms ticks

Runs on a private X server (Xvfb, with xclip as the clipboard tool; Linux), never on your
desktop's clipboard. Prints one markdown table; every figure is the median of several runs.

* reply-to-next-prompt latency: from the moment a reply is on the clipboard (``xclip`` has taken
  it) to the moment the next prompt is, with ``codingagent start --clipboard`` in a subprocess.
  Told of each copy by X11 (XFixes), the loop reads at once; polling, it waits up to the
  interval (half of it on average).
* idle CPU: the agent's CPU time (its own and its ``xclip -o`` children's) plus that of the xclip
  process serving the prompt, over a window with nothing copied, as % of one core. The inbox-only
  watch is the baseline. In-process, the loop told of changes (now) against the loop polling
  every 0.5 s (before), with the clipboard reads each made in the window; the sweep measures the
  poll alone at other intervals.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the tests' private X server

import xserver  # type: ignore[import-not-found]  # noqa: E402

from codingagent.records.store import SessionStore  # noqa: E402
from codingagent.session.lifecycle import start_session  # noqa: E402
from codingagent.session.seams import Prompt  # noqa: E402
from codingagent.sources import pasteboard  # noqa: E402
from codingagent.sources.clipboard import ClipboardSource  # noqa: E402
from codingagent.sources.clipboard_events import POLL_INTERVAL, Polling, open_changes  # noqa: E402
from codingagent.sources.inbox import InboxSource  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, children: bool = True) -> float:
    """CPU time of ``pid`` so far (with its reaped children's), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    used = fields[11:15] if children else fields[11:13]  # utime stime cutime cstime
    return sum(int(t) for t in used) / TICKS


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.01)


@contextmanager
def agent(root: Path, *flags: str) -> Iterator[subprocess.Popen]:
    command = [sys.executable, "-m", "codingagent", "start", "Write files", *flags]
    process = subprocess.Popen(
        [*command, "--commands", "allow", "--sandbox", "none", "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        wait_for(lambda: any((root / "outbox").glob("*.txt")))
        yield process
    finally:
        process.terminate()
        process.wait()


def on_clipboard(sequence: int) -> Callable[[], bool]:
    return lambda: f"\nSequence: {sequence}\n" in xclip_head()


def xclip_head() -> str:
    return xserver.clipboard_text()[:200]


def latencies(turns: int) -> list[float]:
    """Seconds from a reply on the clipboard to the next prompt on it, one per turn."""
    with tempfile.TemporaryDirectory() as folder, agent(Path(folder), "--clipboard"):
        wait_for(on_clipboard(1))
        session = xserver.clipboard_text().split("Session: ", 1)[1][:8]  # the reply names it
        samples = []
        for n in range(1, turns + 1):
            time.sleep(0.3)  # a user's pause: the poll is anywhere in its cycle
            xserver.copy(
                f'Session: {session}\nI add a file.\n\n[CREATE_FILE path="f{n}.txt"]\n{n}\n'
                "[/CREATE_FILE]\n"
            )
            copied = time.perf_counter()
            wait_for(on_clipboard(n + 1))
            samples.append(time.perf_counter() - copied)
        return samples


def idle_cpu(display: str, window: float, runs: int, *flags: str) -> float:
    """% of one core the agent (and the xclip serving its prompt) uses while nothing happens."""
    with tempfile.TemporaryDirectory() as folder, agent(Path(folder), *flags) as process:
        time.sleep(1.0)  # start-up is not idling
        shares = []
        for _ in range(runs):
            servers = xserver.xclip_servers(display)
            before = cpu_seconds(process.pid) + sum(cpu_seconds(p, False) for p in servers)
            started = time.perf_counter()
            time.sleep(window)
            after = cpu_seconds(process.pid) + sum(cpu_seconds(p, False) for p in servers)
            shares.append((after - before) / (time.perf_counter() - started) * 100)
        return statistics.median(shares)


def loop_cost(interval: float, window: float, notified: bool) -> tuple[float, float]:
    """% of one core a ClipboardSource uses in this process, idle (the inbox watch included;
    xclip serving the prompt excluded), and the clipboard reads it made per minute: told of
    changes (``notified``) or polling at ``interval``."""
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore(Path(folder))
        state, outbox = start_session(store, "t")
        xserver.copy(outbox.read_text())
        prompt = Prompt(state.session_id, 1, outbox, outbox.read_text())
        stop = threading.Event()
        reads = [0]

        def read() -> tuple[str | None, str | None]:
            reads[0] += 1
            return pasteboard.paste()

        changes = open_changes if notified else (lambda tool, every: Polling(every))
        inbox = InboxSource(store.inbox, 10**6)
        with ClipboardSource(inbox, interval=interval, read=read, changes=changes) as source:
            watch = threading.Thread(target=source.next_reply, args=(prompt, stop))
            watch.start()
            time.sleep(max(interval * 2, 1.0))
            before, started, reads_before = own_cpu(), time.perf_counter(), reads[0]
            time.sleep(window)
            used = own_cpu() - before
            elapsed = time.perf_counter() - started
            made = reads[0] - reads_before
            stop.set()
            watch.join()
        return used / elapsed * 100, made / elapsed * 60


def statistics_of(runs: int, measure: Callable[[], tuple[float, float]]) -> tuple[float, float]:
    """The median of each figure over ``runs`` runs of ``measure``."""
    samples = [measure() for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def own_cpu() -> float:
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="fewer turns, shorter windows")
    size.add_argument("--smoke", action="store_true", help="seconds: every measure, once, briefly")
    args = parser.parse_args(argv)
    if not xserver.available() or not sys.platform.startswith("linux"):
        print(f"skipped: {xserver.MISSING}, on Linux", file=sys.stderr)
        return 1
    turns, window, runs = (15, 10.0, 5)
    if args.quick:
        turns, window, runs = (5, 2.0, 3)
    if args.smoke:
        turns, window, runs = (2, 0.5, 1)
    with xserver.xvfb() as display:
        os.environ["DISPLAY"] = display
        os.environ.pop("WAYLAND_DISPLAY", None)
        print("running latency ...", file=sys.stderr, flush=True)
        latency = latencies(turns)
        print("running idle CPU ...", file=sys.stderr, flush=True)
        clip_idle = idle_cpu(display, window, runs, "--clipboard")
        inbox_idle = idle_cpu(display, window, runs)
        print("running the loop in-process, told of changes and polling ...", file=sys.stderr)
        notified = statistics_of(runs, lambda: loop_cost(POLL_INTERVAL, window, True))
        polled = statistics_of(runs, lambda: loop_cost(POLL_INTERVAL, window, False))
        print("running poll interval sweep ...", file=sys.stderr, flush=True)
        sweep = {i: loop_cost(i, window, False)[0] for i in (0.1, 0.25, 1.0)}
    print(f"\nmachine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {sys.platform}")
    print(f"clipboard loop: told of changes by XFixes; polling where none, every {POLL_INTERVAL} s")
    print(f"{turns} turns, {runs} idle windows of {window} s\n")
    print("| measure | median | target | met |")
    print("|---|---|---|---|")
    median = statistics.median(latency)
    rows = [
        (
            "reply-to-next-prompt latency, clipboard loop",
            f"{median * 1000:.0f} ms (max {max(latency) * 1000:.0f} ms)",
            "about 1 s",
            median <= 1.0,
        ),
        (
            "idle CPU, clipboard loop (agent + xclip)",
            f"{clip_idle:.2f} %",
            "< 0.2 %",
            clip_idle < 0.2,
        ),
        ("idle CPU, inbox-only watch (baseline)", f"{inbox_idle:.2f} %", "", None),
        (
            "idle CPU of the loop in-process, told of changes by XFixes (now)",
            f"{notified[0]:.3f} % ({notified[1]:.0f} reads/min)",
            "< 0.2 %",
            notified[0] < 0.2,
        ),
        (
            f"idle CPU of the loop in-process, polling every {POLL_INTERVAL} s (before)",
            f"{polled[0]:.3f} % ({polled[1]:.0f} reads/min)",
            "",
            None,
        ),
    ]
    rows += [
        (
            f"idle CPU of the poll alone at {interval} s (mean wait {interval * 500:.0f} ms)",
            f"{share:.2f} %",
            "< 1 %",
            share < 1,
        )
        for interval, share in sweep.items()
    ]
    for measure, value, target, met in rows:
        verdict = "" if met is None else ("yes" if met else "**no**")
        print(f"| {measure} | {value} | {target} | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
