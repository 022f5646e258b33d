"""What ``desk web`` hands the desks it serves through their environment.

A served desk is a process of its own (``python -m desk FLAGS``, started by the web server in the
server's environment). Its file tools must refuse the server's token file, as ``desk serve``'s
do: whoever reads the token drives every tab. The server names the file in
:data:`TOKEN_FILE_ENV`; the desk adds it to its deny list (:func:`denied_by_server`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

TOKEN_FILE_ENV = "DESK_WEB_TOKEN_FILE"
"""The environment variable that names ``desk web``'s token file to the desks it serves."""


def denied_by_server(env: Mapping[str, str]) -> tuple[Path, ...]:
    """The files a served desk's file tools refuse because its server said so: ``()`` for a
    desk that no server started."""
    named = env.get(TOKEN_FILE_ENV, "")
    return tuple(Path(part) for part in named.split(os.pathsep) if part)


__all__ = ["TOKEN_FILE_ENV", "denied_by_server"]
