"""Each injected fault produces what it promises, streaming and not."""

from __future__ import annotations

import json

import httpx
import pytest

from demo_model import DemoModelServer, reply_for, tokenize
from tests.demo_model.kit import RawRequest, chat, post_stream
from tests.support import running_demo

PROMPT = "tell me about faults"
FIRST_THREE = "".join(tokenize(reply_for(chat(PROMPT)["messages"]))[:3])


@pytest.mark.parametrize("status", [500, 429, 401, 403, 503])
def test_http_faults(demo: DemoModelServer, client: httpx.Client, status: int) -> None:
    demo.configure(fault=f"http:{status}")
    for stream in (False, True):
        response = client.post("/chat/completions", json=chat(PROMPT, stream=stream))
        assert response.status_code == status
        error = response.json()["error"]
        assert error["message"] and error["type"]
        if status in (429, 503):
            assert response.headers["retry-after"] == "1"
        else:
            assert "retry-after" not in response.headers
    record = demo.records.last()
    assert record is not None and record.outcome == "fault" and record.status == status
    assert record.fault == f"http:{status}" and record.slot_acquired_at is None


def test_fault_times_clears_the_fault(demo: DemoModelServer, client: httpx.Client) -> None:
    demo.configure(fault="http:429", fault_times=2)
    codes = [client.post("/chat/completions", json=chat(PROMPT)).status_code for _ in range(3)]
    assert codes == [429, 429, 200]
    assert demo.config.fault is None and demo.config.fault_times is None


def test_malformed_chunk_then_the_rest(demo: DemoModelServer, client: httpx.Client) -> None:
    demo.configure(fault="malformed")
    stream = post_stream(client, chat(PROMPT))
    assert len(stream.bad_lines) == 1
    bad_at = stream.lines.index(stream.bad_lines[0])
    assert bad_at == 3  # after three good tokens
    assert stream.content == reply_for(chat(PROMPT)["messages"])
    assert stream.done and stream.finish_reasons == ["stop"]
    record = demo.records.last()
    assert record is not None and record.outcome == "fault" and record.fault == "malformed"


def test_malformed_non_streaming_body(demo: DemoModelServer, client: httpx.Client) -> None:
    demo.configure(fault="malformed")
    response = client.post("/chat/completions", json=chat(PROMPT))
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        response.json()


def test_early_close_ends_without_finish_or_done(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    demo.configure(fault="early_close", fault_after_tokens=3)
    stream = post_stream(client, chat(PROMPT))  # a clean end of the body
    assert stream.content == FIRST_THREE
    assert stream.finish_reasons == [] and not stream.done
    record = demo.records.last()
    assert record is not None and record.outcome == "fault" and record.tokens_generated == 3
    assert record.slot_released_at is not None


def test_early_close_non_streaming_cuts_the_body(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    demo.configure(fault="early_close")
    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/chat/completions", json=chat(PROMPT))
    assert demo.records.wait_for_record(lambda r: r.outcome == "fault", timeout=5.0)


def test_drop_breaks_the_connection_mid_stream(caplog: pytest.LogCaptureFixture) -> None:
    received = ""
    dropping = running_demo(2000.0, fault="drop", fault_after_tokens=2)
    with dropping as server, httpx.Client(base_url=server.base_url) as client:
        with (
            pytest.raises(httpx.RemoteProtocolError),
            client.stream("POST", "/chat/completions", json=chat(PROMPT, stream=True)) as reply,
        ):
            for line in reply.iter_lines():
                if line.startswith("data: {"):
                    received += json.loads(line[6:])["choices"][0]["delta"].get("content", "")
        record = server.records.wait_for_record(lambda r: r.finished, timeout=5.0)
    assert received == "".join(tokenize(reply_for(chat(PROMPT)["messages"]))[:2])
    assert record is not None and record.outcome == "fault" and record.completed_at is None
    # The server thread has exited, so uvicorn has logged whatever it was going to log: the
    # intentional drop must not look like an application error.
    assert "without completing" not in caplog.text


def test_no_finish_sends_done_but_no_finish_reason(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    demo.configure(fault="no_finish")
    stream = post_stream(client, chat(PROMPT))
    assert stream.done and stream.finish_reasons == []
    assert stream.content == reply_for(chat(PROMPT)["messages"])
    data = client.post("/chat/completions", json=chat(PROMPT)).json()
    assert data["choices"][0]["finish_reason"] is None


@pytest.mark.parametrize("stream", [True, False])
def test_stall_waits_until_the_client_leaves(demo: DemoModelServer, stream: bool) -> None:
    demo.configure(fault="stall", fault_after_tokens=3)
    request = RawRequest(demo.port, chat(PROMPT, stream=stream))
    stalled = demo.records.wait_for_record(lambda r: r.tokens_generated == 3, timeout=5.0)
    assert stalled is not None
    if stream:
        third = tokenize(FIRST_THREE)[2]
        request.read_until(b'"content":' + json.dumps(third).encode())
    closed_at = request.close()
    record = demo.records.wait_for_record(lambda r: r.finished, timeout=10.0)
    assert record is not None and record.outcome == "client_closed"
    assert record.tokens_generated == 3 and record.text == FIRST_THREE
    assert record.peer_closed_at is not None and record.peer_closed_at >= closed_at
