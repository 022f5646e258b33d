"""Ctrl+G: the prompt box's text in $VISUAL/$EDITOR (a tiny script here), the saved text back in
the box; an editor that fails says so and the box keeps its text."""

from __future__ import annotations

from pathlib import Path

import pytest

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.stop_key import StopKey
from desk.widgets import PromptInput
from tests.desk.kit import connection, wait_until
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio

EDITS = """#!/bin/sh
# what a person does in the editor: keeps the text and adds a line
printf '%s\\nsecond line from the editor\\n' "$(cat "$1")" > "$1"
"""

FAILS = """#!/bin/sh
for file; do :; done  # the last argument: the file (an option comes first)
echo 'changed anyway' > "$file"
exit 3
"""


def script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(body)
    path.chmod(0o755)
    return path


def make_app(gateway: Gateway, server: DemoModelServer, **options: object) -> DeskApp:
    return DeskApp(gateway, connection(server.base_url), handle_signals=False, **options)  # type: ignore[arg-type]


async def test_the_saved_text_comes_back_into_the_box(
    gateway: Gateway, demo_server: DemoModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VISUAL", str(script(tmp_path, "edit.sh", EDITS)))
    app = make_app(gateway, demo_server)
    async with app.run_test(size=(100, 30)) as pilot:
        box = app.query_one(PromptInput)
        box.text = "first line"
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: "second" in box.text, what="the edited text")
        assert box.text == "first line\nsecond line from the editor"
        assert app.focused is box


async def test_an_editor_that_fails_says_so_and_the_box_keeps_its_text(
    gateway: Gateway, demo_server: DemoModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = script(tmp_path, "fail.sh", FAILS)
    monkeypatch.setenv("VISUAL", f"{failing} --wait")  # a command line, split like a shell
    app = make_app(gateway, demo_server)
    async with app.run_test(size=(100, 30)) as pilot:
        box = app.query_one(PromptInput)
        box.text = "keep me"
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: list(app._notifications), what="the toast")
        (toast,) = list(app._notifications)
        assert f"{failing} exited with 3" in toast.message and "keeps its text" in toast.message
        assert box.text == "keep me"


async def test_with_ctrl_g_as_the_stop_key_f4_opens_the_editor(
    gateway: Gateway, demo_server: DemoModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(script(tmp_path, "edit.sh", EDITS)))
    app = make_app(gateway, demo_server, stop_key=StopKey.parse("ctrl+g"))
    async with app.run_test(size=(100, 30)) as pilot:
        box = app.query_one(PromptInput)
        box.text = "x"
        await pilot.press("ctrl+g")  # the stop key: nothing runs, so nothing happens
        assert box.text == "x"
        await pilot.press("f4")
        await wait_until(pilot, lambda: "second" in box.text, what="the edited text")
