"""The session's tokens in the status bar and in /export: the sum of the server's usage."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from agent.usage import TokenUsage
from contract.events import StopReceipt
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.receipts import format_stop_receipt
from desk.widgets.status_bar import usage_text
from tests.desk.kit import submit, submit_and_get_reply, wait_until

pytestmark = pytest.mark.anyio


def reported(server: DemoModelServer) -> TokenUsage:
    """What the demo server reported, summed over its completed chat requests."""
    total = TokenUsage()
    for r in server.records.list():
        if r.path.endswith("/chat/completions") and r.outcome == "completed":
            total = total.plus(TokenUsage(1, r.prompt_tokens, r.tokens_generated))
    return total


async def test_the_status_bar_and_the_export_carry_the_servers_totals(
    desk_app: DeskApp, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    target = tmp_path / "out.md"
    async with desk_app.run_test(size=(160, 40)) as pilot:
        bar = desk_app.status_bar
        for count, text in enumerate(("reply with exactly: one", "reply with exactly: two"), 1):
            await submit_and_get_reply(desk_app, pilot, text)

            def counted(count: int = count) -> bool:
                return bar.usage is not None and bar.usage.requests == count

            await wait_until(pilot, counted, what="the session's usage")
        total = reported(demo_server)
        assert total.requests == 2 and bar.usage == total
        shown = f"Σ {total.prompt_tokens:,} in {total.completion_tokens:,} out"
        assert usage_text(total) == shown and shown in bar.server_side_text()
        await submit(pilot, f"/export {target}")
        await wait_until(pilot, target.exists, what="the export")
    assert f"Tokens: {total.line()}" in target.read_text(encoding="utf-8")


def test_large_counts_are_short_and_estimates_are_marked() -> None:
    assert usage_text(None) == "" and usage_text(TokenUsage()) == ""
    assert usage_text(TokenUsage(3, 123_456, 9_999, 0, 1)) == "Σ ~123.5k in ~9,999 out"
    assert usage_text(TokenUsage(9, 2_345_678, 10_000)) == "Σ 2.3M in 10.0k out"


def test_a_stop_receipt_says_what_the_stopped_turn_used() -> None:
    receipt = StopReceipt("user", "desk.key", "stopped by you", 3.0, 5.0)
    assert "tokens" not in format_stop_receipt(receipt)  # nothing known: nothing said
    cut = replace(receipt, usage=TokenUsage(2, 1_234, 56, 0, 1))
    assert format_stop_receipt(cut).endswith(
        "worker exited in 5 ms · 1,234 in / 56 out tokens (partly estimated)"
    )
    alone = replace(receipt, usage=TokenUsage(1, 900, 12, 0, 1))
    assert format_stop_receipt(alone).endswith("900 in / 12 out tokens (estimated)")
