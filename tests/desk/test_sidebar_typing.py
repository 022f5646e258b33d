"""Keys typed in a burst with the sessions sidebar open: every letter lands somewhere visible,
the keys typed after the rename key land in the rename box in order, and the sidebar's
highlight follows the session shown."""

from __future__ import annotations

import asyncio

import pytest
from textual import events

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.screens.confirm_delete import ConfirmDelete
from desk.widgets import UserPrompt
from desk.widgets.sessions_sidebar import SessionsSidebar
from tests.desk.kit import wait_until
from tests.desk.saved_sessions_kit import NEWER_ID, OLDER_ID, SAVED_AT
from tests.desk.test_sessions import db, make_app, store_gateway  # noqa: F401 (fixtures)
from tests.desk.test_sessions_keys import sidebar_open
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio

RENAME = "ctrl+r"
"""The sidebar's rename key."""

KEY_CHARACTERS = {
    "space": " ",
    "enter": "\r",
    "ctrl+r": "\x12",
    "ctrl+u": "\x15",
    "backspace": "\x7f",
}


def burst(app: DeskApp, keys: list[str]) -> None:
    """Post ``keys`` at once, as a terminal delivers a fast burst (Pilot waits between keys)."""
    for key in keys:
        character = KEY_CHARACTERS.get(key, key if len(key) == 1 else None)
        app.post_message(events.Key(key, character))


def typed(text: str) -> list[str]:
    return ["space" if c == " " else c for c in text]


def title_of(sidebar: SessionsSidebar, session_id: str) -> str:
    """The title the sidebar lists for ``session_id`` ("" while the list is being replaced)."""
    return next((i.info.title for i in sidebar.items if i.info.session_id == session_id), "")


async def test_a_title_typed_right_after_the_rename_key_renames_and_is_never_sent(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, box = await sidebar_open(app, pilot)
        prompts = len(app.transcript.query(UserPrompt))
        burst(app, [RENAME, *typed("title two"), "enter"])
        await wait_until(
            pilot, lambda: title_of(sidebar, NEWER_ID) == "title two", what="the new title"
        )
        await pilot.pause()
        assert box.text == "" and len(app.transcript.query(UserPrompt)) == prompts  # not sent


async def test_keys_typed_after_ctrl_u_in_the_rename_box_stay_and_enter_saves_them(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, box = await sidebar_open(app, pilot)
        await pilot.press(RENAME)
        rename = sidebar.query_one("#session-rename")
        await wait_until(pilot, lambda: rename.has_focus, what="the rename box")
        burst(app, ["ctrl+u", *typed("fresh"), "backspace", "h", "enter"])
        await wait_until(
            pilot, lambda: title_of(sidebar, NEWER_ID) == "fresh", what="the new title"
        )
        assert box.text == ""


async def test_a_word_typed_with_the_sidebar_open_reaches_the_prompt_box_whole(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, box = await sidebar_open(app, pilot)
        burst(app, typed("draw red"))
        await wait_until(pilot, lambda: box.text.endswith("d"), what="the keys")
        await pilot.pause()
        assert box.text == "draw red" and box.has_focus
        assert not isinstance(app.screen, ConfirmDelete) and not sidebar.has_class("-renaming")


@pytest.mark.parametrize("second", ["second", ""])
async def test_prompts_typed_with_the_sidebar_open_are_sent_each_on_its_own(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
    second: str,
) -> None:
    # The first letter took the focus to the prompt box; the Enter behind it in the burst had
    # gone to the sessions list, which opened the highlighted session: the prompt was not sent
    # and the next one was typed onto it ("first promptsecond").
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        _sidebar, box = await sidebar_open(app, pilot)
        before = [p.text for p in app.transcript.query(UserPrompt)]
        keys = [*typed("first prompt"), "enter"]
        burst(app, [*keys, *typed(second), "enter"] if second else keys)
        sent = ["first prompt", second] if second else ["first prompt"]

        def shown() -> list[str]:
            return [p.text for p in app.transcript.query(UserPrompt)][len(before) :]

        await wait_until(pilot, lambda: len(shown()) >= len(sent), what="the prompts")
        await pilot.pause()
        assert shown() == sent and box.text == "" and box.has_focus
        assert app.session_id == NEWER_ID


async def test_after_new_the_highlight_is_on_the_new_session(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, box = await sidebar_open(app, pilot)
        await pilot.press("ctrl+b")  # closed
        await pilot.press(*typed("/new"), "enter")
        await wait_until(pilot, lambda: app.session_id != NEWER_ID, what="the new session")
        await pilot.press("ctrl+b")
        await wait_until(pilot, lambda: len(sidebar.items) == 3, what="the list")
        selected = sidebar.selected()
        assert selected is not None and selected.info.session_id == app.session_id
        await pilot.press("delete")  # offers to delete the session shown, not an older one
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDelete), what="the modal")
        assert isinstance(app.screen, ConfirmDelete)
        assert app.screen.session_title == "(new session)"


async def test_ctrl_b_ctrl_r_and_a_title_in_one_burst_rename_the_session_shown(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
) -> None:
    # The list is not read yet when Ctrl+R comes (nor focused): the session shown is renamed.
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(
            pilot, lambda: app.controllers.sessions.resume_rendered_at is not None, what="render"
        )
        sidebar, box = app.widgets.sidebar, app.widgets.prompt
        prompts = len(app.transcript.query(UserPrompt))
        burst(app, ["ctrl+b", RENAME, *typed("burst title"), "enter"])
        await wait_until(
            pilot, lambda: title_of(sidebar, NEWER_ID) == "burst title", what="the new title"
        )
        await pilot.pause()
        assert box.text == "" and len(app.transcript.query(UserPrompt)) == prompts  # not sent
        # the list read as the sidebar opened and read again after the rename: listed once
        await wait_until(pilot, lambda: len(sidebar.items) >= 2, what="the list")
        for _ in range(10):
            await pilot.pause()
        assert [i.info.session_id for i in sidebar.items] == [NEWER_ID, OLDER_ID]


async def test_ctrl_r_after_typing_with_the_sidebar_open_still_renames(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
) -> None:
    # A word typed with the sidebar open took the focus to the prompt box; Ctrl+R then
    # renames the highlighted session, and the word stays in the box.
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, box = await sidebar_open(app, pilot)
        burst(app, typed("draft"))
        await wait_until(pilot, lambda: box.text == "draft", what="the word in the box")
        burst(app, [RENAME, *typed("later title"), "enter"])
        await wait_until(
            pilot, lambda: title_of(sidebar, NEWER_ID) == "later title", what="the new title"
        )
        await pilot.pause()
        assert box.text == "draft"


async def test_a_word_then_ctrl_r_in_one_burst_keep_the_word_in_the_box(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, box = await sidebar_open(app, pilot)
        burst(app, [*typed("word5"), RENAME, *typed("Title5"), "enter"])
        await wait_until(pilot, lambda: title_of(sidebar, NEWER_ID) == "Title5", what="title")
        await pilot.pause()
        assert box.text == "word5"


@pytest.mark.parametrize("keys", [["down", "delete"], ["down", "up", "down", "delete"]])
async def test_an_arrow_then_delete_in_one_burst_offer_the_session_moved_to(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
    keys: list[str],
) -> None:
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, _box = await sidebar_open(app, pilot)
        selected = sidebar.selected()
        assert selected is not None and selected.info.session_id == NEWER_ID
        burst(app, keys)
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDelete), what="the modal")
        assert isinstance(app.screen, ConfirmDelete)
        assert app.screen.session_title == "Plan the release"  # the older one, moved to


async def test_the_list_read_twice_at_once_lists_each_session_once(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
) -> None:
    # The list read as Ctrl+B opened the sidebar and read again after a rename typed in the
    # same burst: the two replacements ran into each other and listed every session twice.
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, _box = await sidebar_open(app, pilot)
        sessions = store_gateway.session_list()
        now = SAVED_AT + 3600
        await asyncio.gather(
            sidebar.show(sessions, current=NEWER_ID, now=now),
            sidebar.show(sessions, current=NEWER_ID, now=now),
        )
        assert [i.info.session_id for i in sidebar.items] == [NEWER_ID, OLDER_ID]


@pytest.mark.parametrize(
    ("keys", "deleted", "text"),
    [
        (["n", *typed("hello")], False, "hello"),
        (["escape", *typed("hello")], False, "hello"),
        (["enter", *typed("hello")], False, "hello"),  # the focused button: Cancel
        (typed("hello"), False, "ello"),  # a stray letter only cancels
        (["ctrl+b", *typed("xyz")], False, "xyz"),  # cancels; the sidebar stays open
        (["y", *typed("next")], True, "next"),
        (["tab", "enter", *typed("next")], True, "next"),  # Tab to Delete, Enter presses it
    ],
)
async def test_the_key_that_answers_the_delete_confirmation_acts_once_and_the_next_keys_go_on(
    store_gateway: Gateway,  # noqa: F811 (the fixture)
    demo_server: DemoModelServer,
    keys: list[str],
    deleted: bool,
    text: str,
) -> None:
    # Typed in one burst: the keys behind the answer came to the closing confirmation and were
    # lost, and each closed it again (the desk's own screen was popped: the app crashed).
    app = make_app(store_gateway, demo_server.base_url, resume=True)
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar, box = await sidebar_open(app, pilot)
        await pilot.press("delete")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDelete), what="the modal")
        burst(app, keys)
        await wait_until(pilot, lambda: len(box.text) >= len(text), what="the keys behind")
        if deleted:
            await wait_until(pilot, lambda: app.session_id != NEWER_ID, what="the deletion")
        for _ in range(5):
            await pilot.pause()
        assert box.text == text and box.has_focus
        assert not isinstance(app.screen, ConfirmDelete) and sidebar.is_open
        listed = store_gateway.session_list()
        assert (NEWER_ID not in [s.session_id for s in listed]) is deleted
        assert app.session_id != NEWER_ID if deleted else app.session_id == NEWER_ID
