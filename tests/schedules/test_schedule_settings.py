"""``[schedules.NAME]`` tables: good ones read, bad ones refused with a message naming the
schedule and the field; due times computed alike on every host."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui_gateway.settings.config_file import ConfigFile, SettingsError
from tui_gateway.settings.resolution import StoreDefault, resolve_settings
from tui_gateway.settings.schedule_settings import ScheduleApproval, parse_schedules


def read(tmp_path: Path, schedules: dict[str, object]) -> ConfigFile:
    return ConfigFile(tmp_path / "config.toml", {"schedules": schedules}, exists=True)


def test_a_schedule_table_is_read_with_its_defaults(tmp_path: Path) -> None:
    file = read(
        tmp_path,
        {
            "nightly": {"cron": "0 3 * * *", "prompt": "summarise", "timeout": "30m"},
            "often": {"every": "15m", "prompt": "check", "approval": "allow", "model": "m"},
        },
    )
    settings = resolve_settings({}, {}, file, store_default=StoreDefault.MEMORY, cwd=tmp_path)
    nightly, often = settings.schedules["nightly"], settings.schedules["often"]
    assert (nightly.cron, nightly.every_s, nightly.timeout_s) == ("0 3 * * *", None, 1800.0)
    assert nightly.approval is ScheduleApproval.DENY and nightly.workspace is None
    assert (often.every_s, often.approval, often.model) == (900.0, ScheduleApproval.ALLOW, "m")
    assert "schedules" not in settings.other_keys


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ({"prompt": "p"}, "needs cron"),
        ({"cron": "0 3 * * *", "every": "1m", "prompt": "p"}, "needs cron"),
        ({"cron": "0 3 * *", "prompt": "p"}, "nightly.cron"),
        ({"cron": "0 3 * * * *", "prompt": "p"}, "nightly.cron"),
        ({"cron": "61 3 * * *", "prompt": "p"}, "nightly.cron"),
        ({"cron": "0 3 31 2 *", "prompt": "p"}, "nightly.cron"),  # February 31: never due
        ({"every": "soon", "prompt": "p"}, "nightly.every"),
        ({"every": "0s", "prompt": "p"}, "nightly.every"),
        ({"every": "1m"}, "nightly.prompt"),
        ({"every": "1m", "prompt": "  "}, "nightly.prompt"),
        ({"every": "1m", "prompt": "p", "timeout": -1}, "nightly.timeout"),
        ({"every": "1m", "prompt": "p", "approval": "ask"}, "nightly.approval"),
        ({"every": "1m", "prompt": "p", "workspace": "nowhere"}, "nightly.workspace"),
        ({"every": "1m", "prompt": "p", "promt": "typo"}, "nightly.promt"),
    ],
)
def test_a_bad_entry_is_refused_naming_the_schedule_and_field(
    tmp_path: Path, table: dict[str, object], field: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        parse_schedules({"nightly": table}, tmp_path / "config.toml", tmp_path)
    assert field in refused.value.message and "schedules.nightly" in refused.value.message
    assert "\n" not in refused.value.message


@pytest.mark.parametrize(
    ("cron", "why"),
    [
        ("0 3 * *", "4 fields"),
        ("61 3 * * *", "out of range"),
        ("*/0 * * * *", "step '0' in field 0 is not acceptable"),
        ("0 3 31 2 *", "no date ever matches it"),
        # croniter takes a range written backwards without a word; desk refuses it.
        (
            "5-1 * * * *",
            "the minute range 5-1 runs backwards (write it from the lower value up: 5-59,0-1)",
        ),
        (
            "0 22-2 * * *",
            "the hour range 22-2 runs backwards (write it from the lower value up: 22-23,0-2)",
        ),
        (
            "0 3 1,20-10 * *",
            "the day range 20-10 runs backwards (write it from the lower value up: 20-31,1-10)",
        ),
        (
            "0 3 * nov-feb *",
            "the month range nov-feb runs backwards (write it from the lower value up: 11-12,1-2)",
        ),
        (
            "*/5 9 * * fri-mon",
            "the weekday range fri-mon runs backwards (write it from the lower value up: 5-6,0-1)",
        ),
        (
            "50-10/5 * * * *",
            "the minute range 50-10 runs backwards (write it from the lower value up: 50-59,0-10)",
        ),
    ],
)
def test_a_bad_cron_says_what_is_wrong_with_it(tmp_path: Path, cron: str, why: str) -> None:
    with pytest.raises(SettingsError) as refused:
        parse_schedules({"nightly": {"cron": cron, "prompt": "p"}}, tmp_path, tmp_path)
    assert refused.value.message.endswith(why), refused.value.message


@pytest.mark.parametrize("cron", ["0 9 * * mon-fri", "0 9 * * 5-7", "0-59/15 8-18 1-15 jan-jun *"])
def test_ranges_from_the_lower_value_up_are_taken(tmp_path: Path, cron: str) -> None:
    schedules = parse_schedules({"n": {"cron": cron, "prompt": "p"}}, tmp_path, tmp_path)
    assert schedules["n"].cron == cron


def test_a_bad_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="schedule name"):
        parse_schedules({"night ly": {"every": "1m", "prompt": "p"}}, tmp_path, tmp_path)


def test_cron_due_times_are_local_and_every_counts_from_the_epoch(tmp_path: Path) -> None:
    specs = parse_schedules(
        {"n": {"cron": "0 3 * * *", "prompt": "p"}, "e": {"every": "15m", "prompt": "p"}},
        tmp_path,
        tmp_path,
    )
    start = datetime(2026, 3, 1, 12, 0).astimezone().timestamp()
    due = datetime.fromtimestamp(specs["n"].next_due(start)).astimezone()
    assert (due.day, due.hour, due.minute) == (2, 3, 0)
    assert specs["n"].last_due(specs["n"].next_due(start)) == specs["n"].next_due(start)
    assert specs["e"].next_due(900.0) == 1800.0 and specs["e"].last_due(1799.0) == 900.0


@given(at=st.floats(0, 4e9), every=st.sampled_from(["1s", "7s", "15m", "1h", "1d"]))
def test_the_last_due_time_is_at_or_before_now_and_the_next_after(at: float, every: str) -> None:
    spec = parse_schedules({"e": {"every": every, "prompt": "p"}}, Path("c"), Path("."))["e"]
    last, nxt = spec.last_due(at), spec.next_due(at)
    assert last is not None and last <= at < nxt
    assert spec.next_due(last) == nxt
