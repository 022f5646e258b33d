"""The table groups of one store, built on one :class:`~agent.store.sql.core.Core`, and the
parts of a store's face that do not depend on its backend."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Final, Self

from agent.store.sql.checkpoints import SqlCheckpoints
from agent.store.sql.compressions import SqlCompressions
from agent.store.sql.core import Core
from agent.store.sql.firings import SqlFirings
from agent.store.sql.leases import SqlLeases
from agent.store.sql.queued import SqlQueue
from agent.store.sql.sessions import SqlSessions
from agent.store.sql.transcript import SqlTranscript
from agent.store.sql.turns import SqlTurns


class SqlTables(ABC):
    """A store's table groups (:attr:`sessions`, :attr:`transcript`, :attr:`turns`,
    :attr:`queue`, :attr:`leases`, :attr:`compressions`, :attr:`checkpoints`,
    :attr:`firings`: see
    :class:`~agent.store.protocol.SessionStore`), its owner, and its use as a context manager
    (closed on leaving). A backend's store builds its :class:`Core` and calls
    ``SqlTables.__init__`` with it.

    Args:
        core: what the table groups share.
    """

    def __init__(self, core: Core) -> None:
        self._owner = core.owner
        self.sessions: Final = SqlSessions(core)
        self.transcript: Final = SqlTranscript(core)
        self.turns: Final = SqlTurns(core)
        self.queue: Final = SqlQueue(core)
        self.leases: Final = SqlLeases(core)
        self.compressions: Final = SqlCompressions(core)
        self.checkpoints: Final = SqlCheckpoints(core)
        self.firings: Final = SqlFirings(core)

    @property
    def owner(self) -> str:
        """The owner string written on the turns this store starts."""
        return self._owner

    @abstractmethod
    def close(self) -> None:
        """Give back what the store holds and close its database (idempotent)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
