"""``desk serve`` answers only for its own address: a guard against DNS rebinding.

A web page on ``http://evil.example:8765`` can make its name resolve to 127.0.0.1 a moment
after it loaded, and then talk to a server on the person's own machine from inside their
browser: the browser still believes it talks to ``evil.example``, and sends that name in the
``Host`` header. A bearer token stops such a page from running turns, but not from probing; a
server that answers only for the names it is really reached by stops it before anything else
runs (the check comes before the token's).

:class:`HostCheck` lets a request through when its ``Host`` is ``localhost``, ``127.0.0.1``,
``[::1]``, the address the server was told to bind, or the local address the connection came in
on (a server bound to ``0.0.0.0`` is reached by whatever address the machine has), with the
port the connection came in on (no port only when that is 80). The connection's own address
and port come from the ASGI scope (``scope["server"]``), so the check needs no port of its own.
A rebinding page always sends a *name* (that is what it rebinds), never one of these. Anything
else gets ``421 Misdirected Request`` and one line.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")
"""Host names every ``desk serve`` answers for."""


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def split_host(header: str) -> tuple[str, int | None]:
    """``"Example.com:8765"`` -> ``("example.com", 8765)``; ``"[::1]"`` -> ``("[::1]", None)``.

    Raises:
        ValueError: the port is not a number.
    """
    header = header.strip().lower()
    if header.startswith("["):
        end = header.find("]")
        name, rest = header[: end + 1], header[end + 1 :]
        port = rest.removeprefix(":") if rest.startswith(":") else None
        if rest and port is None:
            raise ValueError(f"not a host: {header!r}")
    else:
        name, _, port = header.partition(":")
        port = port if _ else None
    if port is not None and not port.isdigit():
        raise ValueError(f"not a port: {port!r}")
    return name, int(port) if port is not None else None


class HostNames:
    """The ``Host`` values a server bound to ``host`` answers for (see the module docstring).

    Args:
        host: the address the server was told to bind (a name or an IP address).
    """

    def __init__(self, host: str) -> None:
        self.names = frozenset((*LOCAL_NAMES, _bracketed(host.lower())))

    def allows(self, header: str | None, server: tuple[str, int] | None) -> bool:
        """True when a ``Host`` header value names this server.

        Args:
            header: the ``Host`` value; None (no header) is refused.
            server: the local address and port the connection came in on (``scope["server"]``),
                or None when unknown (then any port is taken).
        """
        if not header:
            return False
        try:
            name, port = split_host(header)
        except ValueError:
            return False
        if server is not None:
            address, bound = server
            if port != bound and not (port is None and bound == 80):
                return False
            if name == _bracketed(str(address).lower()):
                return True
        return name in self.names


class HostCheck:
    """ASGI middleware: refuse (421) an HTTP request whose ``Host`` is not this server's.

    Args:
        app: the application behind the check.
        host: the address the server was told to bind (a name or an IP address).
    """

    def __init__(self, app: ASGIApp, *, host: str) -> None:
        self.app = app
        self._names = HostNames(host)

    def allows(self, header: str | None, server: tuple[str, int] | None) -> bool:
        """True when a ``Host`` header value names this server (:meth:`HostNames.allows`)."""
        return self._names.allows(header, server)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = None
            for key, value in scope.get("headers", ()):
                if key == b"host":
                    header = value.decode("latin-1")
                    break
            raw = scope.get("server")
            server = (str(raw[0]), int(raw[1])) if raw and raw[1] is not None else None
            if not self.allows(header, server):
                port = server[1] if server is not None else None
                await _refuse(send, header, port)
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, header: str | None, port: int | None) -> None:
    shown = json.dumps(header) if header is not None else "none"
    where = f":{port}" if port is not None else ""
    line = (
        f"desk serve does not answer for the host {shown}; "
        f"use http://127.0.0.1{where} or http://localhost{where}\n"
    )
    body = line.encode("utf-8")
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    await send({"type": "http.response.start", "status": 421, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


__all__ = ["HostCheck", "HostNames", "LOCAL_NAMES", "split_host"]
