"""The wire commands: ``desk gateway --stdio``, ``desk serve`` and ``desk run``.

Each ``main_*`` function takes the arguments after its subcommand and returns the process exit
code; ``python -m tui_gateway.wire {gateway,serve,run} ...`` runs them without desk. They take
desk's settings (:mod:`tui_gateway.settings.resolution`: ``--base-url --model --api-key --db
--context-window --workspace --demo``, their environment variables and the config file) and
build their gateway with :func:`tui_gateway.assembly.build_gateway`; a bad flag, setting or
database prints one line on stderr and returns 2. ``--demo`` needs the ``demo`` starter the entry
point passes in (desk's does; ``python -m tui_gateway.wire`` has none).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import contract as c
from tui_gateway.assembly import build_gateway
from tui_gateway.settings.resolution import SettingsError
from tui_gateway.wire.options import (
    DemoModel,
    UsageError,
    fail,
    parse,
    parser,
    provider_from,
    settings_from,
)


def main_gateway_stdio(argv: Sequence[str], demo: DemoModel | None = None) -> int:
    """``desk gateway --stdio``: serve the gateway as JSON-RPC on stdin/stdout until EOF.

    stdout carries protocol lines only: anything else this process prints goes to stderr.

    Returns:
        0 after the frontend went away or asked for ``gateway.shutdown``; 2 for a bad flag.
    """
    from tui_gateway.wire.stdio import StdioServer

    prog = "desk gateway"
    p = parser(prog, "Serve desk's gateway as newline-delimited JSON-RPC 2.0 on stdin/stdout.")
    p.add_argument("--stdio", action="store_true", help="speak JSON-RPC on stdin/stdout")
    p.add_argument(
        "--replay-events",
        type=int,
        default=c.REPLAY_CAPACITY,
        metavar="N",
        help=f"events kept per session for session.events.since (default {c.REPLAY_CAPACITY})",
    )
    p.add_argument("--max-sessions", type=int, default=8, metavar="N", help="live sessions kept")
    try:
        args = parse(p, argv)
        if not args.stdio:
            raise UsageError("only --stdio is served here (desk serve speaks HTTP)")
        if args.replay_events < 1 or args.max_sessions < 1:
            raise UsageError("--replay-events and --max-sessions must be >= 1")
        settings = settings_from(args, os.environ)
    except SettingsError as exc:
        return fail(prog, exc.message)
    out_fd = os.dup(1)  # protocol lines only: stray prints land on stderr
    os.dup2(2, 1)
    try:
        with provider_from(settings, demo) as provider:
            gateway = build_gateway(
                settings, provider.config, max_sessions=args.max_sessions, tools=not args.no_tools
            )
            ready = c.Ready(
                protocol_version=c.PROTOCOL_VERSION,
                model=provider.config.model,
                base_url=provider.config.base_url,
                demo=provider.demo,
                replay_capacity=args.replay_events,
                pid=os.getpid(),
            )
            server = StdioServer(
                gateway, in_fd=0, out_fd=out_fd, ready=ready, replay_capacity=args.replay_events
            )
            if threading.current_thread() is threading.main_thread():
                server.install_signals()
            return server.serve()
    except SettingsError as exc:
        return fail(prog, exc.message)
    finally:
        os.close(out_fd)


def main_serve(argv: Sequence[str], demo: DemoModel | None = None) -> int:
    """``desk serve``: the gateway over HTTP (sessions, SSE runs, stops, an OpenAI facade), and
    the config file's schedules (:mod:`tui_gateway.schedules`).

    Prints the address once listening, and where the API token file is (never the token). SIGINT
    and SIGTERM shut the gateway down (a system stop) before the server exits.

    Returns:
        0 after a clean exit; 1 when the server failed; 2 for a bad flag.
    """
    from tui_gateway.wire.auth import TokenError, default_token_path, load_or_create_token
    from tui_gateway.wire.http_server import HttpServer
    from tui_gateway.wire.schedule_cli import serve_schedules

    prog = "desk serve"
    p = parser(prog, "Serve desk's gateway over HTTP with server-sent events.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="TCP port (0 picks a free one)")
    p.add_argument("--token-file", metavar="PATH", help="where the API token is kept")
    p.add_argument("--max-sessions", type=int, default=64, metavar="N", help="live sessions kept")
    try:
        args = parse(p, argv)
        if not 0 <= args.port <= 65535:
            raise UsageError("--port must be 0..65535")
        settings = settings_from(args, os.environ)
        path = Path(args.token_file) if args.token_file else default_token_path(os.environ)
        try:
            token, created = load_or_create_token(path)
        except TokenError as exc:
            raise UsageError(exc.message) from None
        with provider_from(settings, demo) as provider:
            gateway = build_gateway(
                settings,
                provider.config,
                max_sessions=args.max_sessions,
                tools=not args.no_tools,
                denied=(path,),
            )
            scheduler = serve_schedules(
                settings, provider.config, gateway, tools=not args.no_tools, denied=(path,)
            )
            server = HttpServer(
                gateway,
                token,
                host=args.host,
                port=args.port,
                before_shutdown=scheduler.stop if scheduler is not None else None,
            )
            if args.host not in ("127.0.0.1", "::1", "localhost"):
                print(
                    f"desk serve: binding {args.host}: other machines can reach this server "
                    "(every request still needs the token)",
                    file=sys.stderr,
                    flush=True,
                )
            # Where the token is, never the token: a terminal's scrollback, a log or a shared
            # screen would keep it. The file is the user's alone (0600).
            made = "made an API token; it is" if created else "the API token is"
            print(f"desk serve: {made} in {path} (readable by you only)", flush=True)
            return server.run_foreground(
                on_listening=lambda url: print(
                    f"desk serve: listening on {url} (model {provider.config.model})", flush=True
                )
            )
    except SettingsError as exc:
        return fail(prog, exc.message)


def main_run(argv: Sequence[str], demo: DemoModel | None = None) -> int:
    """``desk run "prompt"``: one headless turn, its reply streamed to stdout (``--json``: the
    run's events, one JSON object a line).

    Returns:
        0 completed, 130 stopped by the user (Ctrl+C), 143 stopped by the system (SIGTERM,
        SIGHUP),
        1 failed (one line on stderr), 2 for a bad flag.
    """
    from tui_gateway.wire import run_early

    prog = "desk run"
    p = parser(prog, "Run one turn headless and print the reply.")
    p.add_argument("prompt", help="the prompt ('-' reads it from stdin)")
    p.add_argument(
        "--session", metavar="ID", help="continue a saved session (needs a session database: --db)"
    )
    p.add_argument(
        "--yes", action="store_true", help="allow tool calls that need approval (default: deny)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="write the run's events as JSON lines instead of the reply (docs/protocol.md)",
    )
    gateway = None
    try:
        # Ctrl+C, SIGTERM and SIGHUP until run_turn takes them: a stop before the start (one
        # kept since the entry point's first lines is raised here)
        run_early.arm()
        from tui_gateway.wire.headless import run_turn

        args = parse(p, argv)
        prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
        if not prompt.strip():
            raise UsageError("the prompt is empty")
        settings = settings_from(args, os.environ)
        with provider_from(settings, demo, listed_only=True) as provider:
            gateway = build_gateway(settings, provider.config, tools=not args.no_tools)
            return run_turn(
                gateway, prompt, session_id=args.session, approve=args.yes, json=args.json
            )
    except SettingsError as exc:
        return fail(prog, exc.message)
    except KeyboardInterrupt as exc:  # Ctrl+C, SIGTERM or SIGHUP before run_turn took them over
        if gateway is not None:
            gateway.shutdown()  # idempotent: nothing survives the run
        return run_early.stopped_before_start(run_early.wants_json(argv), by=exc)
    except Exception:  # a signal's raise an import turned into another error: still the stop
        signum = run_early.pending()
        if signum is None:
            raise
        if gateway is not None:
            gateway.shutdown()
        by = run_early.stop_raised(signum)
        return run_early.stopped_before_start(run_early.wants_json(argv), by=by)
