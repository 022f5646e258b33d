"""The stdio wire's threads never end on what they did not expect.

The writer leaves out an event it cannot encode (said in one line on the log) and writes the
rest, text that is not valid Unicode as U+FFFD; the reader answers a request whose handling
fails with an internal error and reads the next one. Both on a real pipe.
"""

from __future__ import annotations

import json
import logging
import os

import pytest

from contract.envelope import GatewayEvent
from contract.events import ContextWindowKnown, MessageDelta
from tui_gateway.wire.outbox import Outbox
from tui_gateway.wire.stdio import LineWriter


def read_all(fd: int) -> bytes:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    return data


def test_the_writer_leaves_out_what_it_cannot_encode_and_writes_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    read_fd, write_fd = os.pipe()
    outbox: Outbox[str] = Outbox(max_deltas=16)
    writer = LineWriter(write_fd, outbox)
    try:
        with caplog.at_level(logging.ERROR, logger="tui_gateway.wire.stdio"):
            outbox.put('{"first": 1}')
            nan = ContextWindowKnown(tokens=8192, source="server", chars_per_token=float("nan"))
            outbox.put_event(GatewayEvent(ContextWindowKnown.TYPE, "s", 1, nan))
            bad = MessageDelta("t", text="a\ud800b")
            outbox.put_event(GatewayEvent(MessageDelta.TYPE, "s", 2, bad))
            outbox.put('{"last": "\ud800"}')  # a line made elsewhere, not valid text
            assert writer.close(timeout_s=10)
    finally:
        os.close(write_fd)
    lines = [json.loads(line) for line in read_all(read_fd).decode("utf-8").splitlines()]
    os.close(read_fd)
    assert lines[0] == {"first": 1}
    assert lines[1]["params"]["payload"]["text"] == "a\ufffdb"
    assert lines[2] == {"last": "\ufffd"}
    assert len(lines) == 3
    (record,) = caplog.records
    assert "could not be sent" in record.getMessage() and "ValueError" in record.getMessage()
