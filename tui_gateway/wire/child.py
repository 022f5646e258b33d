"""A JSON-RPC 2.0 peer in a child process: requests over its stdin, answers from its stdout.

:class:`ChildRpc` starts the command in a session of its own (``start_new_session``, so a
Ctrl+C typed in the terminal reaches the parent only), numbers the requests and matches each
answer to its waiting caller; every other line (a notification) goes to ``on_notification``, on
the reader thread, in the order the child wrote it. When the child's stdout ends, ``on_exit``
runs once on the reader thread, then every request still waiting fails. It knows nothing of the
gateway's methods: :class:`~tui_gateway.wire.client.RemoteGateway` is built on it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import IO, Any

from contract import GATEWAY_ERROR
from contract.errors import GatewayError
from tui_gateway.wire.codec import dumps
from tui_gateway.wire.dispatch import parse_line

_log = logging.getLogger(__name__)

NotificationCallback = Callable[[Any, Any], None]
"""Called with a notification's ``method`` and ``params`` (as they came, unchecked)."""


class ChildRpc:
    """A child process spoken to in newline-delimited JSON-RPC 2.0.

    Args:
        argv: the child's command line.
        on_notification: gets each notification the child writes (on the reader thread).
        on_exit: called once, on the reader thread, when the child's stdout has ended.
        env: the child's environment (default: this process's).
        cwd: the child's working directory.
        stderr: where the child's stderr goes (default: this process's stderr).

    Raises:
        GatewayError: the command could not be started.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        on_notification: NotificationCallback,
        on_exit: Callable[[], None],
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: int | IO[Any] | None = None,
    ) -> None:
        self._on_notification = on_notification
        self._on_exit = on_exit
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pending: dict[int, Future[Any]] = {}
        self._exited = False
        try:
            self.proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise GatewayError(f"cannot start the gateway {argv[0]!r}: {exc}") from exc
        self._reader = threading.Thread(
            target=self._read_loop, name="desk-remote-reader", daemon=True
        )
        self._reader.start()

    # -- the process -------------------------------------------------------------------------------

    def wait_exit(self, timeout_s: float) -> int | None:
        """Wait (bounded) for the child to exit; returns its status, or None if it still runs."""
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def close_stdin(self) -> None:
        """Close the child's stdin (its end of file); the answers it sends still arrive."""
        with self._write_lock:
            stdin = self.proc.stdin
            if stdin is not None and not stdin.closed:
                with contextlib.suppress(OSError):
                    stdin.close()

    def end(self, timeout_s: float) -> None:
        """Close stdin and wait ``timeout_s`` seconds for the exit; then SIGTERM, then SIGKILL
        (2 s each), until it has exited; then wait (bounded) for the reader and close stdout."""
        self.close_stdin()
        if self.wait_exit(timeout_s) is None:
            self.proc.terminate()
            if self.wait_exit(2.0) is None:
                self.proc.kill()
                self.wait_exit(2.0)
        self._reader.join(2.0)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def kill(self) -> None:
        """SIGKILL the child now, and wait (2 s at most) for it to be gone."""
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.wait_exit(2.0)

    # -- requests ----------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        data = (dumps(message) + "\n").encode("utf-8")
        with self._write_lock:
            stdin = self.proc.stdin
            if stdin is None or stdin.closed:
                raise GatewayError("the gateway connection is closed")
            try:
                stdin.write(data)
                stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:
                raise GatewayError("the gateway process has exited") from exc

    def request(self, method: str, params: Any, timeout_s: float) -> Any:
        """Send a request and wait (bounded) for its result.

        Args:
            method: the method's wire name.
            params: JSON-ready params (an object).
            timeout_s: how long to wait for the answer, in seconds.

        Returns:
            the answer's ``result``, as JSON data.

        Raises:
            GatewayError: the error the child answered (with its code), no answer in time, or
                the child has exited.
        """
        request_id = next(self._ids)
        future: Future[Any] = Future()
        with self._lock:
            if self._exited:
                raise GatewayError("the gateway process has exited")
            self._pending[request_id] = future
        try:
            self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            return future.result(timeout_s)
        except FutureTimeout:
            raise GatewayError(f"{method}: no answer from the gateway in time") from None
        finally:
            with self._lock:
                self._pending.pop(request_id, None)

    # -- the reader thread -------------------------------------------------------------------------

    def _read_loop(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            for line in stdout:
                self._on_line(line)
        except (OSError, ValueError):
            pass
        finally:
            self._ended()

    def _on_line(self, line: bytes) -> None:
        message, error = parse_line(line)
        if error is not None or not isinstance(message, dict):
            _log.warning("the gateway wrote a line that is not a JSON-RPC message: %.200r", line)
            return
        if "id" in message and ("result" in message or "error" in message):
            self._answer(message)
            return
        self._on_notification(message.get("method"), message.get("params"))

    def _answer(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        with self._lock:
            future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is None:
            return
        failure = message.get("error")
        if isinstance(failure, dict):
            code = failure.get("code")
            future.set_exception(
                GatewayError(
                    str(failure.get("message", "error")),
                    code=code if isinstance(code, int) else GATEWAY_ERROR,
                )
            )
        else:
            future.set_result(message.get("result"))

    def _ended(self) -> None:
        with self._lock:
            self._exited = True
            pending = list(self._pending.values())
            self._pending.clear()
        self._on_exit()
        failure = GatewayError("the gateway process has exited")
        for future in pending:
            if not future.done():
                future.set_exception(failure)
