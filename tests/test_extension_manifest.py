"""The extension as shipped (docs/relay.md, "The extension and the chats"): it asks for no
permission beyond the chats, the loopback addresses and what the popup needs; every file it
names is there and ships in the package; every chat it may enter has an adapter; the docs
explain each permission."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent
EXTENSION = ROOT / "codingagent" / "frontends" / "extension"
MANIFEST = json.loads((EXTENSION / "manifest.json").read_text())

CHATS = {
    "https://chatgpt.com/*",
    "https://chat.openai.com/*",
    "https://claude.ai/*",
    "https://gemini.google.com/*",
    "https://aistudio.google.com/*",
    "https://chat.deepseek.com/*",
    "https://chat.mistral.ai/*",
}
LOOPBACK = {"http://127.0.0.1/*", "http://localhost/*"}


def test_the_manifest_asks_only_for_the_chats_loopback_and_what_the_popup_needs() -> None:
    assert MANIFEST["manifest_version"] == 3
    assert set(MANIFEST["permissions"]) == {"storage", "scripting", "activeTab"}
    assert set(MANIFEST["host_permissions"]) == CHATS | LOOPBACK
    for key in ("optional_permissions", "optional_host_permissions", "content_scripts"):
        assert key not in MANIFEST  # nothing more later, nothing injected into unattached tabs
    assert "externally_connectable" not in MANIFEST  # no web page can message the extension


def test_one_manifest_serves_chrome_and_firefox() -> None:
    """Chrome runs the background as a service worker, Firefox as scripts (an event page);
    both (121 and later) accept the pair. Firefox needs an add-on id, and 128 for
    scripting.executeScript into the page's world (page/copyhook.js)."""
    background = MANIFEST["background"]
    assert background["service_worker"] == "background.js"
    assert background["scripts"] == ["background.js"]
    gecko = MANIFEST["browser_specific_settings"]["gecko"]
    assert gecko["id"] == "relay@codingagent.dev"
    assert int(gecko["strict_min_version"].split(".")[0]) >= 128
    assert int(MANIFEST["minimum_chrome_version"]) >= 121


def test_every_chat_domain_has_its_adapter() -> None:
    hosts: set[str] = set()
    for adapter in (EXTENSION / "adapters").glob("*.js"):
        found = re.search(r"hosts: \[([^\]]*)\]", adapter.read_text())
        if found:
            hosts |= set(re.findall(r'"([^"]+)"', found.group(1)))
    assert {f"https://{host}/*" for host in hosts} == CHATS


def test_every_file_the_extension_names_is_there_and_in_order() -> None:
    named = [MANIFEST["background"]["service_worker"], MANIFEST["action"]["default_popup"]]
    named += MANIFEST["icons"].values()
    background = (EXTENSION / "background.js").read_text()
    listed = re.search(r"CONTENT_FILES = \[(.*?)\];", background, re.S)
    assert listed is not None
    content = re.findall(r'"([^"]+)"', listed.group(1))
    named += [*content, "page/copyhook.js", "popup/popup.js", "popup/popup.css"]
    for name in named:
        assert (EXTENSION / name).is_file(), name
    adapters = sorted(f"adapters/{p.name}" for p in (EXTENSION / "adapters").glob("*.js"))
    injected = [name for name in content if name.startswith("adapters/")]
    assert sorted(injected) == adapters  # every adapter is injected
    # base first (the others register with it), generic last (the fallback), the script last
    assert content[0] == "adapters/base.js"
    assert injected[-1] == "adapters/generic.js" and content[-1] == "content.js"
    # discover.js (answers on a page no adapter knows) before generic.js, which uses it
    assert injected.index("adapters/discover.js") < injected.index("adapters/generic.js")


def test_every_file_of_the_extension_ships_in_the_package() -> None:
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = setup["package-data"]["codingagent.frontends"]
    for path in EXTENSION.rglob("*"):
        if path.is_file():
            name = str(path.relative_to(EXTENSION.parent))
            assert any(fnmatch.fnmatch(name, pattern) for pattern in globs), name


def test_the_docs_justify_each_permission_and_date_each_adapter() -> None:
    docs = (ROOT / "docs" / "relay.md").read_text()
    section = docs[docs.index("## The extension and the chats") :]
    for permission in MANIFEST["permissions"]:
        assert f"`{permission}`" in section, permission
    for host in CHATS | LOOPBACK:
        assert host.split("//")[1].split("/")[0] in section, host
    for name in ("ChatGPT", "Claude", "Gemini", "AI Studio", "DeepSeek", "Le Chat", "Open WebUI"):
        assert re.search(rf"\| {name} .*\| 2026-11-26 \|", section), name
