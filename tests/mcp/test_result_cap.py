"""A server that answers with more than ``max_result_mb``, or never ends its answer: the call
ends with an error that says the answer was cut, desk's memory stays bounded, and the server
stays usable (a cut answer) or is started again by the next call (an answer without end)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.mcp import McpLoop, McpState, McpUnavailable, ServerConnection, ServerStatus
from tests.mcp.conftest import STARTUP_S, our_server
from tests.mcp.witness import Witness, server_command
from tests.support import poll_until
from tui_gateway.settings.mcp_settings import McpServerSettings


@dataclass
class Rig:
    connection: ServerConnection
    witness: Witness
    changes: list[ServerStatus]


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    witness = Witness()
    loop = McpLoop()
    changes: list[ServerStatus] = []
    spec = our_server("capped", witness, max_result_mb=1.0)
    connection = ServerConnection(spec, loop, cwd=tmp_path, on_change=changes.append)
    try:
        assert connection.start().result(STARTUP_S).state is McpState.READY
        yield Rig(connection, witness, changes)
    finally:
        connection.close().result(30)
        assert loop.stop(10)
        witness.close()


def test_an_answer_past_the_cap_ends_its_call_with_an_error_and_the_server_goes_on(
    rig: Rig,
) -> None:
    pgid = rig.connection.status().pgid
    # The SDK's server sends the text twice (content and structuredContent): about 3 MB.
    answer = rig.connection.call("large", {"size": 1_500_000}).result(60)
    assert answer.is_error
    assert answer.text.startswith("the answer was cut: the server sent 3,000,")
    assert "more than the 1 MB desk reads (max_result_mb)" in answer.text
    # The same process answers the next call: nothing was restarted.
    assert rig.connection.call("echo", {"text": "after"}).result(20).text == "after"
    assert rig.connection.status().state is McpState.READY
    assert rig.connection.status().pgid == pgid
    assert len(rig.witness.of("started")) == 1


def test_an_answer_under_the_cap_arrives_whole(rig: Rig) -> None:
    answer = rig.connection.call("large", {"size": 400_000}).result(60)
    assert not answer.is_error
    assert answer.text.endswith("y" * 1000 + "TAIL") and len(answer.text) > 400_000


def test_an_answer_without_end_is_cut_the_server_is_ended_and_the_next_call_starts_it(
    rig: Rig,
) -> None:
    answer = rig.connection.call("endless", {}).result(60)
    assert answer.is_error
    assert answer.text.startswith(
        "the answer was cut: the server sent more than 1 MB in one message and did not end it"
    )
    assert poll_until(lambda: rig.connection.status().state is McpState.FAILED, 30)
    assert "did not end it" in rig.connection.status().message
    assert rig.connection.call("echo", {"text": "again"}).result(STARTUP_S).text == "again"
    assert len(rig.witness.of("started")) == 2


def test_a_call_waiting_beside_an_answer_without_end_is_told_why(rig: Rig) -> None:
    mark = rig.witness.mark
    waiting = rig.connection.call("slow", {"seconds": 600})
    rig.witness.wait_event("call", tool="slow", since=mark)
    assert rig.connection.call("endless", {}).result(60).is_error
    with pytest.raises(McpUnavailable) as info:
        waiting.result(30)
    assert "the answer was cut" in info.value.message


@pytest.mark.parametrize("answer_as", ["events", "json"])
def test_an_http_servers_answer_past_the_cap_ends_its_call_and_the_server_goes_on(
    tmp_path: Path, answer_as: str
) -> None:
    witness = Witness()
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    flags = ["--http-fd", str(listening.fileno())]
    if answer_as == "json":
        flags.append("--json-response")
    server = subprocess.Popen(
        server_command(witness, "--name", "web", *flags),
        pass_fds=(listening.fileno(),),
        stdin=subprocess.DEVNULL,
    )
    listening.close()  # the server holds its own copy; connections wait in its backlog
    loop = McpLoop()
    spec = McpServerSettings(
        name="web", url=f"http://127.0.0.1:{port}/mcp", startup_timeout_s=60, max_result_mb=1.0
    )
    connection = ServerConnection(spec, loop, cwd=tmp_path, on_change=lambda _: None)
    try:
        assert connection.start().result(STARTUP_S).state is McpState.READY
        # The SDK's server sends the text twice (content and structuredContent): about 3 MB.
        answer = connection.call("large", {"size": 1_500_000}).result(60)
        assert answer.is_error
        assert answer.text.startswith("the answer was cut: the server sent 1,0")
        assert "more than the 1 MB desk reads (max_result_mb)" in answer.text
        whole = connection.call("large", {"size": 400_000}).result(60)  # under the cap: whole
        assert not whole.is_error and len(whole.text) >= 400_000
        assert connection.call("echo", {"text": "after"}).result(20).text == "after"
        assert connection.status().state is McpState.READY
    finally:
        connection.close().result(20)
        loop.stop(10)
        server.terminate()
        server.wait(20)
        witness.close()
