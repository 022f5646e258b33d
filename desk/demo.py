"""Starts desk's built-in demo model: a loopback OpenAI-compatible server with canned replies.

The desk starts it when no model server answers (:func:`start_demo_server`); the wire commands
(``desk gateway|serve|run|acp --demo``) are handed :func:`demo_model_served`, since the gateway
never imports the demo model itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from demo_model.config import DemoConfig
from demo_model.server import DemoModelServer
from tui_gateway.wire.options import ServedModel


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


@contextlib.contextmanager
def demo_model_served() -> Iterator[ServedModel]:
    """The demo model (its default pace), running for the block and stopped after.

    Raises:
        OSError: no loopback port could be bound.
    """
    with DemoModelServer() as server:
        yield ServedModel(server.base_url, server.config.model)
