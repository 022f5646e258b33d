"""Starts desk's built-in demo model: a loopback OpenAI-compatible server with canned replies."""

from __future__ import annotations

from demo_model.config import DemoConfig
from demo_model.server import DemoModelServer


def start_demo_server(tokens_per_second: float = 30.0) -> DemoModelServer:
    """Start the demo model on a free loopback port; returns once it listens.

    Args:
        tokens_per_second: the generation pace.

    Returns:
        the running server (``.base_url``, ``.stop()``).
    """
    server = DemoModelServer(DemoConfig(tokens_per_second=tokens_per_second))
    server.start()
    return server
