"""Helpers shared by the desk tests: deadline waits and building a desk over a gateway."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable

from textual.geometry import Region
from textual.pilot import OutOfBounds, Pilot
from textual.widget import Widget

from contract.events import StopReceipt
from desk.app import DeskApp
from desk.approval_keys import ANSWER_PAUSE_S
from desk.config import ConnectionInfo
from desk.receipts import format_stop_receipt
from desk.widgets import AssistantReply, PromptInput
from desk.widgets.approval_prompt import ApprovalPrompt

DEFAULT_TIMEOUT_S = 30.0
"""A deadline for a stuck wait, never a speed test: a loaded machine can take seconds."""


async def wait_until(
    pilot: Pilot[object] | None,
    predicate: Callable[[], object],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    what: str = "condition",
    explain: Callable[[], str] | None = None,
) -> None:
    """Let the app run until ``predicate()`` is true; fail after ``timeout_s`` seconds, saying
    what ``explain()`` returns (the state that may tell why) when given."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            why = f": {explain()}" if explain is not None else ""
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}{why}")
        if pilot is not None and pilot.app.is_running:
            await pilot.pause(0.01)
        else:
            await asyncio.sleep(0.01)


async def click_until(
    pilot: Pilot[object],
    widget: Widget,
    done: Callable[[], object],
    *,
    attempts: int = 10,
    what: str = "the click to take effect",
) -> None:
    """Click ``widget`` until ``done()`` (a streaming transcript can move it under the pointer
    between the moment its region is read and the moment the click lands, or scroll it out of
    sight: it is scrolled into view first, as a person scrolls to it)."""
    for _ in range(attempts):
        if done():
            return
        if widget.region.height > 0:
            widget.scroll_visible(animate=False, immediate=True)
            with contextlib.suppress(OutOfBounds):  # it moved out of sight again meanwhile
                await pilot.click(widget)
        with contextlib.suppress(AssertionError):
            await wait_until(pilot, done, timeout_s=1.0, what=what)
    await wait_until(pilot, done, what=what)


async def answer_approval(pilot: Pilot[object], prompt: ApprovalPrompt, key: str) -> None:
    """Answer ``prompt`` as a person does with the keyboard: the focus moved to the card on
    purpose (Shift+Tab), then ``key`` (``y``, ``a`` or ``n``) once its keys are armed."""
    prompt.focus()
    await wait_until(pilot, lambda: prompt.has_focus_within, what="the card focused")
    ready = prompt.shown_at + ANSWER_PAUSE_S + 0.05
    await wait_until(pilot, lambda: time.monotonic() > ready, what="the card's keys armed")
    await pilot.press(key)


async def submit(pilot: Pilot[object], text: str) -> None:
    """Type ``text`` into the prompt box (set at once) and press Enter."""
    box = pilot.app.query_one(PromptInput)
    box.focus()
    box.text = text
    await pilot.press("enter")


async def submit_and_get_reply(app: DeskApp, pilot: Pilot[object], text: str) -> AssistantReply:
    """Submit ``text`` as the next turn and return its reply block once it exists."""
    before = set(app.transcript.reply_turn_ids)
    await submit(pilot, text)

    def new_reply() -> AssistantReply | None:
        fresh = [t for t in app.transcript.reply_turn_ids if t not in before]
        return app.transcript.reply(fresh[0]) if fresh else None

    await wait_until(pilot, new_reply, what=f"the reply block of {text!r}")
    reply = new_reply()
    assert reply is not None
    return reply


def connection(base_url: str = "http://127.0.0.1:8080/v1", *, demo: bool = True) -> ConnectionInfo:
    """A connection to show (display only; tests pin the URL for snapshots)."""
    return ConnectionInfo("demo", base_url, is_demo=demo, source="--demo")


def turn_threads() -> list[threading.Thread]:
    """The gateway turn workers alive now, in any gateway of this process."""
    return [t for t in threading.enumerate() if t.name.startswith("desk-turn-")]


def user_message(text: str) -> list[dict[str, str]]:
    """The request messages of a first turn whose prompt is ``text`` (for ``reply_for``)."""
    return [{"role": "user", "content": text}]


def pinned_receipt(receipt: StopReceipt) -> str:
    """The real stop-receipt formatter, with the measured figures replaced by fixed ones."""
    return format_stop_receipt(dataclasses.replace(receipt, closed_ms=3.0, exited_ms=4.0))


def pin_gauge(app: DeskApp, used: int = 655) -> None:
    """Show ``used`` tokens in the context gauge from now on, whatever counts arrive later.

    The server's count of a request and the events around it (a running tool's, an approval's)
    come in either order, and the gauge follows each: a picture that shows the gauge must not
    depend on which came last (655 is 8 % of the demo model's 8,192 window).
    """
    gauge = app.controllers.gauge
    for name in ("window_reported", "window_unshown", "count_pending", "streamed"):
        setattr(gauge, name, lambda *_args, **_kwargs: None)
    app.status_bar.context_pending = 0
    app.status_bar.context_used = used


def drawn(widget: Widget) -> str:
    """What ``widget`` draws now, as text, line by line (trailing spaces dropped)."""
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text.rstrip() for strip in strips)
