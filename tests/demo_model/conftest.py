"""Fixtures for the demo model tests: a fresh server per test, and an httpx client for it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from demo_model import DemoModelServer
from tests.support import running_demo


@pytest.fixture
def demo() -> Iterator[DemoModelServer]:
    """A running demo server, fast (2000 tokens/s), one slot, stopped after the test."""
    with running_demo(2000.0) as server:
        yield server


@pytest.fixture
def client(demo: DemoModelServer) -> Iterator[httpx.Client]:
    """An httpx client whose base URL is the demo server's ``/v1``."""
    with httpx.Client(base_url=demo.base_url, timeout=10.0) as http:
        yield http
