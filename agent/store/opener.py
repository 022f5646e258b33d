"""One way to open a session store, from whatever names it: a path, or a database URL.

Every entry point (``desk``, ``desk run``, ``desk serve``, ``desk gateway``) opens its store
here, so they all accept the same ``--db`` values: a file path or ``sqlite:///PATH`` (SQLite,
the embedded default), or ``postgresql://user@host/dbname`` (PostgreSQL, for several gateway
hosts on one database).
"""

from __future__ import annotations

import os

from agent.store.paths import is_server_url, store_path
from agent.store.protocol import SessionStore
from agent.store.sqlite import SqliteStore

SWEEP_S = 1.0
"""Seconds between two crash-recovery sweeps of a gateway on PostgreSQL."""


def open_store(location: str | os.PathLike[str] | None) -> SessionStore:
    """Open (creating and migrating as needed) the store ``location`` names.

    A PostgreSQL store is opened as a gateway host: its heartbeat keeps recovering the turns
    of hosts that are gone (see :class:`~agent.store.postgres.PostgresStore`).

    Args:
        location: a file path, ``sqlite:///PATH``, ``postgresql://...``, or None for the
            default place (``$XDG_DATA_HOME/desk/desk.db``).

    Returns:
        the open store; the caller closes it.

    Raises:
        StoreError: it cannot be opened (locked, read-only, corrupt, too new, a directory,
            unreachable, an unknown kind of URL), with a one-line message.
    """
    if location is not None and is_server_url(location):
        from agent.store.postgres import PostgresStore  # psycopg only when asked for

        return PostgresStore(os.fspath(location), sweep_s=SWEEP_S)
    return SqliteStore(store_path(location))
