"""The stop marker, error line and duration texts."""

from __future__ import annotations

from contract.events import StopReceipt
from desk.receipts import format_elapsed, format_failure, format_ms, format_stop_receipt


def test_user_stop_marker() -> None:
    receipt = StopReceipt("user", "desk.key", "stopped by you", closed_ms=2.6, exited_ms=4.1)
    assert format_stop_receipt(receipt) == (
        "■ stopped by you · connection closed in 3 ms · worker exited in 4 ms"
    )


def test_system_stop_marker_names_the_reason_and_children() -> None:
    receipt = StopReceipt(
        "system", "gateway.shutdown", "desk is shutting down", 0.4, 1500.0, children_ended=2
    )
    assert format_stop_receipt(receipt) == (
        "■ stopped by the system: desk is shutting down · connection closed in <1 ms"
        " · worker exited in 1.5 s · 2 child processes ended"
    )


def test_a_stop_during_a_tool_names_its_process_not_a_connection() -> None:
    receipt = StopReceipt(
        "user",
        "desk.key",
        "stopped by you",
        closed_ms=None,
        exited_ms=2012.0,
        children_ended=2,
        tool="shell",
        tool_pid=4242,
        tool_ended_ms=2004.6,
    )
    assert format_stop_receipt(receipt) == (
        "■ stopped by you · shell (pid 4242) ended in 2.0 s · worker exited in 2.0 s"
        " · 2 child processes ended"
    )
    waiting = StopReceipt("user", "desk.key", "", None, 3.0, tool="write_file")
    assert (
        format_stop_receipt(waiting)
        == "■ stopped by you · during write_file · worker exited in 3 ms"
    )


def test_marker_without_figures() -> None:
    receipt = StopReceipt("user", "desk.button", "stopped by you", None, None)
    assert format_stop_receipt(receipt) == "■ stopped by you"


def test_failure_is_one_line() -> None:
    assert format_failure("model server failed (500):\n  boom", "failed(ServerError)") == (
        "✖ model server failed (500): boom"
    )
    assert format_failure(None, "failed(EarlyClose)") == "✖ failed(EarlyClose)"


def test_durations() -> None:
    assert format_ms(0.2) == "<1 ms"
    assert format_ms(12.4) == "12 ms"
    assert format_elapsed(0.04) == "0.0 s"
    assert format_elapsed(12.34) == "12.3 s"
    assert format_elapsed(125.0) == "2 m 05 s"
