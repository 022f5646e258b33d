"""Helpers for the shell tests: run coroutines with a deadline, watch output, check pids.

No sleeps: tests wait on asyncio events set by the output callback, each with a deadline.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import psutil

from agent.tools import ProcessLedger, ToolContext

T = TypeVar("T")

DEADLINE_S = 20.0
"""Upper bound for any one test coroutine; a hang fails the test instead of blocking CI."""


def run(coro: Coroutine[Any, Any, T], deadline_s: float = DEADLINE_S) -> T:
    """Run ``coro`` on a fresh event loop, failing after ``deadline_s`` seconds."""

    async def bounded() -> T:
        return await asyncio.wait_for(coro, deadline_s)

    return asyncio.run(bounded())


class Output:
    """An ``on_output`` callback that records text and lets a test wait for a pattern."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self._waiters: list[tuple[re.Pattern[str], asyncio.Event]] = []

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def __call__(self, text: str) -> None:
        self.chunks.append(text)
        whole = self.text
        for pattern, event in self._waiters:
            if pattern.search(whole):
                event.set()

    async def wait_for(self, pattern: str, timeout_s: float = 10.0) -> re.Match[str]:
        """Wait until the output matches ``pattern`` (a regex); return the match."""
        compiled = re.compile(pattern, re.S)
        event = asyncio.Event()
        self._waiters.append((compiled, event))
        if compiled.search(self.text):
            event.set()
        await asyncio.wait_for(event.wait(), timeout_s)
        match = compiled.search(self.text)
        assert match is not None
        return match

    async def pids(self, count: int, timeout_s: float = 10.0) -> list[int]:
        """Wait for ``count`` whole lines that are pids; return them."""
        match = await self.wait_for(r"^" + r"(\d+)\n" * count, timeout_s)
        return [int(group) for group in match.groups()]


def context(cwd: Path, output: Output | None = None, **kwargs: Any) -> ToolContext:
    """A ToolContext with a fresh ledger."""
    return ToolContext(
        cwd=cwd,
        on_output=output if output is not None else Output(),
        ledger=ProcessLedger(),
        **kwargs,
    )


def is_dead(pid: int) -> bool:
    """True when ``pid`` does not run: gone, or a zombie (exited, waiting to be reaped)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def is_running(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    return not is_dead(pid)


# A group of three: the command's shell, a shell that ignores SIGTERM, and its `sleep` (which
# inherits the ignored SIGTERM). Each prints its pid on its own line: sh, sleep, inner sh.
TERM_IGNORING = "echo $$; sh -c 'trap \"\" TERM; sleep 30 & echo $!; echo $$; wait' & wait"

# A cooperative group of two: the shell and its `sleep`; both die on SIGTERM.
COOPERATIVE = "echo $$; sleep 30 & echo $!; wait"
