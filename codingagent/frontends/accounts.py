"""``codingagent login copilot`` and ``logout copilot``: signing in to a provider that needs
more than a key in a variable (docs/models.md, "GitHub Copilot")."""

from __future__ import annotations

import sys

import click

from codingagent.frontends.console import say
from codingagent.frontends.exits import Exit

PROVIDERS = click.Choice(["copilot"])


@click.command()
@click.argument("provider", type=PROVIDERS)
@click.option(
    "--github-url",
    default="https://github.com",
    metavar="URL",
    show_default=True,
    help="GitHub's address (GitHub Enterprise: your server's).",
)
@click.option(
    "--api-url",
    default="https://api.github.com",
    metavar="URL",
    show_default=True,
    help="GitHub's API address (GitHub Enterprise: https://HOST/api/v3).",
)
def login(provider: str, github_url: str, api_url: str) -> None:
    """Sign in to PROVIDER (copilot: GitHub's device flow; needs a Copilot subscription).

    The token is kept in your config folder, readable by you alone, never in a run folder."""
    import httpx

    from codingagent.sources.providers import signin

    def show(url: str, code: str) -> None:
        say(f"Open {url} and enter the code {code}", "bold")
        say("Waiting for you to confirm (Ctrl-C stops) ...")

    with httpx.Client(timeout=30.0) as http:
        try:
            sign_in = signin.device_flow(http, show, github_url, api_url)
        except KeyboardInterrupt:
            say("Stopped: not signed in", "yellow")
            sys.exit(Exit.INTERRUPTED)
        signin.chat_token(http, sign_in)  # a subscription that cannot chat fails here, not later
    path = signin.store(sign_in)
    say(f"Signed in to GitHub Copilot; the token is in {path} (mode 0600)", "green")


@click.command()
@click.argument("provider", type=PROVIDERS)
def logout(provider: str) -> None:
    """Forget the sign-in to PROVIDER (the token file is removed)."""
    from codingagent.sources.providers import signin

    if signin.forget():
        say(f"Signed out of GitHub Copilot: {signin.token_path()} removed", "green")
    else:
        say("Not signed in to GitHub Copilot: nothing to remove")
