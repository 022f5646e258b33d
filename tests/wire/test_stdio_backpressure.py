"""A frontend that stops reading stdout never blocks a worker, and loses no control event."""

from __future__ import annotations

import fcntl
import json
import os
import threading

import contract as c
from agent.provider.client import ProviderConfig
from contract.events import MessageComplete
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.wire.stdio import StdioServer

F_GETPIPE_SZ = 1032
WORDS = 12_000


def test_a_stalled_reader_blocks_no_worker(
    demo_server: DemoModelServer, provider: ProviderConfig
) -> None:
    demo_server.configure(tokens_per_second=0.0, max_tokens=WORDS + 10, n_ctx=200_000)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    gateway = Gateway(GatewayConfig(provider=provider, tools=False))
    ready = c.Ready(c.PROTOCOL_VERSION, "demo", provider.base_url, False, 100, os.getpid())
    server = StdioServer(gateway, in_fd=in_r, out_fd=out_w, ready=ready, max_queued_deltas=4)
    serving = threading.Thread(target=server.serve, daemon=True)
    serving.start()
    log = EventLog()
    gateway.subscribe(log)
    session = gateway.session_create()
    text = " ".join(["lighthouse"] * WORDS)
    pipe_size = fcntl.fcntl(out_w, F_GETPIPE_SZ)
    assert 2 * len(text) > pipe_size  # the pipe fills: nobody reads it yet

    turns = [gateway.prompt_submit(session, f"reply with exactly: {text}").turn_id for _ in "ab"]
    for turn in turns:  # both run to their end while stdout is full
        assert log.complete(turn, timeout=60.0).text == text
    assert gateway.turn(session, turns[1]).done.wait(5.0)
    assert server.outbox.merged + server.outbox.dropped > 0

    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: _drain(out_r, chunks), daemon=True)
    reader.start()
    os.close(in_w)  # EOF: the frontend went away; the server flushes what it holds and returns
    serving.join(30.0)
    assert not serving.is_alive()
    assert gateway.worker_threads() == []
    os.close(out_w)
    reader.join(10.0)
    os.close(in_r)
    os.close(out_r)

    lines = [json.loads(line) for line in b"".join(chunks).splitlines()]
    assert lines[0]["method"] == "gateway.ready"
    wire = [m["params"] for m in lines if m.get("method") == "event"]
    ours = [e for e in wire if e["session_id"] == session]
    wire_controls = [(e["seq"], e["type"]) for e in ours if e["type"] != "message.delta"]
    controls = [(e.seq, e.type) for e in log.events if e.control and e.session_id == session]
    assert sorted(wire_controls) == sorted(controls)  # every one, once
    # The turns' own events come from one worker thread, so their order is kept end to end.
    # (prompt.queued comes from the submitting thread: see the report on Gateway._publish.)
    worker = [
        seq for seq, kind in wire_controls if kind not in ("session.created", "prompt.queued")
    ]
    assert worker == sorted(worker)
    completes = [e["payload"] for e in wire if e["type"] == MessageComplete.TYPE]
    assert [p["text"] for p in completes] == [text, text]  # the canonical text survives
    seqs = [e["seq"] for e in ours]
    assert len(seqs) == len(set(seqs))


def _drain(fd: int, into: list[bytes]) -> None:
    while chunk := os.read(fd, 1 << 16):
        into.append(chunk)
