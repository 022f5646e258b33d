"""Settings resolution: flag over environment over config file over default, each value's
origin, and one-line errors that name the flag, the variable, or the file and its key."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui_gateway.settings.config_file import ConfigFile, ConfigFileError, read_config_file
from tui_gateway.settings.resolution import (
    ENVIRONMENT,
    FLAGS,
    SettingKey,
    Settings,
    SettingsError,
    Source,
    StoreDefault,
    resolve_settings,
)

MEMORY = StoreDefault.MEMORY


def a_file(tmp_path: Path, text: str) -> ConfigFile:
    """``text`` written as the config file of ``XDG_CONFIG_HOME=tmp_path``, read back."""
    path = tmp_path / "desk" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return read_config_file({"XDG_CONFIG_HOME": str(tmp_path)})


def data_file(data: dict[str, Any], path: Path = Path("/cfg/desk/config.toml")) -> ConfigFile:
    return ConfigFile(path, MappingProxyType(data), exists=True)


def test_every_key_from_the_file_with_its_origin(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    file = a_file(
        tmp_path,
        'base_url = "http://127.0.0.1:8080/v1/"\nmodel = "qwen"\napi_key = "sk-file"\n'
        f'db = "{tmp_path / "s.db"}"\ncontext_window = 2_048\nworkspace = "{work}"\n',
    )
    settings = resolve_settings({}, {}, file, store_default=MEMORY)
    assert settings.base_url == "http://127.0.0.1:8080/v1"
    assert (settings.model, settings.api_key) == ("qwen", "sk-file")
    assert (settings.db, settings.context_window) == (str(tmp_path / "s.db"), 2048)
    assert settings.workspace == work
    origin = settings.origin("context_window")
    assert origin.source is Source.FILE and origin.label == "config.toml"
    assert origin.file == file.path and origin.name == "context_window"
    assert settings.config_file == file.path


def test_defaults_differ_only_in_where_sessions_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    wire = resolve_settings({}, {}, None, store_default=MEMORY, cwd=tmp_path)
    assert wire == Settings(workspace=tmp_path)
    assert wire.db is None and wire.context_window is None and not wire.demo
    assert wire.origin("db").source is Source.DEFAULT and wire.origin("db").label == "default"
    tui = resolve_settings({}, {}, None, store_default=StoreDefault.USER_DATA, cwd=tmp_path)
    assert tui.db == str(tmp_path / "data" / "desk" / "desk.db")


def test_a_flag_wins_over_the_environment_which_wins_over_the_file(tmp_path: Path) -> None:
    file = a_file(tmp_path, 'model = "file"\ncontext_window = 1000\n')
    env = {"DESK_MODEL": "env", "DESK_CONTEXT_WINDOW": "2000"}
    from_env = resolve_settings({}, env, file, store_default=MEMORY)
    assert (from_env.model, from_env.context_window) == ("env", 2000)
    assert from_env.origin("context_window").label == "DESK_CONTEXT_WINDOW"
    flags: dict[SettingKey, str | bool | None] = {"model": "flag", "context_window": "3000"}
    from_flags = resolve_settings(flags, env, file, store_default=MEMORY)
    assert (from_flags.model, from_flags.context_window) == ("flag", 3000)
    assert from_flags.origin("model").label == "--model"
    assert from_flags.origin("model").source is Source.FLAG


def test_empty_values_count_as_not_given(tmp_path: Path) -> None:
    file = a_file(tmp_path, 'model = "file"\n')
    settings = resolve_settings({"model": ""}, {"DESK_MODEL": ""}, file, store_default=MEMORY)
    assert settings.model == "file"


VALUES: dict[SettingKey, tuple[str, str, str]] = {
    "base_url": ("http://flag:1/v1", "http://env:2/v1", "http://file:3/v1"),
    "model": ("flag-model", "env-model", "file-model"),
    "api_key": ("flag-key", "env-key", "file-key"),
    "db": ("/flag.db", "/env.db", "/file.db"),
    "context_window": ("100", "200", "300"),
}


@given(
    st.dictionaries(
        st.sampled_from(sorted(VALUES)), st.sets(st.sampled_from(["flag", "env", "file"]))
    )
)
def test_the_highest_source_given_wins_for_any_mix(given_by: dict[SettingKey, set[str]]) -> None:
    flags: dict[SettingKey, str | bool | None] = {}
    env: dict[str, str] = {}
    data: dict[str, Any] = {}
    for key, sources in given_by.items():
        flag, variable, in_file = VALUES[key]
        if "flag" in sources:
            flags[key] = flag
        if "env" in sources:
            env[ENVIRONMENT[key]] = variable
        if "file" in sources:
            data[key] = int(in_file) if key == "context_window" else in_file
    settings = resolve_settings(flags, env, data_file(data), store_default=MEMORY)
    for key in VALUES:
        sources = given_by.get(key, set())
        expected = next(
            (v for s, v in zip(("flag", "env", "file"), VALUES[key], strict=True) if s in sources),
            None,
        )
        value = getattr(settings, key)
        assert (str(value) if value is not None else None) == expected
        labels = {"flag": FLAGS[key], "env": ENVIRONMENT[key], "file": "config.toml"}
        first = next((s for s in ("flag", "env", "file") if s in sources), None)
        assert settings.origin(key).label == (labels[first] if first else "default")


@pytest.mark.parametrize(
    ("flags", "env", "data", "message"),
    [
        ({"context_window": "big"}, {}, {}, "--context-window must be a positive whole number"),
        ({}, {"DESK_CONTEXT_WINDOW": "0"}, {}, "DESK_CONTEXT_WINDOW must be a positive whole"),
        ({}, {}, {"context_window": "2048"}, "config.toml: context_window must be a positive"),
        ({}, {}, {"context_window": True}, "config.toml: context_window must be a positive"),
        ({}, {}, {"context_window": -1}, "config.toml: context_window must be a positive"),
        ({}, {"OPENAI_BASE_URL": "ftp://x"}, {}, "OPENAI_BASE_URL must be an http"),
        ({}, {}, {"base_url": "localhost:8080"}, "config.toml: base_url must be an http"),
        ({}, {}, {"model": 3}, "config.toml: model must be a string"),
        ({}, {}, {"db": ["a"]}, "config.toml: db must be a string"),
        ({"db": "~nosuchuser/d.db"}, {}, {}, "--db: '~nosuchuser/d.db' starts with ~nosuchuser"),
        ({}, {"DESK_DB": "~nosuchuser/d.db"}, {}, "DESK_DB: '~nosuchuser/d.db' starts with"),
        ({"workspace": "/no/such/dir"}, {}, {}, "--workspace must be an existing directory"),
        ({}, {}, {"workspace": "/no/such/dir"}, "config.toml: workspace must be an existing"),
        ({}, {"DESK_SERVER_NICE": "abc"}, {}, "DESK_SERVER_NICE must be a whole number from 0"),
        ({}, {"DESK_SERVER_NICE": "20"}, {}, "DESK_SERVER_NICE must be a whole number from 0"),
        ({}, {}, {"server_nice": 30}, "config.toml: server_nice must be a whole number from 0"),
        ({}, {}, {"server_nice": "5"}, "config.toml: server_nice must be a whole number from 0"),
    ],
)
def test_a_bad_value_is_one_line_naming_where_it_was(
    flags: dict[SettingKey, str | bool | None],
    env: dict[str, str],
    data: dict[str, Any],
    message: str,
) -> None:
    with pytest.raises(SettingsError) as info:
        resolve_settings(flags, env, data_file(data), store_default=MEMORY)
    assert message in info.value.message
    assert "\n" not in info.value.message
    if data:
        assert info.value.message.startswith("/cfg/desk/config.toml: ")


def test_a_bad_value_below_a_good_one_is_not_read() -> None:
    settings = resolve_settings(
        {"context_window": "4096"}, {}, data_file({"context_window": "big"}), store_default=MEMORY
    )
    assert settings.context_window == 4096


def test_a_relative_workspace_starts_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "proj" / "sub").mkdir(parents=True)
    settings = resolve_settings(
        {"workspace": "proj/sub/.."}, {}, None, store_default=MEMORY, cwd=tmp_path
    )
    assert settings.workspace == tmp_path / "proj"
    assert settings.workspace.is_absolute()


def test_unknown_keys_and_tables_are_kept(tmp_path: Path) -> None:
    file = a_file(tmp_path, 'theme = "light"\neditor = { name = "vim" }\n\n[plugins]\nx = 1\n')
    settings = resolve_settings({}, {}, file, store_default=MEMORY)
    assert dict(settings.other_keys) == {
        "theme": "light",
        "editor": {"name": "vim"},
        "plugins": {"x": 1},
    }


def test_the_api_key_is_never_in_the_repr() -> None:
    settings = resolve_settings({"api_key": "sk-secret"}, {}, None, store_default=MEMORY)
    assert settings.api_key == "sk-secret"
    assert "sk-secret" not in repr(settings)


def test_a_file_that_is_not_toml_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError) as info:
        a_file(tmp_path, "context_window = \n")
    assert "config.toml is not valid TOML" in info.value.message
    assert "\n" not in info.value.message


def test_settings_are_frozen() -> None:
    settings = Settings()
    with pytest.raises(AttributeError):
        settings.model = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.other_keys["x"] = 1  # type: ignore[index]
