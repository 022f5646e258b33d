"""What each compression summary of a saved session replaced, read back from the store.

A compression archives a run of active messages (``active = FALSE``, ``archived_by`` its
attempt) and appends one summary in their place (the attempt's ``summary_message_id``); the
archived rows are never deleted. A later compression may archive an earlier summary with the
messages after it: read back, that summary is expanded into what it replaced, so each summary
of the active transcript stands for the messages the person saw, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent.store import MessageRow

SummaryOf = Callable[[int], "int | None"]
"""Returns the summary message id a compression attempt committed (None when it has none)."""


def replaced_messages(
    active: Sequence[MessageRow], every: Sequence[MessageRow], summary_of: SummaryOf
) -> dict[int, list[MessageRow]]:
    """The messages each summary of the active transcript replaced.

    Args:
        active: the active transcript, in order.
        every: every message of the session, archived ones included.
        summary_of: the summary message id of a compression attempt id (the store's
            ``compression_attempts.summary_message_id``).

    Returns:
        summary message id -> the archived messages it stands for, oldest first (in the order
        the transcript held them), a summary among them expanded in its place; a summary whose
        archived messages are gone (or whose attempt is unknown) is left out.
    """
    archived: dict[int, list[MessageRow]] = {}  # attempt -> its archived rows
    for row in every:
        if not row.active and row.archived_by is not None:
            archived.setdefault(row.archived_by, []).append(row)
    by_summary: dict[int, list[MessageRow]] = {}
    for attempt, rows in archived.items():
        summary = summary_of(attempt)
        if summary is not None:
            by_summary[summary] = sorted(rows, key=lambda r: r.order_key)

    def expanded(summary: int, seen: frozenset[int]) -> list[MessageRow]:
        out: list[MessageRow] = []
        for row in by_summary.get(summary, ()):
            if row.id in by_summary and row.id not in seen:
                out.extend(expanded(row.id, seen | {row.id}))
            else:
                out.append(row)
        return out

    return {
        row.id: found
        for row in active
        if row.id in by_summary and (found := expanded(row.id, frozenset({row.id})))
    }
