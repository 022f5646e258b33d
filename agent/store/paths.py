"""Where the session database lives by default."""

from __future__ import annotations

import os
from pathlib import Path


def default_db_path() -> Path:
    """``$XDG_DATA_HOME/desk/desk.db``, or ``~/.local/share/desk/desk.db`` without it.

    A relative or empty ``XDG_DATA_HOME`` is ignored, as the XDG Base Directory specification
    asks. The parent directory is not created here: :class:`~agent.store.sqlite.SqliteStore`
    creates it when it opens the file.
    """
    base = os.environ.get("XDG_DATA_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "desk" / "desk.db"
