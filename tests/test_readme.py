"""The README is a front door (issue 47): at most 250 lines, exactly two set-up commands (one
installs and runs the main job, one installs and runs the tests), and every relative link in it
and in docs/*.md resolves to a file that exists and, for a ``#anchor``, to a heading of that
file, by GitHub's anchor rules."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

# a backtick fence's info string holds no backtick (CommonMark): "```` ``` ````" in prose is none
FENCE = re.compile(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def _prose(text: str, *, spans: bool = False) -> list[str]:
    """The lines outside fenced and indented code blocks (an indented line after a blank
    line, outside a list, is code), with inline code spans blanked unless ``spans``."""
    lines: list[str] = []
    fence = ""
    previous_blank = True
    in_indented = False
    for line in text.splitlines():
        opened = FENCE.match(line)
        if fence:
            closing = (
                opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence)
            )
            if closing and not line.strip().lstrip(fence[0]):
                fence = ""
            lines.append("")
            continue
        if opened:
            fence = opened.group(1)
            lines.append("")
            continue
        indented = line.startswith("    ") or line.startswith("\t")
        if indented and (previous_blank or in_indented) and not _in_list(lines):
            in_indented = True
            lines.append("")
            continue
        if line.strip():
            in_indented = False
        previous_blank = not line.strip()
        lines.append(line if spans else CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line))
    return lines


def _in_list(lines: list[str]) -> bool:
    """Whether the last paragraph before here is a list item (its continuation lines are
    indented, and so is code nested in it, which the fences catch)."""
    for line in reversed(lines):
        if not line.strip():
            continue
        return bool(re.match(r"^\s*(?:[-*+]|\d+[.)])\s", line)) or line.startswith("  ")
    return False


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading's text: the text as rendered (links and emphasis
    dropped), lowercased, every character but letters, digits, spaces, hyphens and
    underscores dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).lower()
    kept = "".join(
        c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN" or c.isalnum()
    )
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor in a page; a repeated one gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in _prose(text, spans=True):
        match = HEADING.match(line)
        if not match:
            continue
        base = anchor(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def _links(page: Path) -> list[str]:
    return [
        target
        for line in _prose(page.read_text(encoding="utf-8"))
        for target in LINK.findall(line)
        if target and not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)
    ]


def test_the_readme_has_at_most_250_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def _setup_commands() -> list[str]:
    """The command lines of the README's "Set up" section (indented or fenced code)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("\n## Set up\n") :]
    section = section[: section.index("\n## ", 1)]
    prose = _prose(section)
    return [
        raw.strip()
        for raw, shown in zip(section.splitlines(), prose, strict=True)
        if raw.strip() and not shown.strip() and not FENCE.match(raw)
    ]


def test_the_readme_has_exactly_two_setup_commands():
    commands = _setup_commands()
    assert len(commands) == 2, commands
    run, tests = commands
    assert run.startswith("pip install -e . && codingagent start "), run
    assert tests.startswith("pip install -e '.[test]' && python -m pytest"), tests
    # and no other install command anywhere in the README
    installs = [
        line
        for line in README.read_text(encoding="utf-8").splitlines()
        if "pip install" in line and line.startswith("    ")
    ]
    assert [line.strip() for line in installs] == commands


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    broken = []
    for target in _links(page):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif (
            fragment
            and file.suffix == ".md"
            and fragment.lower() not in anchors(file.read_text(encoding="utf-8"))
        ):
            broken.append(f"{target}: no heading #{fragment} in {file.name}")
    assert broken == []


def test_the_link_checker_reads_github_anchors():
    assert anchor("4.5 Commands in a code block") == "45-commands-in-a-code-block"
    assert anchor("The session as a patch: `codingagent diff`") == (
        "the-session-as-a-patch-codingagent-diff"
    )
    assert anchor("Beside the page: `codingagent ui --relay`") == (
        "beside-the-page-codingagent-ui---relay"
    )
    assert anchor("7. The web page") == "7-the-web-page"
    page = "# T\n\n## Notes\n\n```\n## Not a heading\n```\n\n    # nor this\n\n## Notes\n"
    assert anchors(page) == {"t", "notes", "notes-1"}
    assert LINK.findall("see [a](b.md#c), ![i](d.png) and `[e](f.md)`") == [
        "b.md#c",
        "d.png",
        "f.md",
    ]
    assert _links_in("see [a](b.md#c) and `[e](f.md)`") == ["b.md#c"]


def _links_in(text: str) -> list[str]:
    return [target for line in _prose(text) for target in LINK.findall(line)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_no_page_holds_a_merge_conflict(page):
    """A merge left half done shows as git's markers (a SEARCH/REPLACE block's are the
    protocol's own, and stay)."""
    marker = re.compile(r"^(<<<<<<< (?!SEARCH$)|>>>>>>> (?!REPLACE$)|=======$)", re.M)
    found = [m.group() for m in marker.finditer(page.read_text(encoding="utf-8"))]
    fences = [m for m in found if m == "======="]
    assert not [m for m in found if m != "======="], (page.name, found)
    assert len(fences) <= page.read_text(encoding="utf-8").count("<<<<<<< SEARCH"), page.name
