"""``[schedules.NAME]`` tables of the config file, checked into :class:`ScheduleSettings`.

::

    [schedules.nightly]
    cron = "0 3 * * *"              # five fields, local time (or: every = "15m")
    prompt = "Summarise yesterday's commits in README.md's changelog."
    workspace = "~/src/project"     # default: the workspace desk serve runs in
    model = "qwen2.5-coder"         # default: the server's (or desk's) model
    timeout = "30m"                 # past it the turn is stopped (schedule.timeout)
    approval = "deny"               # tools that ask first: "deny" (default) or "allow"

A firing's time comes from :meth:`ScheduleSettings.next_due`: a cron expression is read by
``croniter`` (five fields: minute, hour, day of month, month, day of week, in local time); an
``every`` interval is counted from the unix epoch, so every host of a database computes the
same due times. A bad entry raises :class:`~tui_gateway.settings.config_file.ConfigFileError` naming
the file, the schedule and the field.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from agent.home_path import expand_home
from tui_gateway.settings.config_file import ConfigFileError
from tui_gateway.settings.named_tables import Bad, named_tables, optional_str, refuse_unknown

DEFAULT_TIMEOUT_S: Final = 3600.0
"""How long a scheduled turn may run when its table gives no ``timeout``, in seconds."""

_DURATION_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*")
_UNIT_S: Final[Mapping[str, float]] = MappingProxyType(
    {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
)
_KNOWN = frozenset({"cron", "every", "prompt", "workspace", "model", "timeout", "approval"})


class ScheduleApproval(StrEnum):
    """What a scheduled turn answers a tool call that asks first (nobody is there to ask)."""

    DENY = "deny"
    """Refuse it: the model is told the schedule does not allow it (the default)."""
    ALLOW = "allow"
    """Allow it, once each time."""


@dataclass(frozen=True, slots=True)
class ScheduleSettings:
    """One schedule: a prompt run as a turn of the schedule's session at its due times.

    Attributes:
        name: the table's name (letters, digits, ``_``, ``-``): the session's title.
        prompt: the prompt of every firing.
        cron: a five-field cron expression (local time), or None when ``every`` is set.
        every_s: the interval in seconds (> 0), or None when ``cron`` is set.
        workspace: the absolute directory the turn works in, or None for the gateway's.
        model: the model of its turns, or None for the gateway's.
        timeout_s: seconds a firing's turn may run before the system stops it.
        approval: the answer to a tool call that asks first.
    """

    name: str
    prompt: str
    cron: str | None = None
    every_s: float | None = None
    workspace: Path | None = None
    model: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    approval: ScheduleApproval = ScheduleApproval.DENY

    def next_due(self, after: float) -> float:
        """The first due time strictly after ``after`` (unix seconds).

        ``every`` times are whole multiples of the interval since the epoch; cron times are
        croniter's, in the local time zone.
        """
        if self.every_s is not None:
            return (math.floor(after / self.every_s) + 1) * self.every_s
        assert self.cron is not None
        from croniter import croniter  # about 0.1 s to import: only for a cron schedule

        start = datetime.fromtimestamp(after).astimezone()
        return float(croniter(self.cron, start).get_next(float))

    def last_due(self, at: float) -> float | None:
        """The latest due time at or before ``at`` (unix seconds), or None before the first."""
        if self.every_s is not None:
            return math.floor(at / self.every_s) * self.every_s
        assert self.cron is not None
        from croniter import croniter

        start = datetime.fromtimestamp(at).astimezone()
        previous = float(croniter(self.cron, start).get_prev(float))
        nxt = self.next_due(previous)
        return nxt if nxt <= at else previous

    @property
    def when(self) -> str:
        """The rule as written: ``cron 0 3 * * *`` or ``every 900 s``."""
        if self.cron is not None:
            return f"cron {self.cron}"
        return f"every {self.every_s:g} s"


def parse_schedules(value: Any, path: Path, cwd: Path) -> Mapping[str, ScheduleSettings]:
    """The ``schedules`` table of the file at ``path``, checked.

    Args:
        value: ``data["schedules"]`` (None when the file has none).
        path: the config file, named in errors.
        cwd: where a relative ``workspace`` starts from.

    Returns:
        the schedules by name, in the file's order (read-only).

    Raises:
        ConfigFileError: a bad entry; the message names the file, the schedule and the field
            (``.../config.toml: schedules.nightly.cron must be ...``).
    """
    schedules = {
        name: _schedule(name, table, path, f"schedules.{name}", cwd, bad)
        for name, table, bad in named_tables(value, path, "schedules", "schedule")
    }
    return MappingProxyType(schedules)


def _schedule(
    name: str, table: dict[str, Any], path: Path, key: str, cwd: Path, bad: Bad
) -> ScheduleSettings:
    refuse_unknown(table, _KNOWN, path, key, "schedule")
    cron = optional_str(table, "cron", bad)
    every = table.get("every")
    if (cron is None) == (every is None):
        raise ConfigFileError(f'{path}: {key} needs cron ("0 3 * * *") or every ("15m"), one')
    if cron is not None and (problem := _cron_problem(cron)):
        raise bad(
            "cron", f'five cron fields (minute hour day month weekday, e.g. "0 3 * * *"): {problem}'
        )
    every_s = None if every is None else _duration(every, "every", bad)
    prompt = optional_str(table, "prompt", bad)
    if prompt is None:
        raise bad("prompt", "a non-empty string")
    workspace = optional_str(table, "workspace", bad)
    folder = None
    if workspace is not None:
        folder = (cwd / expand_home(workspace)).resolve()
        if not folder.is_dir():
            raise bad("workspace", f"a directory ({folder} is not one)")
    timeout = table.get("timeout")
    timeout_s = DEFAULT_TIMEOUT_S if timeout is None else _duration(timeout, "timeout", bad)
    approval = table.get("approval", ScheduleApproval.DENY.value)
    if approval not in {a.value for a in ScheduleApproval}:
        raise bad("approval", '"deny" or "allow"')
    return ScheduleSettings(
        name=name,
        prompt=prompt,
        cron=cron,
        every_s=every_s,
        workspace=folder,
        model=optional_str(table, "model", bad),
        timeout_s=timeout_s,
        approval=ScheduleApproval(approval),
    )


def _cron_problem(expression: str) -> str:
    """What is wrong with a cron expression, in a few words; "" when it is five fields that
    come due (``0 3 31 2 *``, February 31, never does)."""
    from croniter import CroniterBadCronError, CroniterBadDateError, croniter  # ~0.1 s: cron only

    fields = expression.split()
    if len(fields) != 5:
        return f"{len(fields)} fields"
    if backwards := _backwards_range(fields):
        return backwards
    try:
        croniter(expression, time.time()).get_next(float)
    except CroniterBadDateError:
        return "no date ever matches it"
    except (CroniterBadCronError, ValueError) as exc:
        return str(exc).removeprefix(f"[{expression}] ").removeprefix("is not acceptable, ")
    return ""


_CRON_FIELDS: Final = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day", 1, 31),
    ("month", 1, 12),
    ("weekday", 0, 6),
)
"""The five fields' names and bounds, in order."""

_MONTHS: Final = "jan feb mar apr may jun jul aug sep oct nov dec"
_WEEKDAYS: Final = "sun mon tue wed thu fri sat"

_CRON_NAMES: Final[tuple[Mapping[str, int], ...]] = (
    {},
    {},
    {},
    {month: number for number, month in enumerate(_MONTHS.split(" "), 1)},
    {day: number for number, day in enumerate(_WEEKDAYS.split(" "))},
)
"""The names a month or a weekday field may use, as numbers."""

_RANGE_RE = re.compile(r"([0-9a-z]+)-([0-9a-z]+)(?:/\d+)?")


def _backwards_range(fields: list[str]) -> str:
    """The first range of the five cron ``fields`` whose start is past its end (``5-1``,
    ``fri-mon``), said in a few words; "" when there is none.

    croniter reads ``5-1`` without a word (as if it wrapped round), so a schedule written
    backwards by mistake would fire at times nobody asked for: desk refuses it instead.
    """
    for (field, least, most), text, names in zip(_CRON_FIELDS, fields, _CRON_NAMES, strict=True):
        for item in text.lower().split(","):
            match = _RANGE_RE.fullmatch(item)
            if match is None:
                continue
            start, end = (names.get(v, int(v) if v.isdigit() else -1) for v in match.groups())
            sunday = field == "weekday" and start == 7  # weekday 7 is Sunday, as 0 is
            if start > end >= 0 and (start <= most or sunday):  # else croniter says: too big
                first, last = match.groups()
                head = "" if sunday else f"{start}-{most},"
                return (
                    f"the {field} range {first}-{last} runs backwards (write it from the "
                    f"lower value up: {head}{least}-{end})"
                )
    return ""


def _duration(value: object, item: str, bad: Bad) -> float:
    """Seconds from ``"15m"``, ``"90s"``, ``"2h"``, ``"1d"``, ``"500ms"`` or a number of
    seconds; more than 0."""
    what = 'a duration such as "90s", "15m", "2h" or "1d"'
    if isinstance(value, bool):
        raise bad(item, what)
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION_RE.fullmatch(value)):
        seconds = float(match.group(1)) * _UNIT_S[match.group(2) or "s"]
    else:
        raise bad(item, what)
    if not math.isfinite(seconds) or seconds <= 0:
        raise bad(item, f"{what}, more than 0")
    return seconds
