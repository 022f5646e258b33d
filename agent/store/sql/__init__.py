"""The SQL both stores speak: each table group's statements written once.

A table group (:mod:`~agent.store.sql.sessions`, :mod:`~agent.store.sql.transcript`,
:mod:`~agent.store.sql.turns`, :mod:`~agent.store.sql.queued`, :mod:`~agent.store.sql.leases`,
:mod:`~agent.store.sql.compressions`, :mod:`~agent.store.sql.checkpoints`) runs its statements
through an :class:`~agent.store.sql.core.Engine`, which the SQLite store
(:mod:`agent.store.sqlite.engine`) and the PostgreSQL store (:mod:`agent.store.postgres.engine`)
each provide. What differs in spelling (placeholders, IN-lists, the column that keeps insertion
order) is the engine's :class:`~agent.store.sql.core.Dialect`; what differs in kind (the claim
every PostgreSQL write holds, its stop rows, SQLite's claim file) is behind the engine's hooks.
"""
