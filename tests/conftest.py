"""Shared fixtures: the project's own model server on loopback, and thread bookkeeping."""

from __future__ import annotations

from collections.abc import Iterator

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
