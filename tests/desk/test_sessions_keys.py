"""Saved sessions in the desk, continued: letters typed with the sessions sidebar open reach the
prompt box (its own keys, Ctrl+R and Delete, type no letter), and the resume line at exit."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.screens.confirm_delete import ConfirmDelete
from desk.widgets import PromptInput
from desk.widgets.sessions_sidebar import SessionsSidebar
from tests.desk.kit import submit_and_get_reply, wait_until
from tests.desk.test_sessions import db, make_app, store_gateway  # noqa: F401 (fixtures)
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


async def test_a_start_up_notice_about_something_else_keeps_the_resume_line(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(tmp_path / "desk.db"))
    app = make_app(gateway, demo_server.base_url, notice="shell runs without a sandbox")
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            reply = await submit_and_get_reply(app, pilot, "reply with exactly: saved")
            await wait_until(pilot, lambda: reply.outcome is not None, what="the turn")
            hint = app.controllers.sessions.resume_hint()
            assert hint == f"to resume this session: desk --resume {app.session_id}"
    finally:
        gateway.shutdown(timeout_s=5.0)


async def sidebar_open(app: DeskApp, pilot: Pilot[int]) -> tuple[SessionsSidebar, PromptInput]:
    """The resumed session rendered, then the sessions sidebar opened on its two sessions."""
    await wait_until(
        pilot,
        lambda: app.controllers.sessions.resume_rendered_at is not None,
        what="the render",
    )
    await pilot.press("ctrl+b")
    sidebar = app.widgets.sidebar
    await wait_until(pilot, lambda: len(sidebar.items) == 2, what="the list")
    return sidebar, app.widgets.prompt


async def test_typing_with_the_sidebar_open_goes_to_the_prompt_box_r_and_d_included(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, box = await sidebar_open(app, pilot)
        for key in "order bread":  # a burst, as a terminal delivers it (Pilot waits)
            name = "space" if key == " " else key
            app.post_message(events.Key(name, key))
        await wait_until(pilot, lambda: box.text.endswith("a") or "d" in box.text, what="keys")
        await pilot.pause()
        await pilot.pause()
        assert box.text == "order bread" and box.has_focus
        assert sidebar.is_open and not sidebar.has_class("-renaming")
        assert not isinstance(app.screen, ConfirmDelete)

        box.text = ""
        await pilot.click(box)  # the sidebar merely open, the focus in the box
        await pilot.press(*"d r")
        await pilot.pause()
        assert box.text == "d r" and box.has_focus
        assert not sidebar.has_class("-renaming") and not isinstance(app.screen, ConfirmDelete)

        sidebar.list_view.focus()  # moved there on purpose: its own keys work
        await pilot.press("ctrl+r")
        rename = sidebar.query_one("#session-rename")
        await wait_until(pilot, lambda: rename.has_focus, what="the rename box")


async def test_random_bursts_typed_at_the_sessions_list_reach_the_box_whole_and_in_order(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
) -> None:
    rng = random.Random(20261202)
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, box = await sidebar_open(app, pilot)
        for _ in range(8):
            box.text = ""
            sidebar.list_view.focus()
            await wait_until(pilot, lambda: sidebar.list_view.has_focus, what="the list")
            text = "".join(rng.choice("rdRDeo ?x") for _ in range(rng.randint(5, 40)))
            for key in text:
                app.post_message(events.Key("space" if key == " " else key, key))
            typed = len(text)
            await wait_until(pilot, lambda n=typed: len(box.text) >= n, what="the burst")
            await pilot.pause()
            assert box.text == text and box.has_focus
            assert not sidebar.has_class("-renaming")
            assert not isinstance(app.screen, ConfirmDelete)
