"""Where a traceback or a test run points: the frames of a task's pasted traceback and of a
check's failing output (docs/prompts.md, "The code the task points at"). Pure: text in,
frames out.

Read, in the order they appear:

- Python tracebacks: ``File "src/app.py", line 12, in parse``;
- pytest's long form: ``src/app.py:12: in parse`` (and ``src/app.py:12: AssertionError``,
  where the error was raised);
- pytest's short summary: ``FAILED tests/test_app.py::TestParse::test_empty - ...`` (and
  ``ERROR``), the test named by its place;
- unittest: ``FAIL: test_empty (tests.test_app.TestParse.test_empty)`` (and ``ERROR:``);
- JavaScript stack frames: ``at parse (/home/me/app/src/app.js:12:5)``,
  ``at /home/me/app/src/app.js:12:5``, ``at async load (file:///app/src/load.mjs:3:9)``;
- a source path with a line anywhere else: ``see src/app.py:12``.

Lines of a test run that are not frames are never read as frames (:func:`not_frames`):
pytest's ``warnings summary`` section and its ``Captured stdout/stderr/log`` and ``live
log`` sections (to the next section's rule or test's header), a warning as Python prints one
(``tests/__init__.py:36: DeprecationWarning: ...``), and a log line in the format pytest and
``logging`` write (``WARNING  app.cache:cache.py:40 slow``).

A frame's path is as the text wrote it (absolute, relative, inside a ``site-packages``);
:meth:`codingagent.prompt.pointing.definitions.Tree.resolve` finds the workspace file it
names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SOURCE = r"[\w./\\@~+-]+\.(?:py|pyi|js|mjs|cjs|jsx|ts|tsx|go|rs|java|rb|c|h|cc|cpp|hpp)"
_PYTHON = re.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?')
_PYTEST = re.compile(rf"^\s*({_SOURCE}):(\d+): (?:in ([\w<>.]+))?", re.M)
_NODE_ID = re.compile(rf"^(?:FAILED|ERROR)\s+({_SOURCE})((?:::[\w\[\]./-]+)+)", re.M)
_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", re.M)
_JS = re.compile(
    rf"\bat (?:async )?(?:(new )?([\w$.<>\[\] ]+?) \()?(?:file://)?({_SOURCE}):(\d+)(?::\d+)?\)?"
)
_ANY = re.compile(rf"(?<![\w/.:])({_SOURCE}):(\d+)\b")
_RULE = re.compile(r"^(?:=+ .+ =+|_{3,} .+ _{3,}|-{3,} .+ -{3,})\s*$")
_NOT_FRAMES = re.compile(
    r"^=+ warnings summary =+$|^-+ (?:Captured (?:stdout|stderr|log)|live log) [\w ]*-+$"
)
_WARNING = re.compile(rf"{_SOURCE}:\d+: \w*Warning\b")
_RAISES = re.compile(
    r"\b(?:raise|throw)\b|\bnew\s+[\w$.]*(?:Error|Exception)\s*\(|[\w$](?:Error|Exception)\s*\("
)
_LOG = re.compile(rf"^\s*(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\b[ :]+\S*?:?{_SOURCE}:\d+\b")


@dataclass(frozen=True)
class Frame:
    path: str  # as written
    line: int | None  # None: the frame names a definition only (a test's id)
    name: str | None  # the function, method or test it is in, when said ("Class.test")
    innermost_first: bool = False  # a JavaScript stack: the deepest frame comes first


def frames(text: str | None) -> list[Frame]:
    """The frames ``text`` names, in the order it names them, once each."""
    if not text:
        return []
    text = not_frames(text)
    found: list[tuple[int, Frame]] = []
    for match in _PYTHON.finditer(text):
        found.append((match.start(), Frame(match[1], int(match[2]), _name(match[3]))))
    for match in _PYTEST.finditer(text):
        found.append((match.start(1), Frame(match[1], int(match[2]), _name(match[3]))))
    for match in _NODE_ID.finditer(text):
        parts = [p.split("[")[0] for p in match[2].split("::") if p]
        found.append((match.start(), Frame(match[1], None, ".".join(parts) or None)))
    for match in _UNITTEST.finditer(text):
        module, _, rest = _split_module(match[2], match[1])
        found.append((match.start(), Frame(module, None, rest)))
    for match in _JS.finditer(text):
        name = _js_name(match[2])
        found.append((match.start(), Frame(match[3], int(match[4]), name, True)))
    seen_at = {(frame.path, frame.line) for _, frame in found}
    for match in _ANY.finditer(text):
        frame = Frame(match[1], int(match[2]), None)
        if (frame.path, frame.line) not in seen_at:
            found.append((match.start(), frame))
    found.sort(key=lambda pair: pair[0])
    return list(dict.fromkeys(frame for _, frame in found))


def not_frames(text: str) -> str:
    """``text`` with the lines that are not frames (see the module doc) left empty, so what
    is read from the rest keeps its place."""
    lines = text.split("\n")
    skipping = False
    for index, line in enumerate(lines):
        bare = line.rstrip()
        if _NOT_FRAMES.match(bare):
            skipping = True
        elif _RULE.match(bare):
            skipping = False
        if skipping or _WARNING.search(line) or _LOG.match(line):
            lines[index] = ""
    return "\n".join(lines)


def raises(line: str) -> bool:
    """Whether a line of code raises or builds an error (``raise``, ``throw``, ``new
    ParseError(``, ``makeError(``): where an error helper stands in a trace."""
    return bool(_RAISES.search(line))


def _name(name: str | None) -> str | None:
    if not name or name.startswith("<"):  # <module>, <listcomp>, <lambda>
        return None
    return name


def _js_name(name: str | None) -> str | None:
    if not name:
        return None
    name = name.strip().removeprefix("Object.").removeprefix("Module.")
    name = name.split(" [as ")[0]
    if not name or "<" in name or name in ("Object", "Module", "new"):
        return None
    return name


def _split_module(dotted: str, test: str) -> tuple[str, str, str]:
    """unittest's ``tests.test_app.TestParse.test_empty``: the module's path and the test's
    dotted name in it (classes start with a capital letter)."""
    parts = dotted.split(".")
    cut = next((i for i, part in enumerate(parts) if part[:1].isupper()), len(parts))
    module = "/".join(parts[:cut]) + ".py"
    inner = parts[cut:]
    if not inner or inner[-1] != test:
        inner.append(test)
    return module, "", ".".join(inner)
