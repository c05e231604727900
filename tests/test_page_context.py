"""The page's share of issue 35: the New session form names files (as ``start --file`` does),
and the session's changes download as a patch (as ``codingagent diff`` prints it). Real
server on 127.0.0.1, real Chromium."""

from __future__ import annotations

import subprocess

import httpx
from test_ui import browser, serve, tab  # noqa: F401 (fixtures)

WAIT_MS = 20_000


def test_the_new_session_form_names_files_and_the_diff_downloads(serve, tab, tmp_path):  # noqa: F811
    project = tmp_path / "run" / "project"
    project.mkdir(parents=True)
    (project / "hello.py").write_text("print('hi')\n")
    (project / "other.py").write_text("x = 1\n")
    page = serve(commands="allow")
    tab.goto(page.url)
    tab.fill("#task", "Make the greeting friendlier")
    tab.fill("#workspace", "project")
    tab.fill("#files", "hello.py")
    tab.click("#start")
    tab.wait_for_selector("#prompt-size:has-text('Prompt 1')")
    (state,) = (tmp_path / "run" / "sessions").glob("*.json")
    prompt = page.store.outbox_path(state.stem, 1).read_text()
    assert "--- hello.py ---\n   1 | print('hi')\n--- end hello.py ---" in prompt
    assert "--- other.py ---" not in prompt
    tab.fill("#reply", "[RUN_COMMAND]\nsed -i s/hi/hey/ hello.py\n[/RUN_COMMAND]\n")
    tab.click("#apply")
    tab.wait_for_selector("#prompt-size:has-text('Prompt 2')")
    with tab.expect_download(timeout=WAIT_MS) as download:
        tab.click("#download-diff")
    saved = tmp_path / "saved.patch"
    download.value.save_as(saved)
    assert download.value.suggested_filename == f"{state.stem}.patch"
    text = saved.read_text()
    assert "-print('hi')\n+print('hey')\n" in text
    one_turn = httpx.get(f"{page.url}api/sessions/{state.stem}/diff?turn=1")
    assert one_turn.text == text
    subprocess.run(["patch", "-R", "-p1", "-i", str(saved)], cwd=project, check=True)
    assert (project / "hello.py").read_text() == "print('hi')\n"
    # a name that matches nothing makes no session, and says the nearest
    refused = httpx.post(
        f"{page.url}api/sessions", json={"task": "t", "workspace": "project", "files": "helo.py"}
    )
    assert refused.status_code == 400
    assert "matches 'helo.py' (nearest: hello.py" in refused.json()["error"]
    assert len(list((tmp_path / "run" / "sessions").glob("*.json"))) == 1
    assert httpx.get(f"{page.url}api/sessions/{state.stem}/diff?turn=x").status_code == 400
