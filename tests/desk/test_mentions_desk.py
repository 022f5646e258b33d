"""@ in the prompt box: the workspace's files listed (fuzzy, .gitignore respected), Tab inserts
one (Tab again: the next), and the sent prompt carries the file's text to the server."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from textual import events
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Static

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.controllers.mentions import mention_at
from desk.widgets import PromptInput
from desk.widgets.mention_list import MentionList
from desk.widgets.session_item import SessionItem
from tests.desk.kit import wait_until
from tests.desk.test_snapshots_tools_sessions import make_app, make_gateway

FILES = {
    "README.md": "# Demo\nThe answer is forty-two.\n",
    "docs/reading.md": "notes\n",
    "src/reader.py": "print('hi')\n",
    "build/readme-copy.md": "ignored\n",
}


def workspace(root: Path) -> Path:
    """A small git repository whose .gitignore leaves build/ out."""
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("build/\n")
    return root


def test_a_mention_is_found_at_the_cursor() -> None:
    assert mention_at("look at @rea") == (8, "rea")
    assert mention_at("@") == (0, "")
    assert mention_at("mail me@host") is None
    assert mention_at("look at @README.md and more") is None
    assert mention_at('see @"notes (') == (4, "notes (")  # a quoted one, being typed
    assert mention_at('see @"notes (1).txt" and') is None


def reached(server: DemoModelServer, text: str) -> bool:
    """True once a request's last message, as the server got it, holds ``text``."""
    records = server.records.list()
    return any(r.messages and text in str(r.messages[-1].get("content")) for r in records)


def listed(app: object) -> list[str]:
    found = list(app.screen.query(MentionList))  # type: ignore[attr-defined]
    return found[0].lines if found and found[0].display else []


async def type_mention(app: object, pilot: Pilot[object], text: str) -> PromptInput:
    box = app.query_one(PromptInput)  # type: ignore[attr-defined]
    box.cursor_blink = False
    box.focus()
    box.text = text
    box.move_cursor(box.document.end)
    await wait_until(pilot, lambda: listed(app), what="the @ list")
    return box


@pytest.mark.anyio
async def test_tab_inserts_the_file_and_the_prompt_carries_its_text(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway = make_gateway(fast_server, workspace(tmp_path), approvals=False)
    app = make_app(gateway)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            box = await type_mention(app, pilot, "what does @rea")
            await wait_until(pilot, lambda: "› " not in "".join(listed(app)), what="matches")
            shown = [line.strip() for line in listed(app)[:3]]
            assert shown == ["@README.md", "@src/reader.py", "@docs/reading.md"]
            assert not any("build/" in line for line in listed(app))  # .gitignore respected
            await pilot.press("tab")
            assert box.text == "what does @README.md "
            await pilot.press("tab")
            assert box.text == "what does @src/reader.py "
            await pilot.press("tab", "tab")
            assert box.text == "what does @README.md "  # round again
            await pilot.press("s", "a", "y", "?")
            await wait_until(pilot, lambda: not listed(app), what="the list hidden")
            await pilot.press("enter")

            await wait_until(
                pilot,
                lambda: reached(fast_server, "The answer is forty-two."),
                what="the file's text at the server",
            )
    finally:
        gateway.shutdown(timeout_s=5.0)


def test_the_mention_list(
    snap_compare: object, fast_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway = make_gateway(fast_server, workspace(tmp_path), approvals=False)
    app = make_app(gateway)

    async def run_before(pilot: Pilot[object]) -> None:
        await wait_until(pilot, lambda: app.status_bar.window_note, what="the gateway's count")
        await type_mention(app, pilot, "explain @re")
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)  # type: ignore[operator]
    finally:
        gateway.shutdown(timeout_s=5.0)


UNDER = "o: no turn of this session ran this command "
"""A transcript line the @ list is drawn over."""


def rows_text(app: DeskApp, region: Region) -> list[str]:
    """The screen's text in ``region``, row by row, as the compositor renders it."""
    strips = app.screen._compositor.render_strips()
    rows = []
    for y in range(region.y, region.bottom):
        line = "".join(segment.text for segment in strips[y])
        rows.append(line[region.x : region.right])
    return rows


async def notes_then_mention(app: DeskApp, pilot: Pilot[object]) -> None:
    await wait_until(pilot, lambda: app.status_bar.window_note, what="the gateway's count")
    for _ in range(30):
        await app.view.add_note(UNDER * 3, scroll=True)
    await type_mention(app, pilot, "explain @a.t")
    await wait_until(pilot, lambda: "@a.txt" in "".join(listed(app)), what="the match")
    await pilot.pause()


@pytest.mark.anyio
async def test_the_list_hides_the_transcript_across_the_prompt_box_width(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    gateway = make_gateway(fast_server, workspace(tmp_path), approvals=False)
    app = make_app(gateway)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await notes_then_mention(app, pilot)
            mentions = app.screen.query_one(MentionList)
            box = app.query_one(PromptInput).region
            under = Region(box.x, mentions.region.y, box.width, mentions.region.height)
            rows = rows_text(app, under)
            assert [row.strip() for row in rows] == [line.strip() for line in mentions.lines]
    finally:
        gateway.shutdown(timeout_s=5.0)


def test_the_mention_list_over_the_transcript(
    snap_compare: object, fast_server: DemoModelServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    gateway = make_gateway(fast_server, workspace(tmp_path), approvals=False)
    app = make_app(gateway)

    async def run_before(pilot: Pilot[object]) -> None:
        await notes_then_mention(app, pilot)

    try:
        assert snap_compare(app, terminal_size=(100, 24), run_before=run_before)  # type: ignore[operator]
    finally:
        gateway.shutdown(timeout_s=5.0)


def burst(app: object, *keys: str) -> None:
    """Keys posted at once, as a terminal delivers a fast burst (Pilot waits between keys)."""
    for key in keys:
        name = {" ": "space"}.get(key, key)
        app.post_message(events.Key(name, key if len(key) == 1 else None))  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_keys_typed_right_after_tab_follow_the_inserted_file(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway = make_gateway(fast_server, workspace(tmp_path), approvals=False)
    app = make_app(gateway)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            box = await type_mention(app, pilot, "see @README")
            await wait_until(pilot, lambda: "@README.md" in "".join(listed(app)), what="match")
            burst(app, "tab", *"XYZ")
            await wait_until(pilot, lambda: "README.md" in box.text, what="the completion")
            await pilot.pause()
            assert box.text == "see @README.md XYZ"

            box.text = ""
            await type_mention(app, pilot, "what does @src/rea")
            await wait_until(pilot, lambda: "@src/reader.py" in "".join(listed(app)), what="match")
            burst(app, "tab", *" say hi", "enter")

            def sent() -> list[str]:
                contents = (
                    str(r.messages[-1].get("content"))
                    for r in fast_server.records.list()
                    if r.messages
                )
                return [text for text in contents if "say hi" in text]

            await wait_until(pilot, sent, what="the prompt at the server")
            (text,) = sent()
            assert "what does @src/reader.py  say hi" in text
            assert "print('hi')" in text  # the completed mention attached the file
    finally:
        gateway.shutdown(timeout_s=5.0)


async def typed_in(pilot: Pilot[object], box: PromptInput, length: int) -> str:
    """The box's text once it holds ``length`` characters and the app is idle."""
    await wait_until(pilot, lambda: len(box.text) >= length, what="the keys typed")
    await pilot.pause()
    return box.text


@pytest.mark.anyio
async def test_random_bursts_after_tab_keep_every_key_in_order(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    rng = random.Random(20261202)
    gateway = make_gateway(fast_server, workspace(tmp_path), approvals=False)
    app = make_app(gateway)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(6):
                box = await type_mention(app, pilot, "see @README")
                await wait_until(pilot, lambda: "@README.md" in "".join(listed(app)), what="match")
                tail = "".join(rng.choice("abXY @?.") for _ in range(rng.randint(1, 25)))
                burst(app, "tab", *tail)
                assert await typed_in(pilot, box, len("see @README.md ") + len(tail))
                assert box.text == "see @README.md " + tail
                box.text = ""
                await wait_until(pilot, lambda: not listed(app), what="the list hidden")
    finally:
        gateway.shutdown(timeout_s=5.0)


@pytest.mark.anyio
async def test_tab_in_the_burst_that_types_the_mention_completes_that_mention(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway = make_gateway(fast_server, workspace(tmp_path), approvals=False)
    app = make_app(gateway)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            box = app.query_one(PromptInput)
            box.focus()
            burst(app, *"x @src/rea", "tab")  # the first mention: nothing looked up yet
            assert await typed_in(pilot, box, len("x @src/reader.py "))
            assert box.text == "x @src/reader.py "
            box.text = "a @docs/rea"
            box.move_cursor(box.document.end)
            await wait_until(pilot, lambda: "@docs/reading.md" in "".join(listed(app)), what="ls")
            box.text = ""
            burst(app, *"b @READ", "tab")  # the list still shows the last mention's files
            assert await typed_in(pilot, box, len("b @README.md "))
            assert box.text == "b @README.md "
    finally:
        gateway.shutdown(timeout_s=5.0)


@pytest.mark.anyio
async def test_the_title_is_what_was_typed_not_the_attached_file(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway = make_gateway(fast_server, workspace(tmp_path / "work"), approvals=False)
    app = make_app(gateway)
    target = tmp_path / "export.md"
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            box = app.query_one(PromptInput)
            box.text = "what does @README.md say"
            await pilot.press("enter")
            await wait_until(pilot, lambda: fast_server.records.list(), what="the request")
            await wait_until(pilot, lambda: not box.busy, what="the turn's end")
            await pilot.press("ctrl+b")
            await wait_until(pilot, lambda: app.query(SessionItem), what="the sidebar")
            titles = [str(t.render()) for t in app.query(".title").results(Static)]
            assert any("what does @README.md say" in t for t in titles), titles
            assert not any("file path" in t or "forty-two" in t for t in titles), titles
            box.focus()
            box.text = f"/export {target}"
            await pilot.press("enter")
            await wait_until(pilot, target.exists, what="the export")
        assert target.read_text().splitlines()[0] == "# what does @README.md say"
    finally:
        gateway.shutdown(timeout_s=5.0)


@pytest.mark.anyio
async def test_a_file_not_in_utf8_is_not_attached_and_the_screen_says_why(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    root = workspace(tmp_path)
    (root / "latin1.txt").write_bytes("café au lait\n".encode("latin-1"))
    gateway = make_gateway(fast_server, root, approvals=False)
    app = make_app(gateway)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            box = app.query_one(PromptInput)
            box.text = "what is in @latin1.txt"
            await pilot.press("enter")
            await wait_until(pilot, lambda: list(app._notifications), what="the toast")
            said = [str(n.message) for n in app._notifications]
            assert any("@latin1.txt is not UTF-8 text" in s for s in said), said
            await wait_until(pilot, lambda: box.text, what="the prompt given back")
            assert box.text == "what is in @latin1.txt"
            assert fast_server.records.list() == []  # nothing was sent, no � either
    finally:
        gateway.shutdown(timeout_s=5.0)


@pytest.mark.anyio
async def test_tab_quotes_a_name_a_bare_mention_cannot_spell_and_the_file_is_attached(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    root = workspace(tmp_path)
    (root / "notes (1).txt").write_text("The note says seventeen.\n")
    gateway = make_gateway(fast_server, root, approvals=False)
    app = make_app(gateway)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            box = await type_mention(app, pilot, "read @notes")
            await wait_until(pilot, lambda: "notes (1)" in "".join(listed(app)), what="match")
            await pilot.press("tab")
            assert box.text == 'read @"notes (1).txt" '
            await pilot.press("enter")

            await wait_until(
                pilot,
                lambda: reached(fast_server, "The note says seventeen."),
                what="the file's text at the server",
            )
    finally:
        gateway.shutdown(timeout_s=5.0)
