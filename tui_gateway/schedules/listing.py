"""``desk schedule list``: each schedule's rule, next due time, and last firing's outcome."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from agent.store import Firings, Turns
from tui_gateway.settings.schedule_settings import ScheduleSettings


@dataclass(frozen=True, slots=True)
class ScheduleLine:
    """One schedule as listed.

    Attributes:
        name: the schedule's name.
        when: its rule (``cron 0 3 * * *``, ``every 900 s``).
        next_due: its next due time, unix seconds.
        last_due: its last firing's due time, or None when it never fired.
        outcome: its last firing's outcome (an exit reason, ``running``, or why no turn ran),
            or None when it never fired.
    """

    name: str
    when: str
    next_due: float
    last_due: float | None
    outcome: str | None


def schedule_lines(
    schedules: Mapping[str, ScheduleSettings], firings: Firings, turns: Turns | None, now: float
) -> list[ScheduleLine]:
    """The schedules as listed, in the config file's order.

    A firing whose row has no outcome yet takes its turn's (a host killed mid-firing: the
    turn's recovery says ``failed(Crash)``), or is ``running``.

    Raises:
        StoreError: the store cannot be read.
    """
    lines = []
    for spec in schedules.values():
        last = firings.last_firings(spec.name)
        outcome: str | None = None
        if last:
            outcome = last[0].outcome
            if outcome is None and last[0].turn_id is not None and turns is not None:
                turn = turns.get_turn(last[0].turn_id)
                outcome = turn.exit_reason if turn is not None and turn.ended_at else None
            outcome = outcome or "running"
        lines.append(
            ScheduleLine(
                spec.name,
                spec.when,
                spec.next_due(now),
                last[0].due_at if last else None,
                outcome,
            )
        )
    return lines


def format_lines(lines: list[ScheduleLine]) -> str:
    """The lines as a table (local times), one schedule a line, with a header."""
    rows = [("NAME", "WHEN", "NEXT", "LAST", "OUTCOME")]
    for line in lines:
        last = _time(line.last_due) if line.last_due is not None else "never"
        rows.append((line.name, line.when, _time(line.next_due), last, line.outcome or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:4])) + "  " + r[4] for r in rows
    )


def _time(at: float) -> str:
    return datetime.fromtimestamp(at).astimezone().strftime("%Y-%m-%d %H:%M:%S")
