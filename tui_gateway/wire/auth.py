"""The API token of ``desk serve``: made once, kept in a 0600 file, checked on every request."""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from tui_gateway.settings.config_file import config_dir

TOKEN_BYTES = 32
"""Random bytes in a new token (``secrets.token_urlsafe``: about 43 characters)."""


class TokenError(Exception):
    """The token file cannot be read or made; ``message`` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def default_token_path(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/desk/token``, or ``~/.config/desk/token`` without it.

    A relative or empty ``XDG_CONFIG_HOME`` is ignored, as the XDG Base Directory specification
    asks.
    """
    return config_dir(env) / "token"


def load_or_create_token(path: Path) -> tuple[str, bool]:
    """Read the token kept at ``path``, or make one and keep it there (mode 0600).

    A token file readable by others is tightened to 0600.

    Returns:
        the token and whether it was just made (print it then, once).

    Raises:
        TokenError: the file cannot be read or written, or it is empty.
    """
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return _create(path), True
    except OSError as exc:
        raise TokenError(f"cannot read the token file {path}: {exc.strerror or exc}") from None
    if not token:
        raise TokenError(f"the token file {path} is empty; delete it to make a new token")
    try:
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            path.chmod(0o600)
    except OSError as exc:
        raise TokenError(f"cannot restrict the token file {path}: {exc.strerror or exc}") from None
    return token, False


def _create(path: Path) -> str:
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made by another process meanwhile: use that one
        return load_or_create_token(path)[0]
    except OSError as exc:
        raise TokenError(f"cannot make the token file {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return token


def bearer_ok(header: str | None, token: str) -> bool:
    """True when an ``Authorization`` header carries exactly ``Bearer <token>``.

    The comparison takes the same time whatever the header holds (``hmac.compare_digest``).
    """
    if header is None:
        return False
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return token_ok(value.strip(), token)


def token_ok(value: str | None, token: str) -> bool:
    """True when ``value`` is exactly ``token`` (None never is).

    The comparison takes the same time whatever ``value`` holds (``hmac.compare_digest``).
    """
    if value is None:
        return False
    return hmac.compare_digest(value.encode("utf-8", "replace"), token.encode())
