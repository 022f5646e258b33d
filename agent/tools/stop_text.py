"""The first line of a tool result that a stop cut: written here for the model and the store,
and read back here by a frontend that shows a saved result (``desk --resume``).

The line names the party (:meth:`agent.stops.StopRequest.describe`), says ``not run:`` first
for a call the stop came before, and ends with the child processes the stop ended:
``stopped by the user (2 child processes ended)``, ``not run: stopped by the system: quitting``.
Writer and reader live together so that the saved line reads as the live one did.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.stops import SYSTEM_STOPPED, USER_STOPPED

NOT_RUN = "not run: "
"""Before the party, for a call that never ran."""

_HEAD = re.compile(
    rf"^(?P<not_run>{re.escape(NOT_RUN)})?"
    rf"(?P<party>{re.escape(USER_STOPPED)}|{re.escape(SYSTEM_STOPPED)}: .*?)"
    r"(?: \((?P<children>\d[\d,]*) child process(?:es)? ended\))?$"
)


def count_processes(count: int) -> str:
    """``"1 child process"`` / ``"3 child processes"``."""
    return f"{count:,} child process" if count == 1 else f"{count:,} child processes"


def stopped_head(stopped_by: str, *, started: bool = True, children_ended: int = 0) -> str:
    """The first line of a stopped call's result.

    Args:
        stopped_by: who stopped it, from :meth:`StopRequest.describe`.
        started: False for a call that never ran.
        children_ended: child processes the stop ended (shown when non-zero).
    """
    head = stopped_by if started else f"{NOT_RUN}{stopped_by}"
    if children_ended:
        head += f" ({count_processes(children_ended)} ended)"
    return head


@dataclass(frozen=True, slots=True)
class StoppedHead:
    """What :func:`read_stopped_head` found in a saved result's first line.

    Attributes:
        stopped_by: who stopped the call (``stopped by the user``, ``stopped by the system:
            <reason>``).
        started: False for a call that never ran.
        children_ended: child processes the stop ended.
    """

    stopped_by: str
    started: bool
    children_ended: int


def read_stopped_head(line: str) -> StoppedHead | None:
    """The stop a result's first line reports, when :func:`stopped_head` wrote it (the line as
    written, without its line break); None for any other line (a call that ran to its end)."""
    found = _HEAD.match(line)
    if found is None:
        return None
    children = found.group("children")
    return StoppedHead(
        stopped_by=found.group("party"),
        started=found.group("not_run") is None,
        children_ended=int(children.replace(",", "")) if children else 0,
    )


__all__ = ["NOT_RUN", "StoppedHead", "count_processes", "read_stopped_head", "stopped_head"]
