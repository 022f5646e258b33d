"""The gateway built from settings: it opens the store the settings name, runs tools in the
workspace, uses the configured context window, and says in one line when the store cannot
be opened."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from agent.provider.client import ProviderConfig
from agent.store import open_store
from tui_gateway.assembly import StoreUnavailable, build_gateway, gateway_config
from tui_gateway.settings.config_file import ConfigFile
from tui_gateway.settings.resolution import (
    SettingKey,
    SettingsError,
    StoreDefault,
    resolve_settings,
)


def test_window_workspace_and_store_reach_the_gateway(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    db = tmp_path / "sessions.db"
    flags: dict[SettingKey, str | bool | None] = {
        "context_window": "2048",
        "workspace": str(work),
        "db": str(db),
    }
    settings = resolve_settings(flags, {}, None, store_default=StoreDefault.MEMORY)
    gateway = build_gateway(settings, provider, max_sessions=3, tools=False)
    try:
        assert gateway.config.context_window == 2048
        assert gateway.config.cwd == work
        assert (gateway.config.max_sessions, gateway.config.tools) == (3, False)
        session_id = gateway.session_create()
        assert gateway.session_cwd(session_id) == work
        gateway.session_rename(session_id, "kept")  # a session never used is not kept
    finally:
        gateway.shutdown(timeout_s=5.0)
    store = open_store(db)  # the session was saved in the database the settings named
    try:
        [row] = store.sessions.list_sessions()
        assert (row.id, row.cwd) == (session_id, str(work))
    finally:
        store.close()


def test_without_a_database_sessions_stay_in_memory(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    settings = resolve_settings({}, {}, None, store_default=StoreDefault.MEMORY, cwd=tmp_path)
    gateway = build_gateway(settings, provider)
    try:
        assert gateway.config.cwd == tmp_path and gateway.config.context_window is None
        session_id = gateway.session_create()
        assert gateway.session_cwd(session_id) == tmp_path
    finally:
        gateway.shutdown(timeout_s=5.0)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["directory", "not a database", "unknown URL"])
def test_a_store_that_cannot_be_opened_is_one_line(
    provider: ProviderConfig, tmp_path: Path, kind: str
) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a sqlite file" * 100)
    location = {
        "directory": str(tmp_path),
        "not a database": str(bad),
        "unknown URL": "mysql://h/db",
    }[kind]
    settings = resolve_settings({"db": location}, {}, None, store_default=StoreDefault.MEMORY)
    with pytest.raises(StoreUnavailable) as info:
        build_gateway(settings, provider)
    assert info.value.message == f"cannot open the database: {info.value.reason}"
    assert info.value.location == location and "\n" not in info.value.message
    gateway = build_gateway(settings, provider, persist=False)  # the desk's way on
    try:
        gateway.session_create()
    finally:
        gateway.shutdown(timeout_s=5.0)


@pytest.mark.parametrize(
    ("value", "offered", "schemas"),
    [
        ("auto", True, "auto"),
        ("full", True, "full"),
        ("compact", True, "compact"),
        ("off", False, "auto"),
    ],
)
def test_the_tools_setting_reaches_the_gateway(
    provider: ProviderConfig, tmp_path: Path, value: str, offered: bool, schemas: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f'tools = "{value}"\n')
    file = ConfigFile(path, MappingProxyType({"tools": value}), exists=True)
    settings = resolve_settings({}, {}, file, store_default=StoreDefault.MEMORY, cwd=tmp_path)
    assert settings.tools == value
    gateway = build_gateway(settings, provider)
    try:
        assert (gateway.config.tools, gateway.config.tool_schemas) == (offered, schemas)
    finally:
        gateway.shutdown(timeout_s=5.0)


def test_a_bad_tools_setting_is_one_line(tmp_path: Path) -> None:
    file = ConfigFile(tmp_path / "config.toml", MappingProxyType({"tools": "none"}), exists=True)
    with pytest.raises(SettingsError) as info:
        resolve_settings({}, {}, file, store_default=StoreDefault.MEMORY, cwd=tmp_path)
    assert info.value.message.endswith(
        'config.toml: tools must be one of "auto", "full", "compact", "off", not \'none\''
    )


def test_a_local_model_server_yields_at_nice_10_unless_the_setting_says_otherwise(
    tmp_path: Path,
) -> None:
    def nice_of(data: dict[str, object], env: dict[str, str] | None = None) -> int:
        file = ConfigFile(tmp_path / "config.toml", MappingProxyType(data), exists=True)
        settings = resolve_settings(
            {}, env or {}, file, store_default=StoreDefault.MEMORY, cwd=tmp_path
        )
        return gateway_config(settings, ProviderConfig("http://127.0.0.1:1/v1", "m")).server_nice

    assert nice_of({}) == 10
    assert nice_of({"server_nice": 0}) == 0  # leave the server alone
    assert nice_of({"server_nice": 19}) == 19
    for bad in (-1, 20, "high", True):
        with pytest.raises(SettingsError) as info:
            nice_of({"server_nice": bad})
        assert info.value.message == (
            f"{tmp_path / 'config.toml'}: server_nice must be a whole number from 0 to 19, "
            f"not {bad!r}"
        )
    assert nice_of({"server_nice": 0}, {"DESK_SERVER_NICE": "5"}) == 5  # the environment wins
    with pytest.raises(SettingsError) as info:
        nice_of({"server_nice": 0}, {"DESK_SERVER_NICE": "abc"})
    assert info.value.message == "DESK_SERVER_NICE must be a whole number from 0 to 19, not 'abc'"
