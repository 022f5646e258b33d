"""One server connection used straight from threads, as a turn's tool uses it: calls, stops at
any moment (randomised), and the streamable-HTTP transport."""

from __future__ import annotations

import concurrent.futures
import random
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.mcp import McpLoop, McpState, McpUnavailable, ServerConnection, ServerStatus
from tests.mcp.conftest import STARTUP_S, our_server
from tests.mcp.witness import Witness, server_command
from tui_gateway.settings.mcp_settings import McpServerSettings


@dataclass
class Rig:
    loop: McpLoop
    connection: ServerConnection
    witness: Witness
    changes: list[ServerStatus]


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    witness = Witness()
    loop = McpLoop()
    changes: list[ServerStatus] = []
    connection = ServerConnection(
        our_server("direct", witness),
        loop,
        cwd=tmp_path_factory.mktemp("direct"),
        on_change=changes.append,
    )
    try:
        assert connection.start().result(STARTUP_S).state is McpState.READY
        yield Rig(loop, connection, witness, changes)
    finally:
        connection.close().result(30)
        assert loop.stop(10)
        witness.close()


def test_a_cancel_before_the_request_is_written_leaves_the_server_usable(rig: Rig) -> None:
    future = rig.connection.call("slow", {"seconds": 600})
    future.cancel()  # at once: the request may not even be on the wire yet
    assert rig.connection.call("echo", {"text": "ok"}).result(20).text == "ok"


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    plan=st.lists(
        st.tuples(st.floats(0.0, 0.3), st.one_of(st.none(), st.floats(0.0, 0.2))),
        min_size=1,
        max_size=6,
    )
)
def test_calls_stopped_at_random_moments_all_end_and_the_server_stays_usable(
    rig: Rig, plan: list[tuple[float, float | None]]
) -> None:
    """Each call sleeps ``seconds`` on the server; a ``stop_after`` of None lets it finish."""
    pause = threading.Event()  # never set: waits a random moment
    calls = [(rig.connection.call("slow", {"seconds": s}), stop) for s, stop in plan]
    rng = random.Random(len(plan))
    for future, stop in sorted(calls, key=lambda c: rng.random()):
        if stop is not None:
            pause.wait(stop)
            future.cancel()
    for future, stop in calls:
        try:
            answer = future.result(20)
        except concurrent.futures.CancelledError:
            assert stop is not None
            continue
        assert answer.text.startswith("slept")
    assert rig.connection.call("echo", {"text": "still"}).result(20).text == "still"
    assert rig.connection.status().state is McpState.READY


def test_a_server_that_fails_to_start_is_not_retried_by_a_call(tmp_path: Path) -> None:
    loop = McpLoop()
    connection = ServerConnection(
        our_server("nope", None, "--fail-start"), loop, cwd=tmp_path, on_change=lambda _: None
    )
    try:
        status = connection.start().result(STARTUP_S)
        assert status.state is McpState.FAILED
        with pytest.raises(McpUnavailable) as info:
            connection.call("echo", {"text": "x"}).result(10)
        assert info.value.message == (
            "exited with code 1: error: this server was told not to start; "
            "/mcp restart nope starts it again"
        )
        assert connection.status().state is McpState.FAILED  # no new start was tried
    finally:
        connection.close().result(10)
        loop.stop(10)


def test_streamable_http_calls_and_cancels(tmp_path: Path) -> None:
    witness = Witness()
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    command = server_command(witness, "--name", "web", "--http-fd", str(listening.fileno()))
    server = subprocess.Popen(command, pass_fds=(listening.fileno(),), stdin=subprocess.DEVNULL)
    listening.close()  # the server holds its own copy; connections wait in its backlog
    loop = McpLoop()
    spec = McpServerSettings(name="web", url=f"http://127.0.0.1:{port}/mcp", startup_timeout_s=60)
    connection = ServerConnection(spec, loop, cwd=tmp_path, on_change=lambda _: None)
    try:
        status = connection.start().result(STARTUP_S)
        assert status.state is McpState.READY, status.message
        assert status.transport == "http" and status.pgid is None
        assert connection.call("echo", {"text": "over http"}).result(20).text == "over http"
        mark = witness.mark
        future = connection.call("slow", {"seconds": 600})
        called = witness.wait_event("call", tool="slow", since=mark)
        future.cancel()
        witness.wait_event("cancelled", since=mark, request=called["request"])
    finally:
        connection.close().result(20)
        loop.stop(10)
        server.terminate()
        server.wait(20)
        witness.close()
