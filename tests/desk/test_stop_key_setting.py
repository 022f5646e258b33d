"""The stop key is configurable: ``stop_key`` in config.toml (Esc by default, or one key twice
for a double press) reaches the desk from the entry point, and F1 names it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot

from demo_model.server import DemoModelServer
from desk.__main__ import main
from desk.app import DeskApp
from desk.screens.help_screen import HelpScreen
from desk.stop_key import StopKey
from tests.desk.kit import connection, submit_and_get_reply, wait_until
from tui_gateway.gateway import Gateway
from tui_gateway.settings.config_file import read_config_file
from tui_gateway.settings.resolution import SettingsError, StoreDefault, resolve_settings

pytestmark = pytest.mark.anyio


async def press_made_at(pilot: Pilot[object], key: str, made: float) -> None:
    """Press ``key`` as a key made at ``made`` (``time.monotonic()`` seconds), as the terminal
    would stamp it, and let the app handle it."""
    event = events.Key(key, None)
    event.time = made
    event.set_sender(pilot.app)
    driver = pilot.app._driver
    assert driver is not None
    driver.send_message(event)
    await pilot.pause()


def config(config_home: Path, text: str) -> Path:
    path = config_home / "desk" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "setting"),
    [
        ("", "escape"),
        ('stop_key = "Ctrl+G"\n', "ctrl+g"),
        ('stop_key = "escape escape"\n', "escape escape"),
        ('stop_key = "esc"\n', "escape"),  # the name the footer shows it by
        ('stop_key = "Esc esc"\n', "escape escape"),
        ('stop_key = "shift+ctrl+up"\n', "ctrl+shift+up"),  # Textual's order
    ],
)
def test_the_setting_is_read_from_the_config_file(
    config_home: Path, text: str, setting: str
) -> None:
    config(config_home, text)
    file = read_config_file({"XDG_CONFIG_HOME": str(config_home)})
    settings = resolve_settings({}, {}, file, store_default=StoreDefault.MEMORY)
    assert settings.stop_key == setting


def test_a_bad_stop_key_names_the_file_and_key(
    config_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(config_home, 'stop_key = "escape ctrl+g"\n')
    file = read_config_file({"XDG_CONFIG_HOME": str(config_home)})
    with pytest.raises(SettingsError, match="stop_key must be one key"):
        resolve_settings({}, {}, file, store_default=StoreDefault.MEMORY)
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"desk: {path}: stop_key must be one key") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("text", "why"),
    [
        *((name, f"{name!r} is not a key name") for name in ("nokey", "ctrl+nokey", "escape_key")),
        *((name, f"{name!r} is not a key name") for name in ("f99", "ctrl+ctrl+g")),
        *((text, "'ctrl+q' is the quit key, it cannot stop too") for text in ("ctrl+q", "Ctrl+Q")),
        ("ctrl+q ctrl+q", "'ctrl+q' is the quit key, it cannot stop too"),
    ],
)
def test_a_stop_key_that_cannot_stop_stops_desk_before_the_screen(
    config_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    why: str,
) -> None:
    path = config(config_home, f'stop_key = "{text}"\n')
    drawn: list[DeskApp] = []
    monkeypatch.setattr(DeskApp, "run", lambda app: drawn.append(app))  # the screen
    assert main([]) == 2
    assert drawn == []
    err = capsys.readouterr().err
    assert err == f"desk: {path}: stop_key: {why} (e.g. 'escape', 'ctrl+g', 'f9')\n"


def test_desk_starts_with_the_configured_stop_key(
    config_home: Path, demo_server: DemoModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    config(config_home, 'stop_key = "escape escape"\n')
    seen: list[StopKey] = []

    def run(app: DeskApp) -> None:  # the terminal is not ours in a test: record and leave
        seen.append(app.stop_key)

    monkeypatch.setattr(DeskApp, "run", run)
    monkeypatch.setattr("desk.__main__._on_a_terminal", lambda _env: True)  # as if it had one
    assert main(["--base-url", demo_server.base_url, "--model", "demo"]) == 0
    assert seen == [StopKey("escape", double=True)]


@pytest.mark.parametrize("tokens_per_second", [8.0])
async def test_a_double_stop_key_stops_on_the_second_press_and_f1_says_so(
    gateway: Gateway, demo_server: DemoModelServer
) -> None:
    app = DeskApp(
        gateway,
        connection(demo_server.base_url),
        handle_signals=False,
        stop_key=StopKey.parse("escape escape"),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        entered = time.monotonic()
        reply = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: reply.text, what="streaming")
        # The keys carry the times they were made (the window is 0.5 s): a loaded machine
        # that delivers them late cannot move one into or out of the window. All three are
        # made after the Enter (a key made before it never stops its prompt).
        await wait_until(pilot, lambda: time.monotonic() > entered + 1.0, what="a second")
        made = time.monotonic() - 0.9
        await press_made_at(pilot, "escape", made)  # one press: an ordinary Esc
        await press_made_at(pilot, "escape", made + 0.6)  # past the double press's window
        assert reply.outcome is None and app.running_turn is not None
        await press_made_at(pilot, "escape", made + 0.7)  # the second of a pair: a stop
        await wait_until(pilot, lambda: reply.outcome == "interrupted", what="the stop")

        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        keys = dict(dict(app.screen.sections)["Keys"])
        assert keys["Esc Esc"].startswith("Pressed twice within 0.5 s: stop the running turn")
        assert 'stop_key = "escape escape" in config.toml' in keys["Esc Esc"]
