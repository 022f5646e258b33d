"""The queue above the prompt box: queued prompts listed in order, each removable and editable
(Up on an empty box edits the last), and the prompts still queued at quit offered again when
the session is resumed (listed once, above the box, not also as turns of the transcript)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.startup import Startup
from desk.widgets import PromptInput, UserPrompt
from desk.widgets.queued_item import QueuedItem
from desk.widgets.saved_reply import SavedReply
from tests.desk.kit import (
    click_until,
    connection,
    submit,
    submit_and_get_reply,
    wait_until,
)
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio

LONG_PROMPT = "Tell me about stopping streams"


def lines(app: DeskApp) -> list[tuple[str, str]]:
    """The queue as shown: (place, text) per line, top to bottom."""
    shown: list[tuple[str, str]] = []
    for item in app.widgets.queue.items:
        place, text = item.query(".place"), item.query(".text")
        if not place or not text:  # mounted, its line not composed yet
            shown.append(("", ""))
            continue
        shown.append((str(place.first().render()), str(text.first().render())))
    return shown


def queued_in_gateway(gateway: Gateway, app: DeskApp) -> list[str]:
    return [info.text for info in gateway.session_queue(app.session_id)]


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the first turn outlasts the test
async def test_queued_prompts_are_listed_above_the_box_in_order_and_removed_with_x(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        first = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: first.text, what="streaming")
        for n in ("one", "two", "three"):
            await submit(pilot, f"reply with exactly: {n}")
        await wait_until(pilot, lambda: len(lines(desk_app)) == 3, what="three lines")
        assert lines(desk_app) == [
            ("#1", "reply with exactly: one"),
            ("#2", "reply with exactly: two"),
            ("#3", "reply with exactly: three"),
        ]
        queue = desk_app.widgets.queue
        assert queue.region.bottom <= desk_app.query_one("#input-row").region.y  # above it
        assert [p.text for p in desk_app.transcript.query(UserPrompt)] == [LONG_PROMPT]
        assert desk_app.status_bar.queued == 3

        two = queue.items[1]
        await click_until(
            pilot, two.query_one(".remove"), lambda: not two.is_attached, what="the line to go"
        )
        assert lines(desk_app) == [
            ("#1", "reply with exactly: one"),
            ("#2", "reply with exactly: three"),
        ]
        assert queued_in_gateway(gateway, desk_app) == [
            "reply with exactly: one",
            "reply with exactly: three",
        ]
        assert desk_app.status_bar.queued == 2
        assert desk_app.focused is desk_app.query_one(PromptInput)  # a click took no focus

        await pilot.press("escape")  # the first turn stops; the queue runs in order
        await wait_until(pilot, lambda: gateway.running_turns == 0 and not lines(desk_app))
        assert [p.text for p in desk_app.transcript.query(UserPrompt)] == [
            LONG_PROMPT,
            "reply with exactly: one",
            "reply with exactly: three",
        ]
        assert not queue.display


@pytest.mark.parametrize("tokens_per_second", [8.0])
async def test_a_queued_prompt_is_edited_in_its_place_and_up_edits_the_last(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    async with desk_app.run_test(size=(120, 40)) as pilot:
        box = desk_app.query_one(PromptInput)
        first = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: first.text, what="streaming")
        for n in ("one", "two", "three"):
            await submit(pilot, f"reply with exactly: {n}")
        await wait_until(pilot, lambda: len(lines(desk_app)) == 3, what="three lines")

        middle = desk_app.widgets.queue.items[1]
        await click_until(pilot, middle.query_one(".edit"), lambda: box.editing is not None)
        assert box.text == "reply with exactly: two" and middle.has_class("-editing")
        assert box.check_action("save_edit", ()) and not box.check_action("send_edit", ())
        box.text = "reply with exactly: TWO"
        await pilot.press("enter")  # saves it in its place
        await wait_until(pilot, lambda: box.editing is None and box.text == "", what="saved")
        assert queued_in_gateway(gateway, desk_app) == [
            "reply with exactly: one",
            "reply with exactly: TWO",
            "reply with exactly: three",
        ]
        assert lines(desk_app)[1] == ("#2", "reply with exactly: TWO")

        await pilot.press("up")  # on an empty box: the last queued prompt
        await wait_until(pilot, lambda: box.text == "reply with exactly: three", what="recall")
        assert box.editing == desk_app.widgets.queue.items[2].entry.key
        box.text = ""  # emptied, the box still edits it: Enter on it gives the edit up
        await pilot.press("enter")
        await wait_until(pilot, lambda: box.editing is None, what="the edit given up")
        assert queued_in_gateway(gateway, desk_app)[2] == "reply with exactly: three"

        await pilot.press("escape")
        await wait_until(pilot, lambda: gateway.running_turns == 0 and not lines(desk_app))
        texts = [p.text for p in desk_app.transcript.query(UserPrompt)]
        assert texts[2] == "reply with exactly: TWO"


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the first turn outlasts the test
async def test_a_queued_prompt_erased_and_retyped_in_the_box_is_replaced_not_queued_twice(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    # Emptying the box gave the edit up at once: the retyped text was queued as a new prompt
    async with desk_app.run_test(size=(120, 40)) as pilot:
        box = desk_app.query_one(PromptInput)
        first = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: first.text, what="streaming")
        await submit(pilot, "abc")
        await wait_until(pilot, lambda: lines(desk_app) == [("#1", "abc")], what="queued")
        await pilot.press("up")  # on an empty box: the last queued prompt
        await wait_until(pilot, lambda: box.text == "abc", what="in the box")
        await pilot.press("backspace", "backspace", "backspace", *"xyz", "enter")
        await wait_until(pilot, lambda: box.editing is None and box.text == "", what="saved")
        await wait_until(
            pilot, lambda: queued_in_gateway(gateway, desk_app) != ["abc"], what="the change"
        )
        assert queued_in_gateway(gateway, desk_app) == ["xyz"]  # not ["abc", "xyz"]
        await wait_until(pilot, lambda: lines(desk_app) == [("#1", "xyz")], what="replaced")

        await pilot.press("up")
        await wait_until(pilot, lambda: box.text == "xyz", what="in the box again")
        await pilot.press("backspace", "backspace", "backspace", "enter")  # Enter when empty
        await wait_until(pilot, lambda: box.editing is None, what="the edit given up")
        assert queued_in_gateway(gateway, desk_app) == ["xyz"]
        assert lines(desk_app) == [("#1", "xyz")]


@pytest.mark.parametrize("tokens_per_second", [8.0])  # the first turn outlasts the test
async def test_up_in_the_burst_that_queued_a_prompt_edits_it_and_adds_none(
    desk_app: DeskApp, gateway: Gateway
) -> None:
    # Up came before the desk had listed the prompt just queued: it recalled the history, and
    # the edit went out as a third prompt (both would have run).
    async with desk_app.run_test(size=(120, 40)) as pilot:
        box = desk_app.query_one(PromptInput)
        first = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: first.text, what="streaming")
        keys = [*"qa", "enter", *"qb", "enter", "up", "space", *"ED", "enter"]
        for key in keys:  # as a terminal delivers a burst (Pilot waits between keys)
            character = {"enter": "\r", "space": " ", "up": None}.get(key, key)
            desk_app.post_message(events.Key(key, character))
        await wait_until(
            pilot, lambda: queued_in_gateway(gateway, desk_app) == ["qa", "qb ED"], what="edit"
        )
        await wait_until(pilot, lambda: box.editing is None and box.text == "", what="saved")
        assert [text for _place, text in lines(desk_app)] == ["qa", "qb ED"]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "desk.db"


def store_gateway(server: DemoModelServer, db: Path) -> Gateway:
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    return Gateway(GatewayConfig(provider=provider, cwd=db.parent), store=SqliteStore(db))


@pytest.mark.parametrize("tokens_per_second", [8.0])
async def test_prompts_queued_at_quit_are_offered_again_on_resume(
    demo_server: DemoModelServer, db: Path
) -> None:
    gateway = store_gateway(demo_server, db)
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        first = await submit_and_get_reply(app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: first.text, what="streaming")
        await submit(pilot, "reply with exactly: later one")
        await submit(pilot, "reply with exactly: later two")
        await wait_until(pilot, lambda: len(lines(app)) == 2, what="two queued")
        session = app.session_id
        await pilot.press("ctrl+q")
        await wait_until(None, lambda: app.return_code is not None, what="the quit")
    gateway.shutdown(timeout_s=5.0)

    demo_server.configure(tokens_per_second=400.0)
    again = store_gateway(demo_server, db)
    startup = Startup(resume=True, resume_id=session)
    app = DeskApp(again, connection(demo_server.base_url), handle_signals=False, startup=startup)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: len(lines(app)) == 2, what="the offered prompts")
            assert lines(app) == [
                ("not sent", "reply with exactly: later one"),
                ("not sent", "reply with exactly: later two"),
            ]
            shown = [c for c in app.widgets.queue.children if c.display]
            assert [c.has_class("held-heading") for c in shown] == [True, False, False]
            assert again.session_queue(session) == []  # offered: nothing runs unasked
            # listed once: not also in the transcript as turns that were not sent
            assert [p.text for p in app.transcript.query(UserPrompt)] == [LONG_PROMPT]
            notes = [r.note for r in app.transcript.query(SavedReply)]
            assert not any("not sent" in note for note in notes), notes
            held = app.widgets.queue.items[1]
            await click_until(pilot, held.query_one(".resend"), lambda: not held.is_attached)

            def resent_and_answered() -> bool:
                # Not "no turn runs" alone: that holds too before the resent prompt's turn
                # has started (the click's submit is still on its way), which made this flaky.
                last = app.transcript.reply_turn_ids[-1:]
                reply = app.transcript.reply(last[0]) if last else None
                return reply is not None and reply.text == "later two" and not again.running_turns

            await wait_until(pilot, resent_and_answered, what="the resent prompt's reply")
            replies = [r.text for r in app.transcript.query(UserPrompt)]
            assert replies[-1] == "reply with exactly: later two"
            held = [("not sent", "reply with exactly: later one")]
            await wait_until(pilot, lambda: lines(app) == held, what="the held prompt listed")
            app.widgets.queue.items[0].query_one(".remove").press()  # ✕ forgets it
            await wait_until(pilot, lambda: not lines(app), what="forgotten")
            assert not isinstance(app.focused, QueuedItem)
    finally:
        again.shutdown(timeout_s=5.0)


async def quit_desk(app: DeskApp, pilot: object) -> None:
    """Ctrl+Q, and wait for the desk to close."""
    await pilot.press("ctrl+q")  # type: ignore[attr-defined]
    await wait_until(None, lambda: app.return_code is not None, what="the quit")


@pytest.mark.parametrize("tokens_per_second", [8.0])
async def test_a_prompt_not_sent_stays_offered_after_later_turns_until_sent_or_forgotten(
    demo_server: DemoModelServer, db: Path
) -> None:
    gateway = store_gateway(demo_server, db)
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        first = await submit_and_get_reply(app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: first.text, what="streaming")
        await submit(pilot, "keep me one")
        await wait_until(pilot, lambda: len(lines(app)) == 1, what="queued")
        session = app.session_id
        await quit_desk(app, pilot)
    gateway.shutdown(timeout_s=5.0)

    demo_server.configure(tokens_per_second=400.0)
    held = [("not sent", "keep me one")]
    startup = Startup(resume=True, resume_id=session)
    again = store_gateway(demo_server, db)
    app = DeskApp(again, connection(demo_server.base_url), handle_signals=False, startup=startup)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: lines(app) == held, what="the offered prompt")
            reply = await submit_and_get_reply(app, pilot, "new prompt reply with exactly: NP")
            await wait_until(pilot, lambda: reply.text == "NP", what="the new reply")
            await wait_until(pilot, lambda: not again.running_turns, what="the turn's end")
            assert lines(app) == held
            await quit_desk(app, pilot)
    finally:
        again.shutdown(timeout_s=5.0)

    third = store_gateway(demo_server, db)
    app = DeskApp(third, connection(demo_server.base_url), handle_signals=False, startup=startup)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: lines(app) == held, what="still offered")
            item = app.widgets.queue.items[0]
            await click_until(pilot, item.query_one(".resend"), lambda: not item.is_attached)
            await wait_until(pilot, lambda: not lines(app), what="sent again")
            await wait_until(pilot, lambda: not third.running_turns, what="the turn's end")
            await quit_desk(app, pilot)
    finally:
        third.shutdown(timeout_s=5.0)

    fourth = store_gateway(demo_server, db)
    app = DeskApp(fourth, connection(demo_server.base_url), handle_signals=False, startup=startup)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.session_id == session, what="the resume")
            await pilot.pause()
            assert lines(app) == []  # sent again: no longer offered
    finally:
        fourth.shutdown(timeout_s=5.0)


@pytest.mark.parametrize("tokens_per_second", [8.0])
async def test_a_prompt_not_sent_dismissed_with_x_stays_dismissed_after_a_resume(
    demo_server: DemoModelServer, db: Path
) -> None:
    gateway = store_gateway(demo_server, db)
    app = DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        first = await submit_and_get_reply(app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: first.text, what="streaming")
        for text in ("drop me", "keep me", "drop me"):  # one line stands for both "drop me"
            await submit(pilot, text)
        await wait_until(pilot, lambda: len(lines(app)) == 3, what="queued")
        session = app.session_id
        await quit_desk(app, pilot)
    gateway.shutdown(timeout_s=5.0)

    startup = Startup(resume=True, resume_id=session)
    both = [("not sent", "keep me"), ("not sent", "drop me")]
    again = store_gateway(demo_server, db)
    app = DeskApp(again, connection(demo_server.base_url), handle_signals=False, startup=startup)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: lines(app) == both, what="the offered prompts")
            item = app.widgets.queue.items[1]
            await click_until(pilot, item.query_one(".remove"), lambda: not item.is_attached)
            assert lines(app) == [("not sent", "keep me")]
            await quit_desk(app, pilot)
    finally:
        again.shutdown(timeout_s=5.0)

    third = store_gateway(demo_server, db)
    app = DeskApp(third, connection(demo_server.base_url), handle_signals=False, startup=startup)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.session_id == session, what="the resume")
            await wait_until(pilot, lambda: lines(app), what="the offered prompt")
            await pilot.pause()
            assert lines(app) == [("not sent", "keep me")]  # dismissed: offered no more
    finally:
        third.shutdown(timeout_s=5.0)
