"""Where the session database lives: the default place, and what a ``--db`` value names."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from agent.home_path import expand_home
from agent.store.errors import StoreError

PROMPTS_SUFFIX = "-prompts"
"""What the name of a database's prompt history file adds to the database's (``desk.db`` ->
``desk.db-prompts``): a side file of it, denied to the file tools with it."""

POSTGRES_PROMPTS = "postgres-prompts"
"""The prompt history of a PostgreSQL store, in desk's data folder."""

POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})
"""URL schemes of a PostgreSQL database."""


def default_db_path() -> Path:
    """``$XDG_DATA_HOME/desk/desk.db``, or ``~/.local/share/desk/desk.db`` without it.

    A relative or empty ``XDG_DATA_HOME`` is ignored, as the XDG Base Directory specification
    asks. The parent directory is not created here: :class:`~agent.store.sqlite.SqliteStore`
    creates it when it opens the file.
    """
    base = os.environ.get("XDG_DATA_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "desk" / "desk.db"


def is_server_url(location: str | os.PathLike[str] | None) -> bool:
    """Whether ``location`` names a PostgreSQL server (a URL), not a file."""
    if location is None:
        return False
    text = os.fspath(location)
    return "://" in text and urlsplit(text).scheme in POSTGRES_SCHEMES


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
        return expand_home(text.split("://", 1)[1])
    if scheme:
        raise StoreError(
            f"cannot open a {scheme!r} database: use a file path, sqlite:///PATH or"
            " postgresql://user@host/dbname"
        )
    return expand_home(text)


def prompts_path(location: str) -> Path:
    """Where the prompt history of the store ``location`` names is kept: beside a SQLite
    file (``desk.db-prompts``), in desk's data folder for a PostgreSQL store.

    Args:
        location: a file path, ``sqlite:///PATH`` or ``postgresql://...``.

    Raises:
        StoreError: a URL of a database this build cannot open.
    """
    if is_server_url(location):
        return default_db_path().with_name(POSTGRES_PROMPTS)
    path = store_path(location)
    return path.with_name(path.name + PROMPTS_SUFFIX)
