"""Themes in the running desk: /theme switches and saves, start-up reads it, problems show once."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.widgets import AssistantReply, PromptInput
from tests.desk.kit import submit
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio


def _new_app(gateway: Gateway, server: DemoModelServer) -> DeskApp:
    info = ConnectionInfo("demo", server.base_url, is_demo=True, source="--demo")
    return DeskApp(gateway, info, handle_signals=False)


def _config(config_home: Path) -> Path:
    return config_home / "desk" / "config.toml"


async def test_slash_theme_switches_persists_and_sends_nothing(
    desk_app: DeskApp, config_home: Path, demo_server: DemoModelServer
) -> None:
    _config(config_home).parent.mkdir(parents=True)
    _config(config_home).write_text('# mine\nmodel = "demo"\n\n[later]\nkeep = true\n')
    async with desk_app.run_test(size=(100, 30)) as pilot:
        assert desk_app.theme == "dark"
        await submit(pilot, "/theme light")
        assert desk_app.theme == "light"
        assert desk_app.query_one(PromptInput).text == ""
        await submit(pilot, "/theme high-contrast")
        assert desk_app.theme == "high-contrast"
        assert not desk_app.transcript.query(AssistantReply)  # nothing reached the model
    assert [r for r in demo_server.records.list() if "chat" in r.path] == []
    data = tomllib.loads(_config(config_home).read_text())
    assert data == {"model": "demo", "theme": "high-contrast", "later": {"keep": True}}
    assert _config(config_home).read_text().startswith("# mine\n")


async def test_the_saved_theme_is_used_at_start(
    gateway: Gateway, demo_server: DemoModelServer, config_home: Path
) -> None:
    _config(config_home).parent.mkdir(parents=True)
    _config(config_home).write_text('theme = "light"\n')
    app = _new_app(gateway, demo_server)
    async with app.run_test(size=(100, 30)):
        assert app.theme == "light"
        assert not app.current_theme.dark
        assert list(app._notifications) == []


async def test_an_unknown_theme_is_refused_and_nothing_is_saved(
    desk_app: DeskApp, config_home: Path
) -> None:
    async with desk_app.run_test(size=(100, 30)) as pilot:
        await submit(pilot, "/theme nosuch")
        assert desk_app.theme == "dark"
        messages = [n.message for n in desk_app._notifications]
        assert len(messages) == 1 and messages[0].startswith("no theme named 'nosuch'")
        await submit(pilot, "/theme")
        notes = [str(s.content) for s in desk_app.transcript.query(".note")]
        assert notes[-1].startswith("themes: dark (current), light, high-contrast")
    assert not _config(config_home).exists()


async def test_broken_theme_files_give_one_notice_and_the_desk_runs(
    gateway: Gateway, demo_server: DemoModelServer, config_home: Path
) -> None:
    themes = config_home / "desk" / "themes"
    themes.mkdir(parents=True)
    (themes / "broken.toml").write_text("primary = [\n")
    (themes / "odd.toml").write_text('primary = "#12"\n')
    (themes / "mine.toml").write_text('primary = "#884400"\n')
    _config(config_home).write_text('theme = "mine"\n')
    app = _new_app(gateway, demo_server)
    async with app.run_test(size=(100, 30)):
        notices = list(app._notifications)
        assert len(notices) == 1
        assert notices[0].severity == "warning"
        lines = notices[0].message.splitlines()
        assert len(lines) == 2
        assert "broken.toml: not valid TOML" in lines[0]
        assert "odd.toml" in lines[1]
        assert app.theme == "mine"  # a good file beside broken ones still loads
        assert "Traceback" not in notices[0].message


async def test_a_saved_theme_that_is_gone_falls_back_with_a_notice(
    gateway: Gateway, demo_server: DemoModelServer, config_home: Path
) -> None:
    _config(config_home).parent.mkdir(parents=True)
    _config(config_home).write_text('theme = "vanished"\n')
    app = _new_app(gateway, demo_server)
    async with app.run_test(size=(100, 30)):
        assert app.theme == "dark"
        (notice,) = list(app._notifications)
        assert "vanished" in notice.message
    assert _config(config_home).read_text() == 'theme = "vanished"\n'  # not overwritten
