"""Fixtures for the wire tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def config_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$XDG_CONFIG_HOME`` per test: the person's config file never reaches a child
    (every wire command reads ``$XDG_CONFIG_HOME/desk/config.toml``)."""
    home = tmp_path_factory.mktemp("config-home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home
