"""desk: a full-screen terminal app for running an AI agent, where a stop really stops.

The app (:mod:`desk.app`) speaks only the gateway contract: method calls in, events out
(:mod:`desk.bridge`). Entry point: ``desk`` / ``python -m desk`` (:mod:`desk.__main__`).
"""

from __future__ import annotations

__all__: list[str] = []
