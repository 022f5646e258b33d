"""``desk web``: the desk served to a browser (``textual-serve``), one desk per connection.

``desk web [--host 127.0.0.1] [--port 8766] [--token-file PATH] [DESK FLAGS...]``. Every flag
that is not one of these three is desk's own (``--base-url``, ``--model``, ``--db``,
``--workspace``, ``--escdelay``...): they are checked once here, as ``desk`` would (a bad one
exits 2 before anything listens), and every browser connection runs ``python -m desk`` with
them, in this process's environment and folder, so each desk reads the same config file and
store as the terminal desk.

The token is ``desk serve``'s (:mod:`tui_gateway.wire.auth`: made once, kept in a 0600 file);
like ``desk serve``, ``desk web`` prints where it is, never the token itself. The person opens
``http://HOST:PORT/?token=TOKEN``, or the bare address and gives the token as the password when
the browser asks (:mod:`desk.web.server`).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

DEFAULT_PORT = 8766
"""``desk web``'s port when ``--port`` is not given (``desk serve`` has 8765)."""

LOOPBACK = ("127.0.0.1", "::1", "localhost")
"""Addresses only this machine reaches."""


def _fail(message: str) -> int:
    print(f"desk web: {message}", file=sys.stderr, flush=True)
    return 2


def web_parser() -> argparse.ArgumentParser:
    """The flags of ``desk web`` itself (the rest are desk's)."""
    p = argparse.ArgumentParser(
        prog="desk web",
        description="Serve the desk to a browser: one desk per connection, desk's flags after.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="TCP port (0 picks a free one)")
    p.add_argument("--token-file", metavar="PATH", help="where the token is kept")
    return p


def desk_command(desk_args: Sequence[str]) -> str:
    """The shell command textual-serve runs for each connection: this Python's ``-m desk``
    with ``desk_args``, quoted."""
    return shlex.join([sys.executable, "-m", "desk", *desk_args])


def main_web(argv: Sequence[str]) -> int:
    """Run ``desk web`` until SIGINT or SIGTERM.

    Args:
        argv: the arguments after ``web``.

    Returns:
        0 after a clean exit; 1 when the address cannot be bound; 2 for a bad flag or setting,
        or a token file that cannot be read or made.
    """
    from desk.config import ConfigError, parse_options
    from tui_gateway.settings.config_file import read_config_file
    from tui_gateway.wire.auth import TokenError, default_token_path, load_or_create_token

    args, desk_args = web_parser().parse_known_args(list(argv))
    if not 0 <= args.port <= 65535:
        return _fail("--port must be 0..65535")
    try:
        parse_options(desk_args, os.environ, read_config_file(os.environ))
    except ConfigError as exc:
        return _fail(exc.message)
    path = Path(args.token_file) if args.token_file else default_token_path(os.environ)
    try:
        token, created = load_or_create_token(path)
    except TokenError as exc:
        return _fail(exc.message)

    from agent import child_watcher
    from desk.web.handoff import TOKEN_FILE_ENV
    from desk.web.server import DeskWebServer

    # Each tab's desk is reaped by the server's loop through a pidfd: no waitpid thread, and
    # none left to warn "that handles pid N is closed" when SIGTERM ends the loop first.
    child_watcher.install()

    os.environ[TOKEN_FILE_ENV] = str(path.resolve())  # the served desks' file tools refuse it

    server = DeskWebServer(desk_command(desk_args), token=token, host=args.host, port=args.port)
    if args.host not in LOOPBACK:
        print(
            f"desk web: binding {args.host}: other machines can reach this server "
            "(every request still needs the token)",
            file=sys.stderr,
            flush=True,
        )
    made = "made a token; it is" if created else "the token is"
    print(f"desk web: {made} in {path} (readable by you only)", flush=True)

    def listening(url: str) -> None:
        print(f"desk web: open {url}/?token=TOKEN (TOKEN: the file's line)", flush=True)

    try:
        return server.run_foreground(on_listening=listening)
    except OSError as exc:
        print(f"desk web: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
