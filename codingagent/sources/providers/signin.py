"""GitHub Copilot sign-in: the OAuth device flow (``codingagent login copilot``), the token it
yields kept in the user's config folder (mode 0600, never in a run folder), and its exchange
for the short-lived chat token the Copilot API takes.

The device flow, as GitHub documents it: ``POST {github}/login/device/code`` gives a user code
and a URL; the user opens the URL and types the code; meanwhile we ``POST
{github}/login/oauth/access_token`` every ``interval`` seconds (GitHub's figure, raised when it
answers ``slow_down``) until it gives the token, refuses, or the code expires."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from codingagent.fsio import atomic_write
from codingagent.settings import user_settings_path
from codingagent.sources.providers.wire import ChatError, reason

GITHUB = "https://github.com"
GITHUB_API = "https://api.github.com"
# The OAuth app of GitHub's Copilot editor plugins: Copilot's token endpoint accepts only the
# tokens of its own apps, so every third-party Copilot client signs in as this one.
CLIENT_ID = "Iv1.b507a08c87ecfe98"
GRANT = "urn:ietf:params:oauth:grant-type:device_code"
SUBSCRIPTION = "GitHub Copilot needs a Copilot subscription on the account you sign in with"


@dataclass(frozen=True)
class SignIn:
    """What ``login copilot`` stores: the GitHub token and where it is valid."""

    oauth_token: str
    github_url: str = GITHUB
    api_url: str = GITHUB_API


def token_path() -> Path:
    """The stored sign-in: in the user's config folder, beside their own settings file."""
    return user_settings_path().parent / "copilot.json"


def stored() -> SignIn | None:
    try:
        data = json.loads(token_path().read_text(encoding="utf-8"))
        return SignIn(str(data["oauth_token"]), str(data["github_url"]), str(data["api_url"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ChatError(
            f"{token_path()} cannot be read ({reason(e)}): run codingagent login copilot again"
        ) from None


def store(sign_in: SignIn) -> Path:
    """Keep ``sign_in`` in :func:`token_path`, readable by the user alone (0600)."""
    path = token_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(path, json.dumps(vars(sign_in)), mode=0o600)
    return path


def forget() -> bool:
    """Remove the stored sign-in; whether there was one."""
    try:
        os.unlink(token_path())
    except FileNotFoundError:
        return False
    return True


def device_flow(
    http: httpx.Client,
    show: Callable[[str, str], None],
    github_url: str = GITHUB,
    api_url: str = GITHUB_API,
    sleep: Callable[[float], None] = time.sleep,
) -> SignIn:
    """Run the device flow: ``show(url, code)`` tells the user where to go and what to type;
    returns the sign-in once they have, or raises ChatError (refused, expired, no answer)."""
    github_url = github_url.rstrip("/")
    asked = _post(http, f"{github_url}/login/device/code", {"scope": "read:user"})
    try:
        device, code, url = asked["device_code"], asked["user_code"], asked["verification_uri"]
        interval = float(asked.get("interval", 5))
        left = float(asked.get("expires_in", 900))
    except (KeyError, TypeError, ValueError):
        raise ChatError(f"{github_url} answered the device-code request with {asked}") from None
    show(url, code)
    while left > 0:
        sleep(interval)
        left -= interval
        polled = _post(
            http,
            f"{github_url}/login/oauth/access_token",
            {"device_code": device, "grant_type": GRANT},
        )
        if polled.get("access_token"):
            return SignIn(str(polled["access_token"]), github_url, api_url.rstrip("/"))
        error = polled.get("error")
        if error == "slow_down":  # GitHub sends the interval to keep from now on
            interval = float(polled.get("interval", interval + 5))
        elif error != "authorization_pending":
            said = polled.get("error_description") or error or polled
            raise ChatError(f"GitHub did not sign you in: {said}")
    raise ChatError("The code expired before it was entered: run codingagent login copilot again")


def chat_token(http: httpx.Client, sign_in: SignIn) -> tuple[str, float]:
    """A fresh Copilot chat token for ``sign_in`` and when it expires (epoch seconds)."""
    url = f"{sign_in.api_url}/copilot_internal/v2/token"
    try:
        response = http.get(
            url,
            headers={"Authorization": f"token {sign_in.oauth_token}", "Accept": "application/json"},
        )
    except httpx.HTTPError as e:
        raise ChatError(f"Cannot get a Copilot token from {url} ({reason(e)})") from None
    if response.status_code in (401, 403, 404):
        raise ChatError(
            f"GitHub refused the Copilot sign-in (HTTP {response.status_code}): run codingagent "
            f"login copilot again. {SUBSCRIPTION}"
        )
    try:
        response.raise_for_status()
        body = response.json()
        return str(body["token"]), float(body.get("expires_at", time.time() + 600))
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as e:
        raise ChatError(f"{url} gave no Copilot token ({reason(e)})") from None


def _post(http: httpx.Client, url: str, fields: dict[str, str]) -> dict[str, Any]:
    try:
        response = http.post(
            url, data={"client_id": CLIENT_ID, **fields}, headers={"Accept": "application/json"}
        )
        response.raise_for_status()
        body = response.json()
    except (httpx.HTTPError, ValueError) as e:
        raise ChatError(f"The sign-in request to {url} failed: {reason(e)}") from None
    if not isinstance(body, dict):
        raise ChatError(f"{url} answered {body!r}, not a JSON object")
    return body
