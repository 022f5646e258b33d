"""``desk`` / ``python -m desk``: resolve the model server, run the app, clean up.

Exit codes: 0 after a normal quit (Ctrl+Q, or SIGTERM/SIGHUP handled as a system quit),
2 for a bad flag or an unusable configured server (one line on stderr, no traceback),
1 when the app crashed (Textual restores the terminal and prints the error), 130 for Ctrl+C
before the app started.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from agent.provider.client import ProviderConfig
from desk.app import DeskApp
from desk.config import ConfigError, ConnectionInfo, choose_server, parse_options
from desk.startup import Startup, open_store
from desk.user_config import file_settings
from tui_gateway.gateway import Gateway, GatewayConfig

SWITCH_INTERVAL_S = 0.001
"""GIL switch interval desk runs with, in seconds (Python's default is 0.005)."""


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


def _error(message: str) -> None:
    print(f"desk: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the desk.

    Args:
        argv: arguments after the program name (default ``sys.argv[1:]``).

    Returns:
        the process exit code (see the module docstring).
    """
    args = sys.argv[1:] if argv is None else list(argv)
    _tune_switch_interval(os.environ)
    demo = None
    try:
        try:
            options = parse_options(args, os.environ, file_settings(os.environ))
            choice = choose_server(options)
        except ConfigError as exc:
            _error(exc.message)
            return 2
        api_key = options.api_key
        if choice.base_url is None:
            from desk.demo import start_demo_server

            try:
                demo = start_demo_server()
            except Exception as exc:  # the fallback itself failed: say so, no traceback
                _error(f"cannot start the demo model: {exc}")
                return 1
            model = options.model or demo.config.model
            connection = ConnectionInfo(model, demo.base_url, is_demo=True, source=choice.source)
            api_key = None
        else:
            assert choice.model is not None
            connection = ConnectionInfo(choice.model, choice.base_url, source=choice.source)
        provider = ProviderConfig(
            base_url=connection.base_url, model=connection.model, api_key=api_key
        )
        store, notice = open_store(options.db_path)  # None (in memory) with a notice on failure
        gateway = Gateway(GatewayConfig(provider=provider), store=store)
        startup = Startup(resume=options.resume, resume_id=options.resume_id, notice=notice)
        app = DeskApp(gateway, connection, escape_delay_ms=options.escape_delay_ms, startup=startup)
        try:
            app.run()
        finally:
            gateway.shutdown()  # idempotent; a backstop if the app ended some other way
        if app.exit_note:  # the quit gave up waiting for a worker: say so on the terminal too
            _error(app.exit_note)
        return app.return_code or 0
    except KeyboardInterrupt:
        return 130
    finally:
        if demo is not None:
            demo.stop()


if __name__ == "__main__":
    sys.exit(main())
