"""The config file: provider settings below flags and environment, desk's own keys, and safe,
atomic updates."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from desk.config import ConfigError, parse_options
from desk.user_config import (
    ConfigFileError,
    config_path,
    set_config_value,
    with_top_level_key,
)
from tui_gateway.settings.config_file import read_config_file
from tui_gateway.settings.resolution import Settings


def test_config_path_follows_xdg_config_home(tmp_path: Path) -> None:
    assert config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "desk" / "config.toml"
    assert config_path({}) == Path.home() / ".config" / "desk" / "config.toml"
    assert config_path({"XDG_CONFIG_HOME": "relative"}) == config_path({})


def test_flags_over_environment_over_config_file() -> None:
    file = {"base_url": "http://file:3/v1", "model": "file-model", "api_key": "file-key"}
    only_file = parse_options([], {}, file).settings
    assert only_file.base_url == "http://file:3/v1"
    assert only_file.origin("base_url").label == "config.toml"
    assert (only_file.model, only_file.api_key) == ("file-model", "file-key")

    env = {"OPENAI_BASE_URL": "http://env:1/v1", "DESK_MODEL": "env-model"}
    with_env = parse_options([], env, file).settings
    assert (with_env.base_url, with_env.model, with_env.api_key) == (
        "http://env:1/v1",
        "env-model",
        "file-key",
    )
    flags = ["--base-url", "http://flag:2/v1", "--model", "m", "--api-key", "k"]
    with_flags = parse_options(flags, env, file).settings
    assert (with_flags.base_url, with_flags.model, with_flags.api_key) == (
        "http://flag:2/v1",
        "m",
        "k",
    )


def test_a_bad_url_in_the_file_names_the_file() -> None:
    with pytest.raises(ConfigError, match="config.toml: base_url must be an http"):
        parse_options([], {}, {"base_url": "ftp://x"})


def test_the_file_gives_strings_and_rejects_other_types(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}

    def settings() -> Settings:
        return parse_options([], env, read_config_file(env)).settings

    assert settings().base_url is None and not read_config_file(env).exists
    path = config_path(env)
    path.parent.mkdir(parents=True)
    path.write_text('base_url = "http://h:1/v1"\nmodel = ""\ntheme = "light"\n')
    found = settings()
    assert (found.base_url, found.model) == ("http://h:1/v1", None)
    assert found.other_keys == {"theme": "light"}
    path.write_text("model = 3\n")
    with pytest.raises(ConfigError, match=f"{path}: model must be a string"):
        settings()
    path.write_text("model = \n")
    with pytest.raises(ConfigFileError, match="not valid TOML") as info:
        settings()
    assert "\n" not in info.value.message


def test_escdelay_in_the_file_is_below_the_flag_and_the_environment(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    path = config_path(env)
    path.parent.mkdir(parents=True)
    path.write_text("escdelay = 80\n")
    assert parse_options([], env, read_config_file(env)).escape_delay_ms == 80
    assert parse_options([], {**env, "ESCDELAY": "40"}, read_config_file(env)).escape_delay_ms == 40
    options = parse_options(["--escdelay", "5"], env, read_config_file(env))
    assert options.escape_delay_ms == 5
    path.write_text('escdelay = "soon"\n')
    with pytest.raises(ConfigError, match=f"{path}: escdelay must be a whole number"):
        parse_options([], env, read_config_file(env))


def test_updating_a_key_keeps_comments_unknown_keys_and_tables() -> None:
    text = (
        "# my desk\n"
        'base_url = "http://127.0.0.1:8080/v1"  # the box under the desk\n'
        'theme = "dark"\n'
        'editor = { name = "vim" }\n'
        "\n"
        "[plugins]\n"
        'theme = "not this one"\n'
    )
    result = with_top_level_key(text, "theme", "light")
    assert result == text.replace('theme = "dark"', 'theme = "light"')
    data = tomllib.loads(result)
    assert data["plugins"] == {"theme": "not this one"}
    assert data["editor"] == {"name": "vim"}


def test_a_new_key_goes_before_the_first_table() -> None:
    text = 'model = "m"\n\n[extra]\nx = 1\n'
    result = with_top_level_key(text, "theme", 'my "quoted" theme')
    data = tomllib.loads(result)
    assert data == {"model": "m", "theme": 'my "quoted" theme', "extra": {"x": 1}}
    assert with_top_level_key("", "theme", "light") == 'theme = "light"\n'


def test_set_config_value_writes_atomically_and_privately(tmp_path: Path) -> None:
    path = tmp_path / "desk" / "config.toml"
    set_config_value(path, "theme", "light")
    assert tomllib.loads(path.read_text()) == {"theme": "light"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    os.chmod(path, 0o640)
    path.write_text('api_key = "sk-1"\ntheme = "light"\n[x]\ny = 2\n')
    set_config_value(path, "theme", "high-contrast")
    assert tomllib.loads(path.read_text()) == {
        "api_key": "sk-1",
        "theme": "high-contrast",
        "x": {"y": 2},
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]  # no temporary left


def test_a_broken_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("theme = \n# precious notes\n")
    with pytest.raises(ConfigFileError, match="not valid TOML"):
        set_config_value(path, "theme", "light")
    assert path.read_text() == "theme = \n# precious notes\n"
