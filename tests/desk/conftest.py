"""Fixtures for the desk tests: a demo model server, a gateway on it, and a desk app."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet

from agent.provider.client import ProviderConfig
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.lexers import lexers
from tests.support import running_demo
from tui_gateway.gateway import Gateway, GatewayConfig


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """Collection off, and what the collector would free kept in ``gc.garbage``."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.garbage.clear()
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()


@pytest.fixture(scope="session", autouse=True)
def code_lexers_ready() -> None:
    """The lexers of the code the tests show, made before any test draws them: a block is
    drawn plain until its lexer is ready (desk.lexers), and a picture taken before that would
    not match its snapshot."""
    for language in ("python", "bash", "json"):
        lexers().get(language)
    assert lexers().join(60.0)


@pytest.fixture(scope="session", autouse=True)
def css_parsed_once() -> Iterator[None]:
    """Every app a test starts parses the same CSS (the app's, each widget's default CSS) with
    the same theme variables: the rules parsed are kept for the session, by source and
    variables, instead of being parsed again by each app (about 20 ms of CPU an app, some 500
    apps a run). Textual keeps them for one stylesheet already, and never changes them once
    parsed; CSS that does not parse raises each time, as before (nothing is kept)."""
    parse_rules = Stylesheet._parse_rules
    parsed: dict[tuple[Any, ...], list[RuleSet]] = {}

    def parse_rules_once(
        stylesheet: Stylesheet,
        css: str,
        read_from: Any,
        is_default_rules: bool = False,
        tie_breaker: int = 0,
        scope: str = "",
    ) -> list[RuleSet]:
        variables = tuple(sorted(stylesheet._variables.items()))
        key = (css, read_from, is_default_rules, tie_breaker, scope, variables)
        rules = parsed.get(key)
        if rules is None:
            rules = parse_rules(stylesheet, css, read_from, is_default_rules, tie_breaker, scope)
            parsed[key] = rules
        return rules

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Stylesheet, "_parse_rules", parse_rules_once)
        yield


@pytest.fixture(autouse=True)
def config_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$XDG_CONFIG_HOME`` per test: no config or theme of the person leaks in."""
    home = tmp_path_factory.mktemp("config-home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


@pytest.fixture
def tokens_per_second() -> float:
    """Pace of the demo model; override in a module to change it."""
    return 40.0


@pytest.fixture
def demo_server(tokens_per_second: float) -> Iterator[DemoModelServer]:
    with running_demo(tokens_per_second) as server:
        yield server


@pytest.fixture
def fast_server() -> Iterator[DemoModelServer]:
    """A demo model that streams as fast as it can (snapshots hold it with faults)."""
    with running_demo(0) as server:
        yield server


@pytest.fixture
def fast_gateway(fast_server: DemoModelServer) -> Iterator[Gateway]:
    """A gateway on ``fast_server``."""
    gateway = Gateway(
        GatewayConfig(provider=ProviderConfig(base_url=fast_server.base_url, model="demo"))
    )
    try:
        yield gateway
    finally:
        gateway.shutdown(timeout_s=5.0)


@pytest.fixture
def gateway(demo_server: DemoModelServer) -> Iterator[Gateway]:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    gw = Gateway(GatewayConfig(provider=provider))
    try:
        yield gw
    finally:
        report = gw.shutdown(timeout_s=5.0)
        assert report.threads_left == []


@pytest.fixture
def desk_app(gateway: Gateway, demo_server: DemoModelServer) -> DeskApp:
    info = ConnectionInfo("demo", demo_server.base_url, is_demo=True, source="--demo")
    return DeskApp(gateway, info, handle_signals=False)
