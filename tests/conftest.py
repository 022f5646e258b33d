"""Shared fixtures: the project's own model server on loopback, a private home for desk's files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from demo_model.config import DemoConfig
from demo_model.server import DemoModelServer


@pytest.fixture
def demo_server() -> Iterator[DemoModelServer]:
    """A fresh demo model server (one slot, fast tokens) for one test."""
    server = DemoModelServer(DemoConfig(tokens_per_second=400.0))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def provider(demo_server: DemoModelServer) -> ProviderConfig:
    """Provider settings pointing at ``demo_server``."""
    return ProviderConfig(base_url=demo_server.base_url, model=demo_server.config.model)


XDG_DIRS = ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
"""Where desk keeps its database, config, token and unsaved writes: private to each test."""


@pytest.fixture(autouse=True)
def private_xdg_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Path]:
    """Every test, and every desk it starts in a subprocess (they inherit the environment),
    reads and writes its own XDG folders, never the person's real database or config."""
    root = tmp_path_factory.mktemp("xdg")
    dirs = {
        name: root / name.removeprefix("XDG_").removesuffix("_HOME").lower() for name in XDG_DIRS
    }
    for name, path in dirs.items():
        path.mkdir()
        monkeypatch.setenv(name, str(path))
    return dirs
