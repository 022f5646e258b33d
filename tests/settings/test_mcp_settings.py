"""``[mcp_servers.NAME]`` tables: read into typed settings, checked with one line naming the
file and the key, unknown keys kept; ``--mcp NAME=COMMAND`` adds or replaces one for a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui_gateway.settings.config_file import ConfigFileError, SettingsError, read_config_file
from tui_gateway.settings.mcp_settings import McpApproval, McpServerSettings
from tui_gateway.settings.resolution import StoreDefault, resolve_settings
from tui_gateway.wire.options import parser, settings_from

EXAMPLE = """\
model = "m"

[mcp_servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "Europe/Paris"]
env = { TZ = "Europe/Paris" }
startup_timeout_s = 5
approval = "always"
read_only_ok = true   # a key this version does not know

[mcp_servers.docs]
url = "http://127.0.0.1:8931/mcp"
headers = { Authorization = "Bearer t" }
tool_timeout_s = 2.5
max_result_mb = 0.5
enabled = false
"""


def servers(tmp_path: Path, text: str) -> dict[str, McpServerSettings]:
    path = tmp_path / "desk" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    file = read_config_file({"XDG_CONFIG_HOME": str(tmp_path)})
    return dict(resolve_settings({}, {}, file, store_default=StoreDefault.MEMORY).mcp_servers)


def test_the_codex_tables_are_read_in_file_order(tmp_path: Path) -> None:
    found = servers(tmp_path, EXAMPLE)
    assert list(found) == ["time", "docs"]
    time = found["time"]
    assert time == McpServerSettings(
        name="time",
        command="mcp-server-time",
        args=("--local-timezone", "Europe/Paris"),
        env={"TZ": "Europe/Paris"},
        startup_timeout_s=5.0,
        approval=McpApproval.ALWAYS,
        extra={"read_only_ok": True},
    )
    assert time.transport == "stdio" and time.tool_timeout_s == 60.0 and time.enabled
    assert time.max_result_mb == 50.0
    docs = found["docs"]
    assert docs.transport == "http" and docs.url == "http://127.0.0.1:8931/mcp"
    assert dict(docs.headers) == {"Authorization": "Bearer t"}
    assert (docs.tool_timeout_s, docs.enabled, docs.approval) == (2.5, False, McpApproval.ASK)
    assert docs.max_result_mb == 0.5
    assert servers(tmp_path, 'model = "m"\n') == {}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[mcp_servers.x]\nargs = ["a"]\n', "mcp_servers.x needs command (stdio) or url"),
        ('[mcp_servers.x]\ncommand = "a"\nurl = "http://h/mcp"\n', "command or url, not both"),
        ('[mcp_servers.x]\ncommand = "a"\nargs = "a b"\n', "mcp_servers.x.args must be a list"),
        ('[mcp_servers.x]\ncommand = "a"\napproval = "maybe"\n', "mcp_servers.x.approval must"),
        ('[mcp_servers.x]\ncommand = "a"\nenv = { A = 1 }\n', "mcp_servers.x.env must be a table"),
        ('[mcp_servers.x]\ncommand = "a"\ntool_timeout_s = 0\n', "tool_timeout_s must be a posi"),
        ('[mcp_servers.x]\ncommand = "a"\nmax_result_mb = -1\n', "a positive number of megabytes"),
        ('[mcp_servers.x]\ncommand = "a"\nenabled = "yes"\n', "mcp_servers.x.enabled must be"),
        ('[mcp_servers.x]\ncommand = "a"\nallow_read_only = 1\n', "x.allow_read_only must be"),
        ('[mcp_servers.x]\nurl = "ws://h/mcp"\n', "mcp_servers.x.url must be an http(s) URL"),
        ('[mcp_servers."a.b"]\ncommand = "a"\n', "a server name is letters, digits"),
        ('mcp_servers = "time"\n', "mcp_servers must be a table"),
    ],
)
def test_a_bad_server_table_is_one_line_naming_the_file_and_key(
    tmp_path: Path, table: str, message: str
) -> None:
    with pytest.raises(ConfigFileError) as info:
        servers(tmp_path, table)
    assert message in info.value.message
    assert info.value.message.startswith(str(tmp_path / "desk" / "config.toml") + ": ")
    assert "\n" not in info.value.message


def test_allow_read_only_is_read(tmp_path: Path) -> None:
    found = servers(tmp_path, '[mcp_servers.t]\ncommand = "t"\nallow_read_only = true\n')
    assert found["t"].allow_read_only and not found["t"].extra


def flagged(tmp_path: Path, *argv: str) -> dict[str, McpServerSettings]:
    path = tmp_path / "desk" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(EXAMPLE)
    args = parser("desk gateway", "test").parse_args(list(argv))
    return dict(settings_from(args, {"XDG_CONFIG_HOME": str(tmp_path)}).mcp_servers)


def test_mcp_flags_add_servers_for_the_run_and_replace_a_table_of_the_same_name(
    tmp_path: Path,
) -> None:
    found = flagged(
        tmp_path,
        "--mcp",
        "time=uvx mcp-server-time --local-timezone 'Europe/Paris'",
        "--mcp",
        "remote=http://127.0.0.1:9/mcp",
    )
    assert list(found) == ["docs", "time", "remote"]
    assert found["time"] == McpServerSettings(
        name="time", command="uvx", args=("mcp-server-time", "--local-timezone", "Europe/Paris")
    )
    assert found["remote"].transport == "http" and found["remote"].url == "http://127.0.0.1:9/mcp"


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("time", "--mcp takes NAME=COMMAND"),
        ("=cmd", "--mcp takes NAME=COMMAND"),
        ("a.b=cmd", "--mcp a.b: a server name is letters"),
        ("time=", "the command after time= is empty"),
        ("time='unclosed", "--mcp time: cannot split the command line"),
    ],
)
def test_a_bad_mcp_flag_is_one_line(tmp_path: Path, flag: str, message: str) -> None:
    with pytest.raises(SettingsError) as info:
        flagged(tmp_path, "--mcp", flag)
    assert message in info.value.message and "\n" not in info.value.message
