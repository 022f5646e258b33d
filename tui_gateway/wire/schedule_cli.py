"""``desk schedule list`` and ``desk schedule run NAME``, and the schedules ``desk serve`` runs.

Both read desk's settings (:mod:`tui_gateway.settings.resolution`: the same flags, environment and
config file as ``desk serve``); the schedules are the config file's ``[schedules.NAME]`` tables
(:mod:`tui_gateway.settings.schedule_settings`). Their firings are kept in the session database
(``--db``): without one, ``list`` knows no last run.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import StoreError
from tui_gateway.assembly import build_gateway, open_settings_store
from tui_gateway.gateway import Gateway
from tui_gateway.schedules import Scheduler
from tui_gateway.schedules.listing import format_lines, schedule_lines
from tui_gateway.settings.resolution import Settings, SettingsError
from tui_gateway.settings.schedule_settings import ScheduleSettings
from tui_gateway.wire.options import (
    DemoModel,
    UsageError,
    fail,
    parse,
    parser,
    provider_from,
    settings_from,
)

Handler = Any
"""What ``signal.signal`` returns: a handler, ``SIG_DFL``/``SIG_IGN``, or None."""


def serve_schedules(
    settings: Settings,
    provider: ProviderConfig,
    gateway: Gateway,
    *,
    tools: bool,
    denied: tuple[Path, ...] = (),
) -> Scheduler | None:
    """The scheduler of ``desk serve`` over ``gateway``, started; None without schedules.

    A schedule with a ``workspace`` other than the settings' runs on a gateway of its own,
    built like ``gateway`` (same store, model server and limits) in that directory.
    """
    if not settings.schedules:
        return None

    def gateway_for(spec: ScheduleSettings) -> Gateway:
        assert spec.workspace is not None
        there = replace(settings, workspace=spec.workspace)
        return build_gateway(there, provider, tools=tools, approvals=True, denied=denied)

    same = {n for n, s in settings.schedules.items() if s.workspace in (None, settings.workspace)}
    schedules = {
        n: s if n not in same else replace(s, workspace=None) for n, s in settings.schedules.items()
    }
    return Scheduler(gateway, schedules, gateway_for=gateway_for).start()


def main_schedule(argv: Sequence[str], demo: DemoModel | None = None) -> int:
    """``desk schedule list`` / ``desk schedule run NAME`` (``demo`` starts the demo model for
    ``--demo``; None: refused).

    Returns:
        ``list``: 0, or 1 when the store cannot be read. ``run``: 0 completed, 130 stopped by
        the user (Ctrl+C), 143 stopped by the system (SIGTERM, the timeout), 1 failed or no
        turn ran; 2 for a bad flag or an unknown schedule.
    """
    prog = "desk schedule"
    p = parser(prog, "List the schedules of config.toml, or run one firing by hand.")
    p.add_argument("action", choices=("list", "run"), help="list the schedules, or run one")
    p.add_argument("name", nargs="?", help="the schedule to run (with run)")
    try:
        args = parse(p, argv)
        settings = settings_from(args, os.environ)
        if args.action == "list":
            return _list(prog, settings)
        if not args.name:
            raise UsageError("run takes the schedule's name (desk schedule run NAME)")
        if args.name not in settings.schedules:
            known = ", ".join(settings.schedules) or "none in config.toml"
            raise UsageError(f"no schedule {args.name!r} ({known})")
        with provider_from(settings, demo) as provider:
            gateway = build_gateway(settings, provider.config, tools=not args.no_tools)
            return _run(prog, settings, provider.config, gateway, args.name, not args.no_tools)
    except SettingsError as exc:
        return fail(prog, exc.message)


def _list(prog: str, settings: Settings) -> int:
    if not settings.schedules:
        print("no schedules: add [schedules.NAME] tables to config.toml")
        return 0
    store = open_settings_store(settings)
    if store is None:
        from tui_gateway.schedules.memory import MemoryFirings

        print("(no session database: the schedules' runs are not kept; give --db)")
        lines = schedule_lines(settings.schedules, MemoryFirings(), None, time.time())
        print(format_lines(lines))
        return 0
    try:
        lines = schedule_lines(settings.schedules, store.firings, store.turns, time.time())
    except StoreError as exc:
        return fail(prog, exc.message, 1)
    finally:
        store.close()
    print(format_lines(lines))
    return 0


def _run(
    prog: str,
    settings: Settings,
    provider: ProviderConfig,
    gateway: Gateway,
    name: str,
    tools: bool,
) -> int:
    scheduler = Scheduler(
        gateway,
        settings.schedules,
        gateway_for=lambda spec: build_gateway(
            replace(settings, workspace=spec.workspace or settings.workspace),
            provider,
            tools=tools,
        ),
        say=lambda line: print(f"{prog}: {line}", file=sys.stderr, flush=True),
    )
    outcome: list[str] = []
    done = threading.Event()

    def fire() -> None:
        try:
            outcome.append(scheduler.fire_now(name))
        finally:
            done.set()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT:
            stop = StopRequest.by_user(Surface.HEADLESS_SIGINT, "Ctrl+C")
        else:
            stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "desk was told to end")
        for firing in scheduler.running():
            firing.gateway.session_interrupt(firing.session_id, stop, turn_id=firing.turn_id)

    worker = threading.Thread(target=fire, name="desk-schedule-run", daemon=True)
    handlers: list[tuple[signal.Signals, Handler]] = []
    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGINT, signal.SIGTERM):
            handlers.append((number, signal.signal(number, on_signal)))
    try:
        worker.start()
        while not done.wait(0.2):  # the main thread stays free for signals
            pass
    finally:
        scheduler.stop()
        gateway.shutdown()
        for number, previous in handlers:
            signal.signal(number, previous)
    result = outcome[0] if outcome else "failed(Crash)"
    print(f"{name}: {result}", flush=True)
    if result == "completed":
        return 0
    if result == "interrupted_by_user":
        return 130
    return 143 if result.startswith("interrupted_by_system") else 1
