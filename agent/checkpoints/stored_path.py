"""A file's path as a checkpoint keeps it: text the store can hold, that gives the same file back.

A path is bytes on Linux; Python gives a name that is not UTF-8 (``x\\xfe``, made by a shell
command) as a string with lone surrogates, which no store can encode: writing it failed, and
the session's saving was given up. Such a path is kept as ``bytes:`` and the base64 of its bytes
(a recorded path is absolute, so no real one starts so); any other as it is.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path

from agent.valid_text import is_valid_text

BYTES_PREFIX = "bytes:"
"""What a kept path that is not UTF-8 starts with (then the base64 of its bytes)."""


def stored_path(path: Path) -> str:
    """``path`` as a checkpoint keeps it (see the module docstring); never raises."""
    text = str(path)
    if is_valid_text(text):
        return text
    return BYTES_PREFIX + base64.urlsafe_b64encode(os.fsencode(path)).decode("ascii")


def path_from_stored(text: str) -> Path:
    """The path :func:`stored_path` kept as ``text`` (a malformed ``bytes:`` form is taken as
    written); never raises."""
    if text.startswith(BYTES_PREFIX):
        try:
            return Path(os.fsdecode(base64.urlsafe_b64decode(text[len(BYTES_PREFIX) :])))
        except (binascii.Error, ValueError):
            pass
    return Path(text)
