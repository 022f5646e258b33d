"""A host whose turn goes on through a database outage, for tests that freeze it with SIGSTOP.

``python -m tests.store.postgres.outage_child URL SCHEMA OWNER``: opens a store as ``OWNER``
with a short lease and write bound (:data:`TTL_S`, :data:`BOUND_S`), creates session ``s1``,
starts turn ``t1`` with a draft and prints ``ready``. On the line ``end`` it closes the turn
with :data:`REPLY` as the gateway's store writer does: a write that gives up because the
database is away (``StoreUnreachable``, after :data:`BOUND_S`) prints ``waiting`` and is tried
again, for ever; then it prints ``ended True`` (or ``refused <error>``). It exits at the end of
its standard input.
"""

from __future__ import annotations

import sys

from agent.provider.types import ChatMessage
from agent.store import StoreError, StoreUnreachable, TurnOutcome
from agent.store.postgres import PostgresStore

TTL_S = 3.0
"""The host's lease, in seconds (short, so that an outage of a few seconds outlasts it)."""

BOUND_S = 1.0
"""How long one write waits for the database before ``StoreUnreachable``, in seconds."""

REPLY = "The moon is " + "a rock that keeps one face to the Earth. " * 240
"""The whole reply the turn ends with (9,852 characters)."""


def main(url: str, schema: str, owner: str) -> None:
    store = PostgresStore(
        url,
        schema=schema,
        owner=owner,
        host_ttl_s=TTL_S,
        heartbeat_s=0.2,
        grace_s=0.5,
        reconnect_s=BOUND_S,
    )
    store.sessions.create_session("s1")
    store.turns.start_turn("t1", "s1", "explain the moon")
    store.turns.save_draft("t1", REPLY[:600])
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "end":
            continue
        done = TurnOutcome(status="completed", exit_reason="completed")
        while True:
            try:
                ended = store.turns.record_turn_end("t1", [ChatMessage("assistant", REPLY)], done)
            except StoreUnreachable:
                print("waiting", flush=True)
                continue
            except StoreError as exc:
                print(f"refused {exc}", flush=True)
                break
            print(f"ended {ended}", flush=True)
            break
    store.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
