"""One way to open a session store, from whatever names it: a path, or a database URL.

Every entry point (``desk``, ``desk run``, ``desk serve``, ``desk gateway``) opens its store
here, so they all accept the same ``--db`` values.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from agent.store.errors import StoreError
from agent.store.paths import default_db_path
from agent.store.protocol import SessionStore
from agent.store.sqlite import SqliteStore


def store_path(location: str | os.PathLike[str] | None) -> Path:
    """The SQLite file ``location`` names (``~`` expanded; ``sqlite:///PATH`` accepted).

    Args:
        location: a path, a ``sqlite:`` URL, or None for :func:`default_db_path`.

    Raises:
        StoreError: a URL of a database this build cannot open.
    """
    if location is None:
        return default_db_path()
    text = os.fspath(location)
    scheme = urlsplit(text).scheme if "://" in text else ""
    if scheme == "sqlite":
        return Path(text.split("://", 1)[1]).expanduser()
    if scheme:
        raise StoreError(f"cannot open a {scheme!r} database: use a file path or sqlite:///PATH")
    return Path(text).expanduser()


def open_store(location: str | os.PathLike[str] | None) -> SessionStore:
    """Open (creating and migrating as needed) the store ``location`` names.

    Args:
        location: a file path, ``sqlite:///PATH``, or None for the default place
            (``$XDG_DATA_HOME/desk/desk.db``).

    Returns:
        the open store; the caller closes it.

    Raises:
        StoreError: it cannot be opened (locked, read-only, corrupt, too new, a directory,
            an unknown kind of URL), with a one-line message.
    """
    return SqliteStore(store_path(location))
