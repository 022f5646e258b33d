"""A small MCP server for desk's tests, written with the SDK's server API (``MCPServer``).

Run by path (``python desk_test_server.py --witness SOCKET``), over stdio by default or streamable
HTTP on a socket the test listens on (``--http-fd FD``: the test knows it accepts before the
server runs). What it sees that a test cannot see from outside (a call starting, a
cancel arriving, its pid and process group) it reports to the test's
:class:`tests.mcp.witness.Witness` on a Unix socket, one JSON object a line, each with the
system-wide monotonic time ``at``.

Tools: ``echo`` (read-only), ``slow`` (sleeps, honours a cancel), ``stubborn`` (sees the cancel
and goes on anyway, never answering), ``crash`` (exits mid-call), ``large`` (a big answer with
control characters in it), ``garbage`` (writes a line that is not JSON-RPC instead of an answer),
``endless`` (begins an answer and never ends it), ``surrogates`` (answers with lone
surrogates spelled as JSON escapes: valid JSON, not text), ``spawn`` (starts a child process
that stays in the server's group). Flags make it misbehave:
``--fail-start``, ``--ignore-sigterm``, ``--linger`` (it does not exit when its stdin ends),
``--spawn-child`` (a child in its group from the start).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

# desk starts its MCP servers in an environment of their own (not the test's), so this one
# hides trio itself: a server of a desk install has none (see tests/child_site), and the SDK
# would import it through httpcore, 0.1 s of CPU at every start.
sys.modules.setdefault("trio", None)  # type: ignore[assignment]

import anyio  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp_types import ToolAnnotations  # noqa: E402

_witness: socket.socket | None = None
_children: list[subprocess.Popen[bytes]] = []
_wire = ""  # what fd 1 was before the SDK moved the wire to a private copy (Linux /proc)


def _write_on_the_wire(data: bytes) -> None:
    """Write ``data`` where the client reads: the SDK serves from a copy of fd 1 and points fd 1
    at stderr, so the copy is found by what it refers to."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.readlink(f"/proc/self/fd/{name}") == _wire:
                os.write(fd, data)
                return
        except OSError:
            continue


def report(event: str, **fields: Any) -> None:
    """Tell the witness (if any) what happened."""
    if _witness is None:
        return
    line = json.dumps({"event": event, "at": time.monotonic(), "pid": os.getpid(), **fields})
    _witness.sendall(line.encode() + b"\n")


def build(name: str) -> MCPServer:
    """The server and its tools."""
    server = MCPServer(name, version="1")

    @server.tool(description="Return the text.", annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        report("call", tool="echo")
        return text

    @server.tool(description="Sleep for `seconds`, then say so; honours a cancel.")
    async def slow(seconds: float, ctx: Context) -> str:
        report("call", tool="slow", request=str(ctx.request_id))
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            report("cancelled", tool="slow", request=str(ctx.request_id))
            raise
        return f"slept {seconds:g} s"

    @server.tool(description="Work for an hour; a cancel is seen and ignored.")
    async def stubborn(ctx: Context) -> str:
        report("call", tool="stubborn", request=str(ctx.request_id))
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            report("cancel_ignored", tool="stubborn", request=str(ctx.request_id))
            with anyio.CancelScope(shield=True):
                await anyio.sleep(3600)
            raise
        return "done"

    @server.tool(description="Exit the server with `code` in the middle of the call.")
    def crash(code: int = 3) -> str:
        report("call", tool="crash")
        print(f"RuntimeError: crashing on purpose with code {code}", file=sys.stderr, flush=True)
        os._exit(code)

    @server.tool(description="Return about `size` bytes, with control characters in them.")
    def large(size: int) -> str:
        report("call", tool="large")
        return "HEAD\x1b[2J\x07" + "y" * size + "TAIL"

    @server.tool(description="Begin an answer and never end it: text written without end.")
    async def endless(ctx: Context) -> str:
        report("call", tool="endless")
        head = {"jsonrpc": "2.0", "id": ctx.request_context.request_id}
        start = json.dumps(head)[:-1] + ', "result": {"content": [{"type": "text", "text": "'
        _write_on_the_wire(start.encode())
        chunk = b"y" * 65_536
        while True:  # until desk stops reading and ends the server
            _write_on_the_wire(chunk)
            await anyio.sleep(0)

    @server.tool(description="Write a line that is not JSON-RPC where the answer should be.")
    async def garbage() -> str:
        report("call", tool="garbage")
        _write_on_the_wire(b"this is not json\n")
        await anyio.sleep(3600)
        return "never"

    @server.tool(description="Answer with lone surrogates, spelled as JSON escapes (valid JSON).")
    async def surrogates(ctx: Context) -> str:
        report("call", tool="surrogates")
        text = "before \ud800 between \udfff after"
        blocks = [{"type": "text", "text": text}]
        result = {"content": blocks, "structuredContent": {"result": text}, "isError": False}
        answer = {"jsonrpc": "2.0", "id": ctx.request_context.request_id, "result": result}
        _write_on_the_wire(json.dumps(answer).encode("ascii") + b"\n")  # escapes: \ud800
        await anyio.sleep(3600)  # answered already, by hand
        return "never"

    @server.tool(description="Start a child process that stays in the server's process group.")
    def spawn() -> str:
        child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
        _children.append(child)
        report("spawned", child=child.pid)
        return f"spawned {child.pid}"

    return server


def main() -> None:
    """Parse the flags, connect to the witness, serve."""
    global _witness, _wire
    parser = argparse.ArgumentParser()
    parser.add_argument("--witness", help="Unix socket of the test's witness")
    parser.add_argument("--name", default="desk-test")
    parser.add_argument(
        "--http-fd", type=int, metavar="FD", help="serve streamable HTTP on this listening socket"
    )
    parser.add_argument(
        "--json-response", action="store_true", help="over HTTP, answer in JSON, not events"
    )
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--fail-start", action="store_true", help="exit 1 before serving")
    parser.add_argument(
        "--spawn-child", action="store_true", help="start a child that stays in the group"
    )
    parser.add_argument(
        "--linger", action="store_true", help="do not exit when stdin ends (a thread holds on)"
    )
    args = parser.parse_args()
    if args.witness:
        _witness = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _witness.connect(args.witness)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _wire = os.readlink("/proc/self/fd/1")
    report("started", pgid=os.getpgrp(), name=args.name)
    if args.linger:  # a non-daemon thread keeps the process after the server returns
        threading.Thread(target=time.sleep, args=(300,), name="linger").start()
    if args.spawn_child:
        child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
        _children.append(child)
        report("spawned", child=child.pid)
    if args.fail_start:
        print("error: this server was told not to start", file=sys.stderr, flush=True)
        sys.exit(1)
    server = build(args.name)
    if args.http_fd is not None:
        import uvicorn

        listening = socket.socket(fileno=args.http_fd)
        app = server.streamable_http_app(json_response=args.json_response)
        config = uvicorn.Config(app, log_level="warning")
        anyio.run(lambda: uvicorn.Server(config).serve(sockets=[listening]))
    else:
        server.run()


if __name__ == "__main__":
    main()
