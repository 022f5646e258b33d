"""Approvals show what will change: a write_file its diff against the file on disk (coloured,
scrollable, with its size) or a new file's first lines, a shell call its whole command; every
character through the terminal-safe filter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.change_preview import ChangePreview
from tests.desk.kit import answer_approval, connection, submit, wait_until
from tests.desk.test_hostile_text import IN_A_FILE, assert_safe, screen_text
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def app(demo_server: DemoModelServer, workspace: Path) -> Iterator[DeskApp]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=workspace, approvals=True))
    try:
        yield DeskApp(gateway, connection(demo_server.base_url), handle_signals=False)
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


def call(tool: str, **args: str) -> str:
    return f"call tool {tool} with " + json.dumps(args)


async def shown(app: DeskApp, pilot: object) -> ApprovalPrompt:
    def found() -> ApprovalPrompt | None:
        return next(app.screen.query(ApprovalPrompt).results(ApprovalPrompt), None)

    await wait_until(pilot, found, timeout_s=30.0, what="the approval prompt")  # type: ignore[arg-type]
    prompt = found()
    assert prompt is not None
    await pilot.pause()  # type: ignore[attr-defined]
    return prompt


async def test_a_write_file_approval_shows_the_diff_against_the_file(
    app: DeskApp, workspace: Path
) -> None:
    old = "".join(f"line {n}\n" for n in range(60)) + IN_A_FILE + "\n"
    (workspace / "notes.md").write_text(old)
    new = old.replace("line 30\n", "line thirty\n") + "appended \x1b[2J end\n"
    async with app.run_test(size=(120, 50)) as pilot:
        await submit(pilot, call("write_file", path="notes.md", content=new))
        prompt = await shown(app, pilot)
        preview = prompt.query_one(ChangePreview)
        assert "-line 30" in preview.text and "+line thirty" in preview.text
        assert "+appended ␛[2J end" in preview.text  # made visible, never sent
        size = str(prompt.query_one(".size").render())
        assert size.startswith("+2 −1 lines · ")
        assert "Allow write_file to change notes.md?" in str(prompt.query_one(".question").render())
        assert preview.max_scroll_y == 0 or preview.allow_vertical_scroll  # a box that scrolls
        assert_safe(screen_text(app), "the diff approval")
        await answer_approval(pilot, prompt, "y")
        await wait_until(pilot, lambda: (workspace / "notes.md").read_text() == new, what="write")


async def test_a_new_file_shows_its_first_lines(app: DeskApp, workspace: Path) -> None:
    content = "".join(f"print({n})\n" for n in range(100))
    async with app.run_test(size=(120, 50)) as pilot:
        await submit(pilot, call("write_file", path="new.py", content=content))
        prompt = await shown(app, pilot)
        preview = prompt.query_one(ChangePreview)
        assert preview.text.splitlines()[0] == "print(0)" and "print(39)" in preview.text
        assert "print(40)" not in preview.text
        assert "new file · 100 lines" in str(prompt.query_one(".size").render())
        assert "create new.py" in str(prompt.query_one(".question").render())
        await answer_approval(pilot, prompt, "n")
        await wait_until(pilot, lambda: app.running_turn is None, what="the denial")
    assert not (workspace / "new.py").exists()


async def test_a_shell_approval_shows_the_whole_command(app: DeskApp) -> None:
    command = "\n".join(f"echo step {n}" for n in range(30))
    async with app.run_test(size=(120, 50)) as pilot:
        await submit(pilot, call("shell", command=command))
        prompt = await shown(app, pilot)
        preview = prompt.query_one(ChangePreview)
        assert preview.text == command  # every line, not the first six
        assert preview.max_scroll_y > 0  # taller than its box: it scrolls
        assert str(prompt.query_one(".size").render()) == "30 lines"
        await answer_approval(pilot, prompt, "n")
        await wait_until(pilot, lambda: app.running_turn is None, what="the denial")
