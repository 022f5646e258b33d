"""Opening one MCP server's message streams: stdio behind the guard, or streamable HTTP.

Imports the MCP SDK, so it is imported on the MCP loop when a server first starts, never when
desk starts (the SDK takes about a second to import).

stdio goes through :func:`agent.mcp.stdio.capped_stdio` (the SDK's ``stdio_client`` with a cap
on one message, ``max_result_mb``): it starts the program in a new session (its own process
group) and at the end closes its stdin, waits, then sends SIGTERM and, after a grace, SIGKILL
to the group. The program it is given is the keeper
and guard (:mod:`agent.guard`) with the server's command line after it: the SDK's SIGTERM
reaches the keeper, which ends every descendant of the server (a ``setsid`` one included), and
the tree also ends when desk dies without that cleanup. The server's stderr goes to a pipe
read on the loop (:class:`StderrTail`): it must never reach desk's terminal, and its last lines
say why a server failed.

Streamable HTTP goes through the SDK's ``streamable_http_client`` on an HTTP client whose
transport caps each answer at ``max_result_mb`` too (:mod:`agent.mcp.http_cap`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.stdio import FORCE_KILL_TIMEOUT, PROCESS_TERMINATION_TIMEOUT
from mcp.client.streamable_http import streamable_http_client

from agent import child_watcher, guard
from agent.mcp.http_cap import CappedTransport, capped_messages
from agent.mcp.status import ServerSpec
from agent.mcp.stdio import QUIT_EXIT_WAIT_S, capped_stdio
from agent.terminal_text import terminal_safe
from agent.valid_text import loads

# The SDK logs what it copes with (a bad line, a server gone) as warnings and tracebacks; with no
# handler Python would print them on stderr, which is desk's screen. desk reports them itself.
logging.getLogger("mcp").addHandler(logging.NullHandler())

GUARD = Path(guard.__file__).resolve()
"""The guard script, run by path."""

Streams = tuple[Any, Any]
"""The transport's (read stream, write stream) pair, as ``ClientSession`` takes them."""

_LINES_KEPT = 20
_LINE_CHARS = 300
_READ = 65_536


class StderrTail:
    """A pipe for a server's stderr, read on the loop; keeps its last lines and the guard's.

    Make it on the loop, :meth:`attach` it, hand :attr:`writer` to the transport, call
    :meth:`spawned` once the process runs and :meth:`close` at the end.
    """

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._fd: int | None = read_fd
        self.writer = os.fdopen(write_fd, "w")
        """The write end, handed to the transport as the server's stderr."""
        self.lines: deque[str] = deque(maxlen=_LINES_KEPT)
        """The last lines the server wrote (each cut to 300 characters, made terminal-safe)."""
        self.exit: str | None = None
        """How the server exited, from the guard (``3``, ``signal SIGKILL``), once it did."""
        self.group: int | None = None
        """The server's process group, from the guard's first line."""
        self._partial = b""
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self) -> None:
        """Start reading on the running loop."""
        loop = asyncio.get_running_loop()
        assert self._fd is not None
        loop.add_reader(self._fd, self._drain)
        self._loop = loop

    def spawned(self) -> None:
        """Close this process's copy of the write end (the server holds its own)."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def _drain(self, rounds: int = 8) -> None:
        """Read what is there (at most ``rounds`` chunks: a flood of stderr must not hold the
        loop; the reader is called again for the rest)."""
        for _ in range(rounds):
            if self._fd is None:
                return
            try:
                data = os.read(self._fd, _READ)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._detach()
                return
            self._take(data)

    def _take(self, data: bytes) -> None:
        *complete, self._partial = (self._partial + data).split(b"\n")
        if len(self._partial) > _READ:
            complete.append(self._partial)
            self._partial = b""
        for raw in complete:
            line = terminal_safe(raw.decode("utf-8", "replace")).strip()
            if line.startswith(guard.EXIT_MARK):
                self.exit = line.removeprefix(guard.EXIT_MARK)
            elif line.startswith(guard.GROUP_MARK):
                with contextlib.suppress(ValueError):
                    self.group = int(line.removeprefix(guard.GROUP_MARK))
            elif line:
                self.lines.append(line[:_LINE_CHARS])

    def _detach(self) -> None:
        if self._fd is None:
            return
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._fd)
        os.close(self._fd)
        self._fd = None

    def close(self) -> None:
        """Read what is left in the pipe (up to 4 MiB), then close it."""
        self.spawned()
        self._drain(rounds=64)
        if self._partial:
            self._take(b"\n")
        self._detach()

    def summary(self) -> str:
        """``exited with code 3: <last line>`` / ``killed by SIGKILL`` / the last line / ""."""
        last = self.lines[-1] if self.lines else ""
        if self.exit is None:
            return last
        how = f"killed by {self.exit[7:]}" if self.exit.startswith("signal ") else None
        how = how or f"exited with code {self.exit}"
        return f"{how}: {last}" if last else how


def reread(error: Exception) -> Any:
    """The message of a line the SDK refused only for a lone surrogate, read again as valid text.

    The SDK's parser refuses JSON that escapes a lone surrogate (``"\\ud800"``), though it is
    valid JSON; the line is read again by :func:`agent.valid_text.loads` (the surrogate becomes
    U+FFFD) and checked as a JSON-RPC message.

    Args:
        error: what the transport passed on instead of a message.

    Returns:
        the ``SessionMessage``, or None when the line is not a JSON-RPC message for another
        reason (the server broke the protocol).
    """
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    errors = getattr(error, "errors", None)
    if not callable(errors):
        return None
    try:
        first = errors()[0]
        line = first.get("input")
        if first.get("type") != "json_invalid" or not isinstance(line, str | bytes):
            return None
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        if "\\u" not in line:
            return None
        message = jsonrpc_message_adapter.validate_python(loads(line), by_name=False)
    except (ValueError, LookupError, TypeError):
        return None
    return SessionMessage(message)


@contextlib.asynccontextmanager
async def open_streams(
    spec: ServerSpec,
    *,
    cwd: Path,
    stderr: StderrTail | None,
    grace_s: float,
    quitting: Callable[[], bool] = lambda: False,
) -> AsyncIterator[Streams]:
    """The read and write streams of one server, open for the block.

    Args:
        spec: the server.
        cwd: the working directory of a stdio server.
        stderr: where a stdio server's stderr goes (attached to the running loop here); None
            for an HTTP server.
        grace_s: seconds the guard gives the tree between SIGTERM and SIGKILL; at most half
            the SDK's own grace (``FORCE_KILL_TIMEOUT``, 2 s), after which the SDK kills the
            keeper: the keeper must have ended the tree by then.
        quitting: asked when the block ends: True when desk quits, and a stdio server then
            gets :data:`~agent.mcp.stdio.QUIT_EXIT_WAIT_S` to exit by itself, not 2 s.

    Raises:
        OSError: a stdio server's guard cannot be started.
    """
    cap = max(1, int(spec.max_result_mb * 1_000_000))
    if spec.command is not None:
        assert stderr is not None, "a stdio server needs somewhere for its stderr"
        stderr.attach()
        child_watcher.install()
        keeper = guard.command_line(os.getpid(), min(grace_s, FORCE_KILL_TIMEOUT / 2))
        async with capped_stdio(
            [*keeper, spec.command, *spec.args],
            env=dict(spec.env),
            cwd=cwd,
            errlog=stderr.writer,
            cap=cap,
            exit_wait_s=lambda: QUIT_EXIT_WAIT_S if quitting() else PROCESS_TERMINATION_TIMEOUT,
        ) as streams:
            stderr.spawned()
            yield streams
        return
    assert spec.url is not None
    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's own defaults for MCP over HTTP
    capped = CappedTransport(httpx2.AsyncHTTPTransport(), cap)
    async with (
        httpx2.AsyncClient(headers=dict(spec.headers), timeout=timeout, transport=capped) as client,
        # The cap is ours (one limit for JSON bodies and events alike), not the SDK's 1 MiB.
        streamable_http_client(spec.url, http_client=client, max_sse_event_size=None) as streams,
    ):
        read, write = streams
        yield capped_messages(read, capped), write


__all__ = ["GUARD", "StderrTail", "Streams", "open_streams", "reread"]
