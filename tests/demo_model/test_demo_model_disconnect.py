"""The demo server notices a closed client connection in every phase and frees the slot.

Each test closes a client socket and checks that the server noticed (``peer_closed_at``,
before the reply ended by itself), freed its slot, and that the next request finds
the slot free. Waits use `RecordBook.wait_for*` with deadlines, never sleeps; how fast the
server notices is a figure of ``bench/wire_stop_latency.py`` (``server_notice``), not a test.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable

import httpx
import pytest

from demo_model import DemoModelServer, RequestRecord
from tests.demo_model.kit import RawRequest, chat

WAIT_S = 10.0


Check = Callable[[RequestRecord], object]


def _wait(demo: DemoModelServer, record_id: int, what: str, check: Check) -> RequestRecord:
    record = demo.records.wait_for_record(
        lambda r: r.id == record_id and bool(check(r)),
        timeout=WAIT_S,
    )
    assert record is not None, f"request {record_id} never reached: {what}"
    return record


def _closed(demo: DemoModelServer, record_id: int) -> RequestRecord:
    record = _wait(demo, record_id, "client_closed", lambda r: r.finished)
    assert record.outcome == "client_closed", record
    assert record.peer_closed_at is not None
    if record.slot_acquired_at is not None:  # a slot held is a slot freed
        assert record.slot_released_at is not None
        assert record.slot_released_at >= record.peer_closed_at
    assert record.completed_at is None
    assert record.finish_reason is None  # the reply never ended by itself
    return record


def _slot_is_free_at_once(demo: DemoModelServer) -> None:
    """A following request gets the slot immediately, and /slots shows nothing busy."""
    slots = httpx.get(demo.root_url + "/slots").json()
    assert not any(slot["is_processing"] for slot in slots), slots
    response = httpx.post(demo.base_url + "/chat/completions", json=chat("next", max_tokens=2))
    assert response.status_code == 200
    record = demo.records.last()
    assert record is not None and record.slot_id == 0 and record.outcome == "completed"


def _next_id(demo: DemoModelServer) -> int:
    last = demo.records.last()
    return 1 if last is None else last.id + 1


@pytest.mark.parametrize("stream", [True, False])
def test_close_while_waiting_for_a_slot(demo: DemoModelServer, stream: bool) -> None:
    demo.configure(tokens_per_second=50.0)
    holder_id = _next_id(demo)
    holder = RawRequest(demo.port, chat("hold the slot", stream=True))
    _wait(demo, holder_id, "holding the slot", lambda r: r.slot_acquired_at is not None)

    waiter = RawRequest(demo.port, chat("wait for the slot", stream=stream))
    _wait(demo, holder_id + 1, "validated", lambda r: r.prompt_tokens > 0)
    waiter.close()
    record = _closed(demo, holder_id + 1)
    assert record.slot_acquired_at is None and record.headers_sent_at is None
    holding = demo.records.get(holder_id)
    assert holding is not None and holding.outcome == "running"

    holder.close()
    _closed(demo, holder_id)
    _slot_is_free_at_once(demo)


@pytest.mark.parametrize("stream", [True, False])
def test_close_while_processing_the_prompt(demo: DemoModelServer, stream: bool) -> None:
    demo.configure(prompt_delay_s=60.0)  # the close, not the delay, must end it
    request_id = _next_id(demo)
    request = RawRequest(demo.port, chat("think first", stream=stream))
    _wait(demo, request_id, "slot acquired", lambda r: r.slot_acquired_at is not None)
    request.close()
    record = _closed(demo, request_id)
    assert record.headers_sent_at is None and record.tokens_generated == 0
    assert record.slot_released_at is not None and record.peer_closed_at is not None
    demo.configure(prompt_delay_s=0.0)
    _slot_is_free_at_once(demo)


def test_close_while_streaming(demo: DemoModelServer) -> None:
    demo.configure(tokens_per_second=100.0)
    request_id = _next_id(demo)
    request = RawRequest(demo.port, chat("stream to me", stream=True))
    request.read_until(b'"content":')
    request.close()
    record = _closed(demo, request_id)
    assert record.headers_sent_at is not None
    assert 1 <= record.tokens_generated < 100
    _slot_is_free_at_once(demo)


def test_close_during_a_non_streaming_generation(demo: DemoModelServer) -> None:
    demo.configure(tokens_per_second=100.0)
    request_id = _next_id(demo)
    request = RawRequest(demo.port, chat("answer in one piece"))
    _wait(demo, request_id, "generating", lambda r: r.tokens_generated >= 5)
    request.close()
    record = _closed(demo, request_id)
    assert record.headers_sent_at is None
    assert 5 <= record.tokens_generated < 100
    _slot_is_free_at_once(demo)


def test_close_before_the_body_is_complete(demo: DemoModelServer) -> None:
    request_id = _next_id(demo)
    sock = socket.create_connection(("127.0.0.1", demo.port), timeout=5.0)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{")
    _wait(demo, request_id, "arrived", lambda r: True)
    sock.close()
    record = _closed(demo, request_id)
    assert record.slot_acquired_at is None


# -- the same phases with httpx, cancelled the way an asyncio client would be -----------------


async def _cancel_when(
    demo: DemoModelServer, body: dict[str, object], request_id: int, ready: Check
) -> None:
    async with httpx.AsyncClient(base_url=demo.base_url, timeout=30.0) as http:
        task = asyncio.create_task(http.post("/chat/completions", json=body))
        found = await asyncio.to_thread(
            demo.records.wait_for_record,
            lambda r: r.id == request_id and bool(ready(r)),
            WAIT_S,
        )
        assert found is not None
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


@pytest.mark.parametrize(
    ("phase", "knobs", "stream", "ready"),
    [
        ("prompt", {"prompt_delay_s": 60.0}, True, lambda r: r.slot_acquired_at is not None),
        ("streaming", {"tokens_per_second": 50.0}, True, lambda r: r.tokens_generated >= 3),
        ("non-streaming", {"tokens_per_second": 50.0}, False, lambda r: r.tokens_generated >= 3),
    ],
)
def test_httpx_cancellation_is_noticed(
    demo: DemoModelServer, phase: str, knobs: dict[str, float], stream: bool, ready: Check
) -> None:
    demo.configure(**knobs)
    request_id = _next_id(demo)
    asyncio.run(_cancel_when(demo, chat(phase, stream=stream), request_id, ready))
    _closed(demo, request_id)
    demo.configure(prompt_delay_s=0.0, tokens_per_second=1000.0)
    _slot_is_free_at_once(demo)


def test_httpx_stream_left_early_is_noticed(demo: DemoModelServer) -> None:
    demo.configure(tokens_per_second=50.0)
    request_id = _next_id(demo)
    with (
        httpx.Client(base_url=demo.base_url, timeout=10.0) as http,
        http.stream("POST", "/chat/completions", json=chat("hi", stream=True)) as response,
    ):
        for line in response.iter_lines():
            if line.startswith("data: "):
                break
        response.close()
    _closed(demo, request_id)


# -- the slot queue ---------------------------------------------------------------------------


def test_second_request_starts_when_the_first_finishes(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    demo.configure(tokens_per_second=500.0)
    first_id = _next_id(demo)
    first = RawRequest(demo.port, chat("first"))
    _wait(demo, first_id, "first holds the slot", lambda r: r.slot_acquired_at is not None)
    response = client.post("/chat/completions", json=chat("second"))
    assert response.status_code == 200
    one, two = demo.records.get(first_id), demo.records.get(first_id + 1)
    assert one is not None and two is not None
    assert one.outcome == "completed" and two.outcome == "completed"
    assert one.slot_released_at is not None and two.slot_acquired_at is not None
    assert two.started_at < one.slot_released_at <= two.slot_acquired_at
    first.close()


def test_waiters_get_the_slot_in_arrival_order(demo: DemoModelServer) -> None:
    demo.configure(tokens_per_second=100.0)
    first_id = _next_id(demo)
    holder = RawRequest(demo.port, chat("hold", stream=True))
    _wait(demo, first_id, "holding", lambda r: r.slot_acquired_at is not None)
    waiters = []
    for n in range(1, 4):
        waiters.append(RawRequest(demo.port, chat(f"waiter {n}", max_tokens=2)))
        _wait(demo, first_id + n, "queued", lambda r: r.prompt_tokens > 0)
    holder.close()
    for waiter in waiters:
        waiter.read_until(b'"finish_reason":"length"')
        waiter.close()
    records = [demo.records.get(first_id + n) for n in range(1, 4)]
    acquired = [r.slot_acquired_at for r in records if r is not None and r.slot_acquired_at]
    assert len(acquired) == 3 and acquired == sorted(acquired)


def test_more_slots_wake_a_waiting_request(demo: DemoModelServer) -> None:
    demo.configure(tokens_per_second=20.0)
    first_id = _next_id(demo)
    holder = RawRequest(demo.port, chat("hold", stream=True))
    _wait(demo, first_id, "holding", lambda r: r.slot_acquired_at is not None)
    waiter = RawRequest(demo.port, chat("waiting", stream=True))
    _wait(demo, first_id + 1, "queued", lambda r: r.prompt_tokens > 0)
    changed_at = time.monotonic()
    demo.configure(slots=2)
    record = _wait(demo, first_id + 1, "slot", lambda r: r.slot_acquired_at is not None)
    assert record.slot_acquired_at is not None and record.slot_acquired_at >= changed_at
    assert record.slot_id == 1 and not demo.records.get(first_id).finished  # not the holder's
    slots = httpx.get(demo.root_url + "/slots").json()
    assert [s["is_processing"] for s in slots] == [True, True]
    holder.close()
    waiter.close()


# -- server shutdown --------------------------------------------------------------------------


def test_stop_ends_running_requests_at_once() -> None:
    from demo_model import DemoConfig

    server = DemoModelServer(DemoConfig(tokens_per_second=20.0)).start()
    streaming = RawRequest(server.port, chat("stream", stream=True))
    streaming.read_until(b'"content":')
    queued = RawRequest(server.port, chat("queued"))
    assert server.records.wait_for_record(lambda r: r.id == 2 and r.prompt_tokens > 0, WAIT_S)
    server.stop()
    assert not server.running
    assert b"[DONE]" not in streaming.read_until(b"0\r\n\r\n")
    assert queued.read_until(b"shutting down").startswith(b"HTTP/1.1 503")
    outcomes = [r.outcome for r in server.records.list()]
    assert outcomes == ["server_stopped", "server_stopped"]
    streaming.close()
    queued.close()
