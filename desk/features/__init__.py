"""The desk's feature parts: tool cards and approvals, the console, saved sessions, the queue,
compression.

Each part is an :class:`~textual.app.App` subclass holding the handlers and actions of one
feature; :class:`desk.app.DeskApp` inherits them all and provides the shared state they
declare in :class:`desk.features.base.DeskBase`. Textual calls a message handler of every
class in the app's MRO, so a part may also react to a message the app itself handles (it runs
after the app's own handler).
"""

from __future__ import annotations

from desk.features.compression import CompressionFeature
from desk.features.console import ConsoleFeature
from desk.features.queue import QueueFeature
from desk.features.sessions import SessionsFeature
from desk.features.tool_calls import ToolCallsFeature

__all__ = [
    "CompressionFeature",
    "ConsoleFeature",
    "QueueFeature",
    "SessionsFeature",
    "ToolCallsFeature",
]
