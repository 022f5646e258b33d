"""How fast an ACP client's ``session/cancel`` reaches the model server, beside Esc in the desk.

One ``desk acp`` process (a child, driven by the official SDK's client side) runs N prompts of a
reply streaming from the demo model (40 tokens/s); once the reply streams, the client sends
``session/cancel`` and the figure is the time from that moment to the moment the model server
noticed the closed connection (its own record; both sides on the system-wide monotonic
clock). Each prompt must be answered ``cancelled``. Beside it, the same figure for Esc in the
desk in a pseudo-terminal (``bench/wire_stop_latency.py``'s ``pty_esc``: a new desk each time,
so fewer of them).

Target (DESIGN.md): the server sees the close within 100 ms. Prints JSON. Usage::

    .venv/bin/python bench/acp_cancel.py [--cancels 100] [--esc 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from acp import schema as s  # noqa: E402
from acp.stdio import spawn_agent_process  # noqa: E402
from stats import percentiles  # noqa: E402
from wire_stop_latency import close_ms, pty_esc  # noqa: E402

from demo_model.config import DemoConfig  # noqa: E402
from demo_model.server import DemoModelServer  # noqa: E402
from tests.wire.kit import ROOT, child_env  # noqa: E402

STORY = "tell me a story about a lighthouse"


class _Client:
    """Counts the reply's chunks; denies every permission request (none is expected)."""

    def __init__(self) -> None:
        self.chunks = 0
        self.changed = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if isinstance(update, s.AgentMessageChunk):
            self.chunks += 1
            self.changed.set()

    async def request_permission(self, *_: Any, **__: Any) -> s.RequestPermissionResponse:
        return s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        pass

    def on_connect(self, conn: Any) -> None:
        pass

    async def streaming(self, since: int) -> None:
        while self.chunks <= since:
            self.changed.clear()
            await self.changed.wait()


async def acp_cancels(server: DemoModelServer, count: int, db: Path) -> list[float]:
    """``count`` cancels through one ``desk acp``: milliseconds to the server's close each."""
    client = _Client()
    argv = ["-m", "tui_gateway.acp", "--base-url", server.base_url, "--model", "demo"]
    figures = []
    async with spawn_agent_process(
        client,
        sys.executable,
        *argv,
        "--db",
        str(db),
        env=child_env(),
        cwd=ROOT,
        transport_kwargs={"shutdown_timeout": 30.0, "stderr": None},
    ) as (conn, _process):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(ROOT), mcp_servers=[])).session_id
        for _ in range(count):
            server.records.clear()
            before = client.chunks
            text = [s.TextContentBlock(type="text", text=STORY)]
            prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text))
            await asyncio.wait_for(client.streaming(before), 30.0)
            sent = time.monotonic()
            await conn.cancel(session_id=sid)
            took = await asyncio.to_thread(close_ms, server, sent)
            answer = await asyncio.wait_for(prompt, 30.0)
            assert answer.stop_reason == "cancelled", answer.stop_reason
            figures.append(took)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cancels", type=int, default=100, help="ACP cancels")
    parser.add_argument("--esc", type=int, default=20, help="Esc presses in the desk (0: none)")
    args = parser.parse_args(argv)
    home = tempfile.TemporaryDirectory(prefix="desk-bench-")  # never the person's own files
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        os.environ[name] = str(Path(home.name) / name.lower())
    server = DemoModelServer(DemoConfig(tokens_per_second=40.0, max_tokens=2000, slots=2))
    server.start()
    results: dict[str, object] = {"target_ms": 100.0}
    try:
        db = Path(home.name) / "acp.db"
        cancels = asyncio.run(acp_cancels(server, args.cancels, db))
        results["acp_session_cancel"] = {"cancel_to_server_close_ms": percentiles(cancels)}
        esc = []
        server.records.clear()
        for _ in range(args.esc):
            esc.append(pty_esc(server))
            server.records.clear()
        if esc:
            results["pty_esc"] = {"esc_to_server_close_ms": percentiles(esc)}
    finally:
        server.stop()
        home.cleanup()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
