"""Start-up configuration: flags over environment, probing, and one-line errors."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path

import pytest

from demo_model.server import DemoModelServer
from desk.config import (
    DEFAULT_ESCAPE_DELAY_MS,
    ConfigError,
    DeskOptions,
    choose_server,
    parse_options,
)
from desk.probe import ProbeResult, probe
from tui_gateway.settings.resolution import Settings


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_flags_win_over_environment() -> None:
    env = {
        "OPENAI_BASE_URL": "http://env:1/v1",
        "OPENAI_API_KEY": "env-key",
        "DESK_MODEL": "env-model",
        "ESCDELAY": "50",
    }
    argv = ["--base-url", "http://flag:2/v1/", "--model", "m", "--api-key", "k", "--escdelay", "5"]
    options = parse_options(argv, env)
    assert options == DeskOptions(settings=options.settings, escape_delay_ms=5)
    settings = options.settings
    assert (settings.base_url, settings.model, settings.api_key) == ("http://flag:2/v1", "m", "k")
    assert settings.origin("base_url").label == "--base-url"
    assert not settings.demo


def test_environment_is_the_fallback() -> None:
    env = {"OPENAI_BASE_URL": "http://env:1/v1", "DESK_MODEL": "qwen", "ESCDELAY": "40"}
    options = parse_options([], env)
    assert options.settings.base_url == "http://env:1/v1"
    assert options.settings.origin("base_url").label == "OPENAI_BASE_URL"
    assert options.settings.model == "qwen"
    assert options.escape_delay_ms == 40


def test_escape_delay_defaults_to_10_ms_and_ignores_a_bad_env_value() -> None:
    assert parse_options([], {}).escape_delay_ms == DEFAULT_ESCAPE_DELAY_MS == 10
    assert parse_options([], {"ESCDELAY": "soon"}).escape_delay_ms == 10


@pytest.mark.parametrize(
    "argv",
    [["--escdelay", "fast"], ["--escdelay", "0"], ["--bogus"], ["--base-url", "ftp://x/v1"]],
)
def test_bad_flags_raise_one_line_config_errors(argv: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        parse_options(argv, {})
    assert "\n" not in info.value.message


def test_demo_flag_forces_the_demo() -> None:
    def never(*_args: object, **_kw: object) -> list[ProbeResult]:
        raise AssertionError("--demo must not probe")

    choice = choose_server(Settings(demo=True, base_url="http://x/v1"), probe_fn=never)
    assert choice.base_url is None


def _fake_probe(results: dict[str, ProbeResult]):  # type: ignore[no-untyped-def]
    def probe_fn(urls: Sequence[str], **_kw: object) -> list[ProbeResult]:
        return [results.get(url, ProbeResult(url, error="connection refused")) for url in urls]

    return probe_fn


def test_nothing_configured_and_nothing_found_means_the_demo() -> None:
    choice = choose_server(Settings(), probe_fn=_fake_probe({}))
    assert choice.base_url is None


def test_nothing_configured_uses_the_first_local_server_that_lists_a_model() -> None:
    ollama = "http://127.0.0.1:11434/v1"
    found = {ollama: ProbeResult(ollama, status=200, models=("llama3.2", "qwen"))}
    choice = choose_server(Settings(), probe_fn=_fake_probe(found))
    assert (choice.base_url, choice.model, choice.source) == (ollama, "llama3.2", "found Ollama")
    choice = choose_server(Settings(model="qwen"), probe_fn=_fake_probe(found))
    assert choice.model == "qwen"


def test_local_probe_prefers_llama_cpp_when_both_answer() -> None:
    llama, ollama = "http://127.0.0.1:8080/v1", "http://127.0.0.1:11434/v1"
    found = {
        llama: ProbeResult(llama, status=200, models=("gguf",)),
        ollama: ProbeResult(ollama, status=200, models=("llama3.2",)),
    }
    assert choose_server(Settings(), probe_fn=_fake_probe(found)).base_url == llama


def test_a_configured_server_is_not_asked_before_the_desk_runs() -> None:
    def never(*_args: object, **_kw: object) -> list[ProbeResult]:
        raise AssertionError("the gateway checks a configured server, in the background")

    url = f"http://127.0.0.1:{_free_port()}/v1"
    choice = choose_server(Settings(base_url=url), probe_fn=never)
    assert (choice.base_url, choice.model) == (url, "")  # "": the first model it lists
    choice = choose_server(Settings(base_url=url, model="qwen"), probe_fn=never)
    assert choice.model == "qwen"


def test_probe_reads_the_models_of_a_real_server(demo_server: DemoModelServer) -> None:
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    live, down = probe([demo_server.base_url, dead], budget_s=2.0)
    assert live.usable and live.models[0] == demo_server.config.model
    assert not down.answered and down.error == "connection refused"


def test_probe_gives_up_within_its_budget() -> None:
    with socket.socket() as listener:  # accepts nothing: the request never gets an answer
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        (result,) = probe([url], budget_s=0.2)
    assert not result.answered and result.error == "no answer in time"


def test_the_resume_hint_names_a_relative_db_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "desk --db rel.db --resume ID" worked only from the folder desk had been started in
    from desk.__main__ import _db_flag
    from desk.startup import Startup

    monkeypatch.chdir(tmp_path)
    flagged = parse_options(["--db", "rel dir/s.db"], {})
    assert Startup(db_flag=_db_flag(flagged)).resume_command("abc") == (
        f"desk --db '{tmp_path}/rel dir/s.db' --resume abc"
    )
    by_env = parse_options([], {"DESK_DB": "elsewhere.db"})  # found again the same way
    assert Startup(db_flag=_db_flag(by_env)).resume_command("abc") == "desk --resume abc"
