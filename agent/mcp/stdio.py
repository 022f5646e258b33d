"""A stdio MCP server's streams, with a cap on the size of one message.

The SDK's own ``stdio_client`` keeps a line in memory until its newline, however long, and
copies it on every read (a 50 MB answer took minutes); this transport reads the server's stdout
through :class:`agent.mcp.line_cap.LineCap`: a message past the cap is read and dropped, and
passed on as :class:`TooLarge` (the connection answers the call with an error, see
:mod:`agent.mcp.connection`). Everything else is the SDK's behaviour, with its own pieces:
the program starts in a new session (its own process group); at the end its stdin is closed,
then after ``PROCESS_TERMINATION_TIMEOUT`` (or the shorter wait its caller asks for: desk
quitting, :data:`QUIT_EXIT_WAIT_S`) its group gets SIGTERM and, after a grace, SIGKILL.

Imports the MCP SDK: imported on the MCP loop only (see :mod:`agent.mcp.transport`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import mcp_types
from anyio.abc import Process
from mcp.client.stdio import (
    FORCE_KILL_TIMEOUT,
    PROCESS_TERMINATION_TIMEOUT,
    get_default_environment,
)
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from agent.mcp.line_cap import Cut, LineCap, Runaway

_log = logging.getLogger(__name__)

QUIT_EXIT_WAIT_S = 0.2
"""How long a server may take to exit by itself after its stdin closed when desk quits, in
seconds, before its group gets SIGTERM: the SDK's 2 s (a Python server took 2.6 s at load 30)
made a quit with two servers take 2.3 s."""

ANSWER_CUT = -32019
"""The error code of the answer desk makes for a call whose real answer was too large (in the
JSON-RPC band MCP leaves to implementations); never sent on the wire."""

_READ = 1 << 20
_FLUSH_S = 0.5
_REAP_S = 2.0


class TooLarge(Exception):
    """A message from the server longer than the cap, dropped unread.

    Attributes:
        request_id: the request it answers, or None when it could not be found.
        size: the bytes read of it.
        cap: the cap, in bytes.
        runaway: True when it went on past four times the cap without ending (nothing more
            is read from the server).
    """

    def __init__(self, request_id: int | str | None, size: int, cap: int, *, runaway: bool):
        self.request_id = request_id
        self.size = size
        self.cap = cap
        self.runaway = runaway
        super().__init__(self.describe())

    def answer(self) -> SessionMessage | None:
        """The error answer that ends the call it was for (code :data:`ANSWER_CUT`), or None
        when its request is not known."""
        if self.request_id is None:
            return None
        error = mcp_types.ErrorData(code=ANSWER_CUT, message=self.describe())
        return SessionMessage(
            mcp_types.JSONRPCError(jsonrpc="2.0", id=self.request_id, error=error)
        )

    def describe(self) -> str:
        """One line: ``the answer was cut: the server sent more than 50 MB in one message ...``."""
        limit = f"{self.cap / 1_000_000:g} MB"
        if self.runaway:
            return (
                f"the answer was cut: the server sent more than {limit} in one message and did "
                f"not end it ({self.size:,} bytes read); desk stopped reading it (max_result_mb)"
            )
        return (
            f"the answer was cut: the server sent {self.size:,} bytes in one message, more "
            f"than the {limit} desk reads (max_result_mb); desk dropped it"
        )


def _parse(data: bytes) -> SessionMessage | Exception:
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(
            data.decode("utf-8", "replace"), by_name=False
        )
    except ValueError as exc:
        return exc
    return SessionMessage(message)


@contextlib.asynccontextmanager
async def capped_stdio(
    command: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    errlog: TextIO,
    cap: int,
    exit_wait_s: Callable[[], float] = lambda: PROCESS_TERMINATION_TIMEOUT,
) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) streams of a program speaking MCP on its stdin and stdout.

    Args:
        command: the program and its arguments.
        env: added to the SDK's default environment (PATH, HOME, ...).
        cwd: its working directory.
        errlog: where its stderr goes.
        cap: the longest message read, in bytes; a longer one reaches the read stream as a
            :class:`TooLarge` instead.
        exit_wait_s: asked at the end: how long the program may take to exit after its stdin
            closed before its group gets SIGTERM, in seconds.

    Raises:
        OSError: the program cannot be started.
    """
    process = await anyio.open_process(
        command,
        env=get_default_environment() | env,
        stderr=errlog,
        cwd=cwd,
        start_new_session=True,
    )
    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    shutting_down = False

    async def stdout_reader() -> None:
        assert process.stdout is not None
        lines = LineCap(cap)
        try:
            async with read_send:
                async for chunk in _chunks(process):
                    for piece in lines.feed(chunk):
                        item: SessionMessage | Exception
                        if isinstance(piece, Cut | Runaway):
                            runaway = isinstance(piece, Runaway)
                            item = TooLarge(piece.request_id, piece.size, cap, runaway=runaway)
                        else:
                            item = _parse(piece.data)
                        try:
                            await read_send.send(item)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return
                    if lines.ended:
                        return
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                _log.warning("reading the MCP server's stdout failed", exc_info=True)
        finally:
            await _drain(process)  # the read stream is closed: the session sees the end

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_receive:
                async for message in write_receive:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode("utf-8", "replace"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(_FLUSH_S):
            await writer_done.wait()
        await _stop(process, exit_wait_s())
        for stream in (read_stream, write_stream, read_send, write_receive):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            group.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()


async def _chunks(process: Process) -> AsyncIterator[bytes]:
    assert process.stdout is not None
    while True:
        try:
            yield await process.stdout.receive(_READ)
        except anyio.EndOfStream:
            return


async def _drain(process: Process) -> None:
    """Read and drop what the server still writes, so it never blocks on a full pipe."""
    assert process.stdout is not None
    with (
        anyio.CancelScope(shield=True),
        contextlib.suppress(
            anyio.EndOfStream,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            ConnectionError,
            OSError,
        ),
    ):
        while True:
            await process.stdout.receive(_READ)


async def _stop(process: Process, exit_wait_s: float) -> None:
    """Close stdin, wait ``exit_wait_s`` seconds for the exit, then end the group (SIGTERM,
    SIGKILL after a grace)."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, exit_wait_s):
        await terminate_posix_process_tree(process, FORCE_KILL_TIMEOUT)
        if not await _exited(process, _REAP_S):
            _log.warning("MCP server process %d is still alive after SIGKILL", process.pid)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError):
            close()


async def _exited(process: Process, timeout_s: float) -> bool:
    deadline = anyio.current_time() + timeout_s
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(0.01)
    return True


__all__ = ["ANSWER_CUT", "TooLarge", "capped_stdio"]
