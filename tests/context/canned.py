"""A loopback HTTP server that answers fixed JSON per route: the shapes other servers send.

Not a mock: a real server on 127.0.0.1 that desk's real httpx client talks to, for the
endpoints the demo model does not imitate (Ollama's ``/api/show``, vLLM's ``/v1/models``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def canned_server(routes: dict[tuple[str, str], Any]) -> Iterator[str]:
    """Serve ``{(method, path): json_value}``; yields the root URL ``http://127.0.0.1:PORT``.

    Unknown routes answer 404. Bodies of POST requests are read and ignored.
    """

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            value = routes.get((method, self.path))
            body = json.dumps(value if value is not None else {"error": "not found"}).encode()
            self.send_response(200 if value is not None else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self._answer("GET")

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            self._answer("POST")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="canned-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
