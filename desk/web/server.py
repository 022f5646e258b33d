"""The web server of ``desk web``: ``textual-serve``'s server behind a host check and a token.

:class:`DeskWebServer` is textual-serve's :class:`~textual_serve.server.Server` (its page, its
scripts and fonts, its WebSocket that runs one desk process per browser connection) with:

- a guard before every request (:func:`guard`): the ``Host`` must name this server (the same
  rule as ``desk serve``, :class:`tui_gateway.wire.host_check.HostNames`: a guard against DNS
  rebinding), a WebSocket's ``Origin`` too (a page of another site cannot drive the desk), and
  the request must carry the token (``desk serve``'s, :mod:`tui_gateway.wire.auth`): in the URL
  (``/?token=...``, answered with a cookie and a redirect to ``/``, so the token leaves the
  address bar), in that cookie (``HttpOnly``, ``SameSite=Strict``), or as the password of the
  browser's own login prompt (HTTP Basic; any user name);
- its own page (``app_index.html`` beside this file: textual-serve's, with the font loaded from
  the package instead of the internet) and addresses taken from the request, so a server on a
  port picked by the system (``--port 0``) or reached by another name works;
- a foreground run (:meth:`DeskWebServer.run_foreground`) that says where it listens, and on
  SIGINT/SIGTERM closes every browser's connection: each desk then stops its turns as
  ``web.disconnect`` and exits before the server does (bounded by its own shutdown bound).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
from aiohttp import web
from textual_serve.server import Server

from tui_gateway.wire.auth import token_ok
from tui_gateway.wire.host_check import HostNames

COOKIE = "desk_web_token"
"""The cookie that carries the token once the page was opened with it."""

HERE = Path(__file__).resolve().parent
"""Where ``app_index.html`` is."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def basic_password(header: str | None) -> str | None:
    """The password of an ``Authorization: Basic`` header, or None (no header, another scheme,
    or not base64 of ``user:password``)."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, colon, password = decoded.partition(":")
    return password if colon else None


def _local_address(request: web.Request) -> tuple[str, int] | None:
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    if isinstance(sockname, tuple) and len(sockname) >= 2:
        return str(sockname[0]), int(sockname[1])
    return None


def guard(names: HostNames, token: str) -> Any:
    """The aiohttp middleware in front of every request (see the module docstring).

    Args:
        names: the ``Host`` values this server answers for.
        token: the token every request must carry.

    Returns:
        the middleware (421 for a foreign ``Host``, 403 for a foreign WebSocket ``Origin``,
        401 with a Basic login prompt without the token, a redirect to the same page without
        the token when it came in the URL).
    """

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        server = _local_address(request)
        if not names.allows(request.headers.get("Host"), server):
            raise web.HTTPMisdirectedRequest(text="desk web does not answer for that host\n")
        origin = request.headers.get("Origin")
        if (
            request.path == "/ws"
            and origin is not None
            and not names.allows(urlsplit(origin).netloc or None, server)
        ):
            raise web.HTTPForbidden(text="a page of another site may not open the desk\n")
        in_url = request.query.get("token")
        if token_ok(in_url, token):
            query = {k: v for k, v in request.query.items() if k != "token"}
            target = request.rel_url.with_query(query)
            response = web.Response(status=303, headers={"Location": str(target)})
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
            return response
        carried = request.cookies.get(COOKIE) or basic_password(
            request.headers.get("Authorization")
        )
        if not token_ok(carried, token):
            raise web.HTTPUnauthorized(
                text="open the address desk web printed, with its token\n",
                headers={"WWW-Authenticate": 'Basic realm="desk", charset="UTF-8"'},
            )
        return await handler(request)

    return check


class DeskWebServer(Server):
    """textual-serve's server for desk (see the module docstring).

    Args:
        command: the shell command that runs one desk (``python -m desk FLAGS``).
        token: the token every request must carry.
        host: the address to bind.
        port: the TCP port (0: the system picks one).
    """

    def __init__(self, command: str, *, token: str, host: str, port: int) -> None:
        super().__init__(command, host=host, port=port, title="desk", templates_path=HERE)
        self._token = token
        self._names = HostNames(host)
        self._handlers: set[asyncio.Task[Any]] = set()

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(guard(self._names, self._token))
        return app

    async def on_startup(self, app: web.Application) -> None:
        """Nothing printed here (textual-serve prints a banner): :meth:`run_foreground` says
        where the server listens."""

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        """The page: the terminal, with addresses taken from the request's own ``Host``."""
        size = request.query.get("fontsize", "16")
        return {
            "font_size": int(size) if size.isdigit() and 6 <= int(size) <= 64 else 16,
            "app_websocket_url": f"ws://{request.host}/ws",
            "config": {"static": {"url": "/static/"}},
            "application": {"name": self.title},
        }

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One browser connection: one desk process, ended when the connection ends."""
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            return await super().handle_websocket(request)
        finally:
            if task is not None:
                self._handlers.discard(task)

    def run_foreground(self, on_listening: Callable[[str], None]) -> int:
        """Serve until SIGINT or SIGTERM, then end every browser's desk and return 0.

        Args:
            on_listening: called with ``http://HOST:PORT`` once the socket listens.

        Raises:
            OSError: the address cannot be bound.
        """
        asyncio.run(self._serve(on_listening))
        return 0

    async def _serve(self, on_listening: Callable[[str], None]) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        runner = web.AppRunner(await self._make_app(), handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
            host, port = runner.addresses[0][:2]
            shown = f"[{host}]" if ":" in str(host) else str(host)
            on_listening(f"http://{shown}:{port}")
            await stop.wait()
            await self._end_connections()
        finally:
            await runner.cleanup()

    async def _end_connections(self) -> None:
        """Close every browser connection; each handler waits for its desk to exit."""
        handlers = list(self._handlers)
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
