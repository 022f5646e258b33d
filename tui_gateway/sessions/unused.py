"""Sessions that were never used are not kept: a desk started and quit without a prompt leaves
no empty "(new session)" row behind for the next start to list.

At shutdown, once every worker has ended, each live session of this gateway that never had a
prompt (no turn, nothing queued, nothing in its transcript but the system prompt, and no title
the person gave it) is deleted from the store, behind its other writes, by the store's own
:meth:`~agent.store.protocol.Sessions.delete_session`. That deletion refuses a session another
live desk has claimed (``StoreFenced``), and the store is asked again, in the same write, that
the session has no turn, no queued prompt and no message but system ones: a session this
gateway did not see used, but that was used through the store, stays.

Deleting is best effort and never costs anything: a session whose writes wait for the database,
or one the gateway gave up saving, is left as it is, and a deletion the store refuses is
dropped (an empty row left behind is all that happens).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from agent.store import SessionStore, StoreError
from tui_gateway.sessions.persistence import Persistence
from tui_gateway.sessions.state import Session
from tui_gateway.sessions.unsaved import Unsaved

ACTION = "drop the unused session"
"""The write's name, as the person would be told."""


def never_used(session: Session) -> bool:
    """True when ``session`` never had a prompt and the person never named it (in memory)."""
    with session.lock:
        return (
            not session.title
            and not session.turns
            and session.running is None
            and not session.queue
            and all(m.role == "system" for m in session.history)
        )


def discard_unused(persistence: Persistence, sessions: Sequence[Session]) -> list[str]:
    """Queue the deletion of every session of ``sessions`` that was never used.

    Call it when no turn can start any more (the shutdown, after the workers ended) and before
    :meth:`Persistence.close`.

    Returns:
        the ids of the sessions whose deletion was queued.
    """
    if persistence.store is None:
        return []
    queued: list[str] = []
    for session in sessions:
        if session.store_detached or persistence.waiting(session) or not never_used(session):
            continue
        sid = session.session_id
        delete = lambda s, sid=sid: _delete_if_unused(s, sid)  # noqa: E731
        persistence.write(session, ACTION, delete, Unsaved(ACTION, sid), wait=False)
        queued.append(sid)
    return queued


def _delete_if_unused(store: SessionStore, session_id: str) -> None:
    """Delete the session when the store, too, holds nothing of a use of it."""
    with contextlib.suppress(StoreError):  # refused (another desk's) or unavailable: keep it
        row = store.sessions.get_session(session_id)
        if row is None or row.title:
            return
        if store.turns.list_turns(session_id) or store.queue.queued_prompts(session_id):
            return
        if any(m.role != "system" for m in store.transcript.all_messages(session_id)):
            return
        store.sessions.delete_session(session_id)
