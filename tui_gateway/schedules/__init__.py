"""Schedules: ``[schedules.NAME]`` prompts run as turns at their due times.

- :mod:`~tui_gateway.schedules.scheduler`: the loop ``desk serve`` runs (due times, claims,
  one thread per firing, the stop at shutdown), and one firing by hand;
- :mod:`~tui_gateway.schedules.firing`: one firing: the schedule's session, its turn, its
  timeout, its approvals, its outcome;
- :mod:`~tui_gateway.schedules.memory`: firings kept in memory when there is no database;
- :mod:`~tui_gateway.schedules.listing`: ``desk schedule list``'s rows.
"""

from __future__ import annotations

from tui_gateway.schedules.scheduler import Scheduler

__all__ = ["Scheduler"]
