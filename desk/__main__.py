"""``desk`` / ``python -m desk``: resolve the model server, run the app, clean up.

``desk gateway ...``, ``desk serve ...`` and ``desk run ...`` run the wire commands of
:mod:`tui_gateway.wire.cli`, ``desk schedule ...`` those of schedules
(:mod:`tui_gateway.wire.schedule_cli`), ``desk acp ...`` the ACP agent
(:mod:`tui_gateway.acp.main`), and ``desk web ...`` the desk served to a browser
(:mod:`desk.web.command`), instead (before anything of Textual is imported or any server is
probed) and return their exit code. ``desk --gateway-cmd CMD`` runs the app against a gateway
in a child process (:class:`tui_gateway.wire.client.RemoteGateway`) instead of an embedded one.

On a terminal the first frame is drawn before anything heavy is imported, and keys typed
meanwhile are kept for the app (:mod:`desk.early_frame`). The embedded gateway is built once
the app's own first frame is painted, on a thread of its own (:mod:`desk.late_gateway`). No
model server is asked before the app runs: the gateway checks a configured server in the
background once the desk is on screen (:mod:`tui_gateway.servers.model_server`), so a server
that cannot be reached or refuses the key is one line on screen, not an exit. With nothing
configured, llama.cpp's and Ollama's default addresses are probed first (about 300 ms at most),
then the demo model starts.

Exit codes: 0 after a normal quit (Ctrl+Q, or SIGTERM/SIGHUP handled as a system quit),
2 for a bad flag or setting (one line on stderr, no traceback), 1 when the app crashed
(Textual restores the terminal and prints the error), 130 for SIGINT before the app started
(a Ctrl+C typed under the first frame is kept as a key: :mod:`desk.early_frame`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, NoReturn, TextIO

from desk import early_signals

if TYPE_CHECKING:  # imported when needed: the first frame is drawn before any of them
    from pathlib import Path

    from contract.ports import DeskGateway
    from contract.results import ShutdownReport
    from desk.app import DeskApp
    from desk.config import ConnectionInfo, DeskOptions
    from desk.early_frame import EarlyFrame
    from desk.late_gateway import Built, LateGateway
    from desk.startup import Startup
    from tui_gateway.settings.resolution import Settings
    from tui_gateway.wire.options import DemoModel

SWITCH_INTERVAL_S = 0.001
"""GIL switch interval desk runs with, in seconds (Python's default is 0.005)."""

SUBCOMMANDS = ("gateway", "serve", "run", "acp", "schedule", "web")
"""The first arguments that run a wire command instead of the app."""


def _tune_switch_interval(env: Mapping[str, str]) -> None:
    # While a reply streams, the UI thread re-renders Markdown and holds the GIL; a stopped
    # turn's worker needs the GIL a few times to close its socket. At 5 ms per hand-over the
    # Esc -> server close time was 11-40 ms (median 20) at 200 tokens/s; at 1 ms 11-22 ms
    # (median 13). DESK_SWITCH_INTERVAL (seconds) overrides, for measuring.
    try:
        interval = float(env.get("DESK_SWITCH_INTERVAL", SWITCH_INTERVAL_S))
    except ValueError:
        interval = SWITCH_INTERVAL_S
    if interval > 0:
        sys.setswitchinterval(interval)


def _on_a_terminal(env: Mapping[str, str]) -> bool:
    """True when the app has a screen and keys: stdin and stdout are a terminal, or a driver
    of its own is asked for (``TEXTUAL_DRIVER``: ``desk web`` serves it to a browser)."""
    if env.get("TEXTUAL_DRIVER"):
        return True
    try:
        return os.isatty(sys.stdin.fileno()) and os.isatty(sys.stdout.fileno())
    except (OSError, ValueError):  # closed, or not a real file
        return False


def _error(message: str) -> None:
    _say(f"desk: {message}", sys.stderr)


def _say(line: str, stream: TextIO) -> None:
    """Write a line to the terminal; a terminal that hung up gets nothing (no traceback, and
    the exit status stays the app's)."""
    try:
        print(line, file=stream, flush=True)
    except OSError:  # EIO on a closed pty, EPIPE on a closed pipe: nobody is reading
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())  # the exit's flush too


def run_subcommand(name: str, argv: Sequence[str]) -> int:
    """Run ``desk gateway|serve|run|schedule|acp|web`` with the arguments after its name (their
    ``--demo`` starts desk's demo model, :func:`desk.demo.demo_model_served`)."""
    from desk.demo import demo_model_served

    if name == "acp":
        from tui_gateway.acp.main import main_acp

        return main_acp(list(argv), demo_model_served)
    if name == "schedule":
        from tui_gateway.wire.schedule_cli import main_schedule

        return main_schedule(list(argv), demo_model_served)
    if name == "web":
        from desk.web.command import main_web

        return main_web(list(argv))
    from tui_gateway.wire import cli

    commands: dict[str, Callable[[Sequence[str], DemoModel], int]] = {
        "gateway": cli.main_gateway_stdio,
        "serve": cli.main_serve,
        "run": cli.main_run,
    }
    return commands[name](list(argv), demo_model_served)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the desk, or one of its subcommands.

    Args:
        argv: arguments after the program name (default ``sys.argv[1:]``).

    Returns:
        the process exit code (see the module docstring).
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in SUBCOMMANDS:
        from desk.malloc_tuning import cap_arenas

        cap_arenas(os.environ)  # before any thread: see desk.malloc_tuning
        try:
            if args[0] == "run":  # Ctrl+C, SIGTERM or SIGHUP while it loads: a stop, said
                from tui_gateway.wire import run_early

                run_early.arm(early_signals)  # raises one received since desk's first line
            return run_subcommand(args[0], args[1:])
        except KeyboardInterrupt as exc:  # Ctrl+C (or, for run, SIGTERM/SIGHUP) while loading
            if args[0] == "run":  # a run says it was stopped, as it does once started
                from tui_gateway.wire.run_early import stopped_before_start, wants_json

                return stopped_before_start(wants_json(args[1:]), by=exc)
            return 130
        except Exception:  # for run: a signal's raise an import turned into another error
            early = sys.modules.get("tui_gateway.wire.run_early")
            signum = early.pending() if args[0] == "run" and early is not None else None
            if early is None or signum is None:
                raise
            return int(
                early.stopped_before_start(early.wants_json(args[1:]), by=early.stop_raised(signum))
            )
    frame: EarlyFrame | None = None
    try:
        # Inside the try: a Ctrl+C typed while the terminal still cooks keys (the first tenth
        # of a second) is SIGINT, and ends the launch with 130, not with a traceback.
        from desk.early_frame import EarlyFrame, default_theme_chosen
        from desk.gc_tuning import relax_gc
        from desk.malloc_tuning import cap_arenas

        frame = EarlyFrame.show(args, os.environ, coloured=default_theme_chosen(os.environ))
        relax_gc()  # importing the app and building its screen: see desk.gc_tuning
        cap_arenas(os.environ)  # before the gateway's threads: see desk.malloc_tuning
        _tune_switch_interval(os.environ)
        from desk.config import ConfigError, parse_options
        from tui_gateway.settings.config_file import read_config_file

        try:
            options = parse_options(args, os.environ, read_config_file(os.environ))
        except ConfigError as exc:
            if frame is not None:
                frame.close()  # the main screen back before the line is written
            _error(exc.message)
            return 2
        if not _on_a_terminal(os.environ):  # it would wait for keys that never come
            _error("needs a terminal (stdin and stdout); `desk run PROMPT` works without one")
            return 2
        if options.gateway_cmd:
            return _run_remote(options, frame)
        return _run_embedded(options, frame)
    except KeyboardInterrupt:
        return 130
    finally:
        if frame is not None:
            frame.close()


def _run_embedded(options: DeskOptions, frame: EarlyFrame | None = None) -> int:
    from desk.config import ConnectionInfo, choose_server
    from desk.late_gateway import LateGateway
    from desk.startup import Startup

    settings = options.settings
    demo = None
    try:
        choice = choose_server(settings)  # probes only when nothing is configured
        api_key = settings.api_key
        if choice.base_url is None:
            from desk.demo import start_demo_server

            try:
                demo = start_demo_server()
            except Exception as exc:  # the fallback itself failed: say so, no traceback
                if frame is not None:
                    frame.close()
                _error(f"cannot start the demo model: {exc}")
                return 1
            model = settings.model or demo.config.model
            connection = ConnectionInfo(model, demo.base_url, is_demo=True, source=choice.source)
            api_key = None
        else:
            model = choice.model or ""  # "": the first one the server lists
            connection = ConnectionInfo(model, choice.base_url, source=choice.source)
        gateway = LateGateway(partial(_build_gateway, settings, connection, api_key))
        named = settings.model if settings.origin("model").source == "flag" else None
        startup = Startup(
            resume=options.resume,
            resume_id=options.resume_id,
            model=named,
            history=_history(options),
            db_flag=_db_flag(options),
        )
        return _run_app(gateway, connection, options, startup, frame)
    finally:
        if demo is not None:
            demo.stop()


def _history(options: DeskOptions) -> Path | None:
    """The prompt history's file beside the session database (None: sessions in memory)."""
    from desk.history_file import history_path

    db = options.settings.db
    return history_path(db) if db is not None else None


def _db_flag(options: DeskOptions) -> str:
    """The ``--db`` given on the command line ("" when the database was named otherwise)."""
    settings = options.settings
    db = settings.db
    if db is None or settings.origin("db").source != "flag":
        return ""
    return db if "://" in db else os.path.abspath(os.path.expanduser(db))  # from any folder


def _build_gateway(settings: Settings, connection: ConnectionInfo, api_key: str | None) -> Built:
    """The embedded gateway and its start-up line (run once the app's first frame is out, on a
    thread of its own: :mod:`desk.late_gateway`)."""
    from agent.provider.client import ProviderConfig
    from desk.late_gateway import Built
    from desk.startup import unsaved_notice
    from desk.web.handoff import denied_by_server
    from tui_gateway.assembly import StoreUnavailable, build_gateway

    provider = ProviderConfig(base_url=connection.base_url, model=connection.model, api_key=api_key)
    notice = ""
    try:
        gateway = build_gateway(settings, provider, denied=denied_by_server(os.environ))
    except StoreUnavailable as exc:  # not fatal here: sessions stay in memory, and we say so
        gateway = build_gateway(
            settings, provider, persist=False, denied=denied_by_server(os.environ)
        )
        notice = unsaved_notice(exc.reason)
    notes = [line for line in (notice, gateway.config.sandbox_note) if line]
    return Built(gateway, " · ".join(notes), saved=not notice)


def _run_remote(options: DeskOptions, frame: EarlyFrame | None = None) -> int:
    """``--gateway-cmd CMD``: the app against a gateway in a child process."""
    from contract.errors import GatewayError
    from desk.config import ConnectionInfo
    from desk.startup import Startup
    from tui_gateway.wire.client import RemoteGateway

    assert options.gateway_cmd is not None
    try:
        remote = RemoteGateway(options.gateway_cmd)
    except (GatewayError, ValueError) as exc:  # ValueError: shlex could not split CMD
        if frame is not None:
            frame.close()
        _error(f"--gateway-cmd: {getattr(exc, 'message', exc)}")
        return 2
    ready = remote.ready
    connection = ConnectionInfo(
        ready.model, ready.base_url, is_demo=ready.demo, source="--gateway-cmd"
    )
    startup = Startup(
        resume=options.resume,
        resume_id=options.resume_id,
        history=_history(options),
        db_flag=_db_flag(options),
    )
    return _run_app(remote, connection, options, startup, frame)


def _run_app(
    gateway: DeskGateway | LateGateway,
    connection: ConnectionInfo,
    options: DeskOptions,
    startup: Startup,
    frame: EarlyFrame | None = None,
) -> int:
    from agent.stamps import stamp
    from desk.app import DeskApp
    from desk.stop_key import StopKey

    def leave(resume_hint: str, report: ShutdownReport) -> None:
        # the quit's thread, the app's terminal given back: what it says, then the end
        if frame is not None:
            frame.close()
        for line in exit_lines(resume_hint, report):
            real = sys.__stderr__ if line.startswith("desk: ") else sys.__stdout__
            _say(line, real or sys.stderr)  # the app still holds sys.stdout
        stamp("quit.exit")
        leave_now(0)

    app: DeskApp = DeskApp(
        gateway,
        connection,
        escape_delay_ms=options.escape_delay_ms,
        startup=startup,
        stop_key=StopKey.parse(options.settings.stop_key),
        busy_input=options.settings.busy_input,
        leave=leave,
    )
    if frame is not None:
        frame.hand_over()  # Textual leaves the alternate screen itself
    try:
        app.run()
    finally:
        report = gateway.shutdown()  # idempotent; a backstop if the app ended some other way
        if frame is not None:
            frame.close()  # the terminal's own modes back, before anything is printed
    if app.exit_note:  # the quit gave up waiting for a worker: say so on the terminal too
        _error(app.exit_note)
    from desk.web_driver import served_to_browser

    web = served_to_browser()  # stdout carries the screen's packets: the lines go to stderr
    for line in exit_lines(app.resume_hint, report):
        _say(line, sys.stderr if web or line.startswith("desk: ") else sys.stdout)
    return app.return_code or 0


def exit_lines(resume_hint: str, report: ShutdownReport | None) -> list[str]:
    """What the terminal says once the screen is restored: where what could not be saved is
    (``desk: what could not be saved is in PATH``, on stderr), and how to resume the session
    that was on screen.

    Args:
        resume_hint: the app's :attr:`~desk.app.DeskApp.resume_hint`.
        report: the gateway's shutdown report.
    """
    lines = [
        f"desk: what could not be saved is in {path}" for path in (report.unsaved if report else [])
    ]
    if resume_hint:
        lines.append(resume_hint)
    return lines


def run() -> NoReturn:
    """The ``desk`` script (and ``python -m desk``): :func:`main`, then leave at once.

    When :func:`main` returns, all is done: the gateway's shutdown saved every session and closed
    the store, the tools' and MCP servers' processes are ended, the terminal is restored and the
    last lines are printed. Tearing the interpreter down after that (collecting the app's
    objects module by module, joining leftover threads) only kept the person waiting: 0.6-1 s on
    a busy 2-core machine. So the standard streams and logging are flushed and the process ends
    with ``os._exit``. A subcommand (``desk gateway``, ``serve``, ``run``, ``acp``) ends with no
    thread running while the interpreter finalizes
    (:func:`tui_gateway.stops.process_exit.exit_process`).
    """
    args = sys.argv[1:]
    code = main(args)
    if args and args[0] in SUBCOMMANDS:
        from tui_gateway.stops.process_exit import exit_process

        if args[0] == "run":  # its end is written: a late SIGTERM cannot kill the exit
            from tui_gateway.wire import run_early

            run_early.ignore_from_now()

        exit_process(code)
    leave_now(code)


def leave_now(code: int) -> NoReturn:
    """Flush stdout, stderr and logging, then end the process with ``code`` at once."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a terminal that hung up: nothing to flush to
            stream.flush()
    logging = sys.modules.get("logging")  # loaded by then; not imported before the first frame
    if logging is not None:
        logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    run()
