"""Sends what the ACP agent has for the client one at a time, in the order it was put.

Each item is a coroutine function (an update, a notification, a permission question that is
started and not awaited, a prompt's outcome being settled); the pump awaits each before the
next, so a prompt is answered only after the last chunk of its reply went out. An item that
fails (the client went away) is said on stderr in one line, once (the items after it fail
the same way), and the pump goes on.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable

Item = Callable[[], Awaitable[None]]
"""One thing to send: awaited by the pump before the next."""


class Pump:
    """The agent's ordered outbox, on the event loop (not thread-safe: use it on the loop)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Item] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._said: set[str] = set()  # the failures said on stderr already

    def put(self, item: Item) -> None:
        """Queue ``item``; the pump starts on the running loop the first time."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="desk-acp-pump")
        self._queue.put_nowait(item)

    async def flushed(self) -> None:
        """Return once everything put so far has been sent."""
        done = asyncio.get_running_loop().create_future()

        async def mark() -> None:
            if not done.done():
                done.set_result(None)

        self.put(mark)
        await done

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                await item()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the client is gone, or refused it: go on
                line = f"desk acp: could not send to the client ({exc!r})"
                if line not in self._said:
                    self._said.add(line)
                    print(line, file=sys.stderr)
            finally:
                self._queue.task_done()
