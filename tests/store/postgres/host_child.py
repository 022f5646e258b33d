"""A host that runs a turn and then hangs, to be killed with SIGKILL by a test.

``python -m tests.store.postgres.host_child URL SCHEMA OWNER``: opens a store as ``OWNER``,
creates session ``s1``, starts turn ``t1`` with a draft, prints ``ready <fence>`` and waits for
its standard input to close (it never closes it itself: the test kills it).
"""

from __future__ import annotations

import sys

from agent.store.postgres import PostgresStore


def main(url: str, schema: str, owner: str) -> None:
    store = PostgresStore(url, schema=schema, owner=owner, heartbeat_s=0.2, grace_s=0.5)
    store.sessions.create_session("s1")
    store.turns.start_turn("t1", "s1", "explain the moon")
    store.turns.save_draft("t1", "The moon is")
    print(f"ready {store.claims.fence_of('s1')}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main(*sys.argv[1:4])
