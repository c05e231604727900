"""What a command may see of the agent's environment: allow-listed names only, and of those
nothing that looks like a credential, by name or by value."""

from __future__ import annotations

import re
from collections.abc import Mapping

TOOL_VARS = (
    *("VIRTUAL_ENV", "CONDA_PREFIX", "PYENV_ROOT", "CARGO_HOME", "RUSTUP_HOME", "NVM_DIR"),
    *("GOROOT", "GOPATH", "JAVA_HOME", "GRADLE_HOME", "GEM_HOME"),
)
# The environment a command gets: these names (and prefixes), minus anything secret-looking.
_ENV_NAMES = frozenset(
    {
        *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ"),
        *("TERM", "COLORTERM", "NO_COLOR", "TMPDIR", "TEMP", "TMP"),
        *("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"),
        *("NODE_EXTRA_CA_CERTS", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"),
        # Toolchains; their folders are also bound back into a sandboxed home.
        *(*TOOL_VARS, "CONDA_DEFAULT_ENV", "PYENV_VERSION"),
        # Windows needs these to start anything at all.
        *("SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE"),
        *("USERNAME", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES"),
    }
)
_ENV_PREFIXES = ("LC_", "PYTHON", "PIP_")
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE")
# Values that carry a credential, whatever the variable's name.
_SECRET_VALUE = re.compile(
    r"://[^/\s]*@"  # https://user:password@host
    # a query parameter named like a secret: ?access_token=, &auth=, ;sig=, ?X-Amz-Signature=
    r"|[?&;#][^=&;#\s]*(?i:token|auth|key|secret|passw|pwd|sig|credential|session)[^=&;#\s]*="
    # known token formats (GitHub, OpenAI/Anthropic, AWS, Slack, GitLab, npm, PyPI, Google,
    # Hugging Face, Stripe, JWTs, private keys)
    r"|\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|sk-[\w-]{20,}|(AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abposr]-[\w-]{10,}|glpat-[\w-]{20,}|npm_[A-Za-z0-9]{36}|pypi-[\w-]{50,}"
    r"|AIza[\w-]{35}|hf_[A-Za-z0-9]{30,}|[rs]k_live_[A-Za-z0-9]{20,}"
    r"|eyJ[\w-]{10,}\.eyJ[\w-]{10,}\.)"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY"
)


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """What a command may see of ``env``: allowlisted names only, and of those nothing that
    looks like a credential, by name (``*TOKEN*``, ``AWS_*``, ...) or by value (a URL with a
    password or a secret-looking query parameter, a known token format)."""
    return {name: value for name, value in env.items() if _env_allowed(name, value)}


def _env_allowed(name: str, value: str) -> bool:
    upper = name.upper()
    if upper not in _ENV_NAMES and not upper.startswith(_ENV_PREFIXES):
        return False
    if upper.startswith("AWS_") or any(marker in upper for marker in _SECRET_MARKERS):
        return False
    return not _SECRET_VALUE.search(value)
