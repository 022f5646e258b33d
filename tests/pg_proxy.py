"""A loopback TCP proxy in front of a database server, that the test can cut and restore.

It stands for the network between a gateway host and its database: :meth:`Proxy.cut` closes
every connection through it and refuses new ones (the database "goes away" for whoever uses
the proxy's address, while the server itself and everyone else carry on); :meth:`Proxy.restore`
lets connections through again.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class Proxy:
    """Forwards 127.0.0.1:``port`` to ``upstream_port`` of 127.0.0.1.

    Args:
        upstream_port: the server's port.
    """

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._down = False
        self._closed = False
        self.accepted = 0
        """Connections accepted so far (refused ones included)."""
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    def url(self, database: str, user: str = "desk") -> str:
        """A database URL through the proxy."""
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                refuse = self._down or self._closed
            if refuse:
                _close(client)
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self._upstream), timeout=5)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            _close(source)
            _close(target)

    def cut(self) -> None:
        """Close every connection through the proxy and refuse new ones."""
        with self._lock:
            self._down = True
            sockets, self._open = self._open, []
        for sock in sockets:
            _close(sock)

    def restore(self) -> None:
        """Let connections through again."""
        with self._lock:
            self._down = False

    def close(self) -> None:
        """Stop listening and close every connection."""
        with self._lock:
            self._closed = True
        self.cut()
        _close(self._listener)
        self._thread.join(timeout=5)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
