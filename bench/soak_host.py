"""One gateway host of the soak, in a process of its own: JSON-RPC on stdin/stdout.

The soak (``bench/soak.py``) drives each host through
:class:`~tui_gateway.wire.client.RemoteGateway`, as the desk drives ``desk gateway --stdio``; a
host of its own process can be killed (``SIGKILL``) and started again, and its RSS is the
gateway's alone. It serves the same :class:`~tui_gateway.wire.stdio.StdioServer` as
``desk gateway --stdio``, with what that command's flags do not set: no approvals, a small
context window and compression threshold if asked (so ``/compress`` has something to do), the
MCP test server (``tests/mcp/servers/desk_test_server.py``, its calls allowed without asking).
malloc's arenas are capped as desk caps them at its start; ``DESK_SOAK_MEMORY`` in the
environment installs the memory marks of :mod:`bench.soak_memory`. Usage (the soak starts it)::

    python bench/soak_host.py --db PATH_OR_URL --base-url URL --model NAME --cwd DIR
        [--context-window N] [--no-tools] [--mcp]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from soak_memory import install  # noqa: E402

from desk.malloc_tuning import cap_arenas  # noqa: E402

MCP_SERVER = ROOT / "tests" / "mcp" / "servers" / "desk_test_server.py"
"""The MCP test server (tools ``slow``, ``echo``...)."""


def main(argv: list[str] | None = None) -> int:
    """Serve one host until stdin ends or ``gateway.shutdown``; returns the exit code."""
    cap_arenas(os.environ)
    install()  # DESK_SOAK_MEMORY: what grew, on SIGUSR1/SIGUSR2 (bench/soak_memory.py)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--db", required=True)
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--cwd", required=True)
    p.add_argument("--context-window", type=int, help="with a 0.9 threshold (default: asked)")
    p.add_argument("--no-tools", action="store_true")
    p.add_argument("--mcp", action="store_true", help="offer the MCP test server's tools")
    args = p.parse_args(argv)

    import contract as c
    from agent.provider.client import ProviderConfig
    from agent.store import open_store
    from tui_gateway.gateway import Gateway, GatewayConfig
    from tui_gateway.settings.mcp_settings import McpApproval, McpServerSettings
    from tui_gateway.wire.stdio import StdioServer

    servers = ()
    if args.mcp:
        servers = (
            McpServerSettings(
                name="test",
                command=sys.executable,
                args=(str(MCP_SERVER), "--name", "test"),
                startup_timeout_s=120.0,
                approval=McpApproval.ALWAYS,
            ),
        )
    provider = ProviderConfig(base_url=args.base_url, model=args.model)
    config = GatewayConfig(
        provider=provider,
        tools=not args.no_tools,
        approvals=False,
        cwd=Path(args.cwd),
        context_window=args.context_window,
        compress_threshold=0.9 if args.context_window else 0.75,
        mcp_servers=servers,
    )
    out_fd = os.dup(1)  # protocol lines only: stray prints land on stderr
    os.dup2(2, 1)
    try:
        gateway = Gateway(config, store=open_store(args.db))
        ready = c.Ready(
            protocol_version=c.PROTOCOL_VERSION,
            model=args.model,
            base_url=args.base_url,
            demo=False,
            replay_capacity=c.REPLAY_CAPACITY,
            pid=os.getpid(),
        )
        server = StdioServer(gateway, in_fd=0, out_fd=out_fd, ready=ready)
        if threading.current_thread() is threading.main_thread():
            server.install_signals()
        return server.serve()
    finally:
        os.close(out_fd)


if __name__ == "__main__":
    raise SystemExit(main())
