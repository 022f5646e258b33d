"""The MCP clients' own event loop, on a thread of its own, called into from any thread.

The MCP SDK is asyncio (through anyio); a turn runs on its worker thread's own loop, and a
server outlives every turn. So every MCP client of a gateway lives on one loop thread
(:class:`McpLoop`) and a turn's tool call is handed over with
:func:`asyncio.run_coroutine_threadsafe`. The turn waits on the returned future from its own loop;
a stop cancels that future, which only schedules the cancel on this loop (a write to its wake-up
pipe): a stop never waits for this loop to be free.

The thread is the parent of every stdio server's guard (:mod:`agent.guard`), whose
parent-death signal is tied to the thread that forked it: when this thread ends, whether
:meth:`McpLoop.stop` ended it or the process died, every guard ends its server's process group.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

_log = logging.getLogger(__name__)

T = TypeVar("T")


class McpLoop:
    """An asyncio loop running on a daemon thread until :meth:`stop`.

    Args:
        name: the thread's name.
    """

    def __init__(self, name: str = "mcp-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._started.wait()

    @property
    def thread(self) -> threading.Thread:
        """The loop's thread."""
        return self._thread

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop itself (schedule on it only through this class or ``*_threadsafe``)."""
        return self._loop

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._started.set)
        try:
            self._loop.run_forever()
        finally:
            pending = [task for task in asyncio.all_tasks(self._loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                with contextlib.suppress(Exception):
                    self._loop.run_until_complete(
                        asyncio.wait(pending, timeout=1.0)  # let their cleanup run, bounded
                    )
            self._loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop; from any thread but the loop's own.

        Returns:
            its future: ``cancel()`` on it cancels the coroutine's task on the loop (scheduled,
            never waited for).

        Raises:
            RuntimeError: the loop has stopped (the coroutine is closed, never run).
        """
        if self._loop.is_closed() or not self._thread.is_alive():
            coro.close()
            raise RuntimeError("the MCP loop has stopped")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def stop(self, timeout_s: float) -> bool:
        """End the loop (its tasks are cancelled) and wait up to ``timeout_s`` for the thread.

        Returns:
            True when the thread has ended.
        """
        if self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout_s)
        return not self._thread.is_alive()


__all__ = ["McpLoop"]
