"""A writer process for the crash test: appends, starts and closes turns until it is killed.

Usage: ``python -m tests.store.sqlite.crash_writer DB SEED``. It prints one line per operation
*after* the store call returned (so the line means "committed"), flushed at once:

- ``R`` once the store is open;
- ``M <session> <position> <tag>`` after ``append_message``;
- ``T <turn> <session>`` after ``start_turn``;
- ``D <turn> <length>`` after ``save_draft`` of ``draft_text(turn)[:length]``;
- ``C <turn>`` after ``record_turn_end`` with two assistant messages.

Every text is derived from its tag (:func:`payload`), so a reader can tell a truncated row.
"""

from __future__ import annotations

import hashlib
import random
import sys

from agent.provider.types import ChatMessage
from agent.store import SqliteStore, TurnOutcome

SESSIONS = ("s0", "s1", "s2")


def payload(tag: str) -> str:
    """The content stored under ``tag``: the tag, a bar, and 0.1-6 KB derived from the tag."""
    digest = hashlib.sha256(tag.encode()).hexdigest()
    repeat = 1 + int(digest[:4], 16) % 100
    return f"{tag}|{digest * repeat}"


def draft_text(turn: str) -> str:
    """The full reply a turn streams; drafts are prefixes of it."""
    return payload(f"draft-{turn}")


def main() -> None:
    """Write until killed (or 100,000 operations)."""
    path, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    store = SqliteStore(path)
    print("R", flush=True)
    open_turns: dict[str, tuple[str, int]] = {}  # turn -> (session, draft length)
    for counter in range(1, 100_001):
        sid = rng.choice(SESSIONS)
        op = rng.random()
        busy = {s for s, _ in open_turns.values()}
        if op < 0.45:
            tag = f"m{seed}-{counter}"
            row = store.transcript.append_message(sid, ChatMessage("user", payload(tag)))
            print(f"M {sid} {row.position} {tag}", flush=True)
        elif op < 0.65 and sid not in busy:
            turn = f"t{seed}-{counter}"
            store.turns.start_turn(turn, sid, payload(turn))
            open_turns[turn] = (sid, 0)
            print(f"T {turn} {sid}", flush=True)
        elif op < 0.8 and open_turns:
            turn = rng.choice(sorted(open_turns))
            sid, length = open_turns[turn]
            length = min(len(draft_text(turn)), length + rng.randint(1, 400))
            assert store.turns.save_draft(turn, draft_text(turn)[:length])
            open_turns[turn] = (sid, length)
            print(f"D {turn} {length}", flush=True)
        elif open_turns:
            turn = rng.choice(sorted(open_turns))
            del open_turns[turn]
            messages = [
                ChatMessage("assistant", payload(f"a-{turn}")),
                ChatMessage("assistant", payload(f"b-{turn}")),
            ]
            outcome = TurnOutcome(status="completed", exit_reason="completed")
            assert store.turns.record_turn_end(turn, messages, outcome)
            print(f"C {turn}", flush=True)


if __name__ == "__main__":
    main()
