"""The engine a table group runs on: transactions, a dialect, and the hooks of a backend.

Statements are written once, in SQLite's spelling: ``?`` placeholders, ``TRUE``/``FALSE``,
``ON CONFLICT ... DO``, ``RETURNING`` (SQLite 3.35 or newer). A :class:`Tx` of the PostgreSQL
store turns ``?`` into ``%s``; what cannot be spelled the same in both (an IN-list of any
length, the column that keeps insertion order) comes from the :class:`Dialect`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from agent.store.liveness import OwnerLiveness

T = TypeVar("T")

Clock = Callable[[], float]
"""Wall-clock source in unix seconds."""

Row = Sequence[Any]
"""One fetched row, its columns in select order."""


def in_list(column: str, values: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
    """``column IN (?, ?, ...)`` with one placeholder a value (SQLite's IN-list)."""
    return f"{column} IN ({', '.join('?' * len(values))})", tuple(values)


def any_array(column: str, values: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
    """``column = ANY(?)`` with the values as one array (PostgreSQL's IN-list)."""
    return f"{column} = ANY(?)", (list(values),)


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one backend spells what the two do not spell alike (the defaults are SQLite's).

    Attributes:
        name: ``"sqlite"`` or ``"postgres"``.
        session_order: the ``sessions`` column that orders rows created in one instant.
        turn_order: the same for ``turns``.
        queued_order: the same for ``queued_prompts``.
        checkpoint_order: the same for ``checkpoint_files``.
        turn_fence: whether ``turns`` has a ``fence`` column (the fencing number a turn
            started with).
        any_of: ``(column, values) -> (condition, params)``: the column is one of ``values``.
    """

    name: str
    session_order: str = "rowid"
    turn_order: str = "rowid"
    queued_order: str = "rowid"
    checkpoint_order: str = "rowid"
    turn_fence: bool = False
    any_of: Callable[[str, Sequence[Any]], tuple[str, tuple[Any, ...]]] = in_list


class Tx(Protocol):
    """Statements inside one transaction (or one autocommit read), in SQLite's spelling.

    Every method raises the backend's own error; the engine translates it into a
    :class:`~agent.store.errors.StoreError` when the transaction ends.
    """

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row of ``sql``, or None (the rest are read and dropped)."""
        ...

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row of ``sql``."""
        ...

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run ``sql``; how many rows it changed."""
        ...


class Engine(Protocol):
    """A backend's transactions and what its table groups do there in kind.

    Attributes:
        dialect: how it spells what the backends do not spell alike.
    """

    dialect: Dialect

    def write(self, fn: Callable[[Tx], T], *, wait: bool = True, durable: bool = True) -> T:
        """Run ``fn`` in one write transaction (it may run more than once: it must change
        nothing outside the database).

        Args:
            fn: the transaction's work.
            wait: False to give up at once (a :class:`~agent.store.errors.StoreLocked`) when
                the database is busy or away.
            durable: False where a later durable write replaces this one (a draft): the
                backend may skip its fsync.

        Raises:
            StoreError: what ``fn`` raised of it, or any failure (translated; nothing written).
        """
        ...

    def read(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn``'s reads.

        Raises:
            StoreError: any failure (translated).
        """
        ...

    def hold(
        self, tx: Tx, session_id: str, *, gone: Collection[str] = (), force: bool = False
    ) -> int:
        """Make sure this store may write the session, inside ``tx``.

        Args:
            tx: the write transaction.
            session_id: the session about to be written.
            gone: owners the caller already found gone (crash recovery).
            force: take the session whoever holds it (recovery with ``include_live``).

        Returns:
            the fencing number this store writes the session with (0 where there is none).

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds it.
        """
        ...

    def claim_new(self, tx: Tx, session_id: str) -> None:
        """Claim a session this store is creating, inside ``tx``."""
        ...

    def forget(self, session_id: str) -> None:
        """The session was deleted: nothing is held of it any more."""
        ...

    def turns_recovered(self, tx: Tx, turn_ids: Sequence[str]) -> None:
        """Crash recovery closed these turns inside ``tx`` (a backend with stop rows marks
        theirs taken)."""
        ...


@dataclass(frozen=True, slots=True)
class Core:
    """What every table group of one store shares.

    Attributes:
        engine: the backend's transactions and hooks.
        where: the database as messages name it (a path, or a URL without its password).
        clock: wall-clock source in unix seconds, for row times and lease expiry.
        owner: this store's owner string, written on the turns and queued prompts it starts.
        liveness: tells whether another owner still runs (crash recovery).
    """

    engine: Engine
    where: str
    clock: Clock
    owner: str
    liveness: OwnerLiveness


def must(row: Row | None) -> Row:
    """``row``, which the caller's own transaction just wrote (so it is there)."""
    assert row is not None
    return row
