"""The ``shell`` tool: run a command in its own process group, stream its output, end it for real.

The command runs as ``/bin/sh -c <command>`` under a keeper and a guard (:mod:`agent.guard`,
with ``--status-fd``): desk starts the keeper in a new session, the keeper forks the guard, the
guard forks the shell in a process group of its own; both are child subreapers, so every
process the command starts stays in their tree (``setsid`` and double forks included). stdin
is ``/dev/null`` (it must never read the desk's terminal) and stderr is merged into stdout.
desk ends the tree itself (a stop, a timeout, leftovers): it walks the keeper's tree and
signals every process but the keeper's own, holding each by a pidfd, and waits for the kernel's
word that they exited (:mod:`agent.tools.tree_end`: no other process has to be let run first);
the guard and the keeper then exit by themselves. The keeper ends the tree when desk dies, even
by SIGKILL, or when the command kills its guard (and says what it ended on the status pipe,
read by :mod:`agent.tools.shell_spawn`); the guard when the keeper is killed. With a
:class:`~agent.tools.spares.SparePool` (the gateway's) the keeper is a spare started before
the call, unless sandboxed. Output goes to ``ctx.on_output`` as it arrives and is kept, head
and tail, within ``ctx.max_output_bytes``.

How it ends:

* **exit**: the shell exits (the guard says so on a status pipe). Output still arriving is
  drained for ``drain_s``; processes of the tree that still run then (background jobs, daemons
  that ``setsid``) are ended like below (``cause="leftover"``), so no process of a turn outlives
  it. The result carries the exit code.
* **the guard killed** (``kill -9 $PPID``): the keeper ends the tree at once and says so; the
  result carries the guard's signal as the exit code and a note (``cause="guard"``).
* **timeout**: after ``timeout`` seconds the tree is ended and the result is an error that says
  so.
* **stop**: the turn's scope (``ctx.stops``) has the tree signalled (SIGTERM) on the stopping
  thread, then the awaiting task is cancelled: ``grace_s`` seconds, then SIGKILL; once the tree
  is gone ``CancelledError`` is re-raised (a pool's keeper is left to the pool to reap). A
  second cancel during that cleanup does not cut it short.

Every group ending is booked in ``ctx.ledger`` (a :class:`agent.tools.process.ProcessLedger`), so
the host can report "N child processes ended" for a stopped call that returned no result.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent import sandbox_init
from agent.scope import InterruptScope, Registration
from agent.stamps import stamp
from agent.stops import StopRequest
from agent.tools import shell_spawn, tree_end
from agent.tools.base import ToolResult, count_processes
from agent.tools.output import OutputBuffer
from agent.tools.process import GroupEnding, ProcessLedger, run_to_completion
from agent.tools.sandbox import Sandbox
from agent.tools.shell_spawn import NON_INTERACTIVE_ENV, READ_CHUNK, Child
from agent.tools.spares import SparePool, attach

_log = logging.getLogger(__name__)

_REAP_WAIT_S = 5.0

STOPPED_WARM_DELAY_S = 0.25
"""Seconds from a stopped call to the next spare's start: not beside the rest of the stop."""


class ShellRun:
    """One command run by the shell tool; keeps what happened for the result and the receipt.

    Args:
        command: the ``/bin/sh -c`` command line.
        cwd: working directory.
        on_output: called with decoded output text as it arrives (on the loop's thread).
        max_output_bytes: budget of the kept output, in bytes.
        timeout_s: seconds before the command is ended and reported as timed out.
        grace_s: seconds between SIGTERM and SIGKILL when ending the group.
        kill_wait_s: seconds to wait for the group to go after SIGKILL.
        drain_s: seconds to keep reading after the shell exited while background processes
            still hold the output pipe open, before those are ended.
        ledger: where group endings are booked (shared per turn).
        env: extra environment variables on top of this process's environment.
        sandbox: how the command is confined (:mod:`agent.tools.sandbox`; off by default):
            its command line is wrapped in bubblewrap, under the same guard.
        spares: keepers started ahead of need (:mod:`agent.tools.spares`); the command runs
            under one when one is ready (not sandboxed, same ``grace_s``).
        stops: the turn's scope (``ToolContext.stops``): a member while the command runs, so
            a hard stop signals the tree on the stopping thread (:meth:`interrupt`).

    Attributes:
        group: the keeper's pid (its process group's id) once started, else None; ``pid`` is the
            shell's own.
        exit_code: the shell's exit status after it exited by itself (negative: signal).
        timed_out: True when the timeout ended the command.
        stopped: True when a cancel (hard stop) ended the command.
        output: the kept head and tail of the output.
        endings: the group endings this run caused (stop, timeout or leftovers).
    """

    def __init__(
        self,
        command: str,
        *,
        cwd: Path,
        on_output: Callable[[str], None],
        max_output_bytes: int,
        timeout_s: float = 600.0,
        grace_s: float = 2.0,
        kill_wait_s: float = 5.0,
        drain_s: float = 0.25,
        ledger: ProcessLedger | None = None,
        env: Mapping[str, str] | None = None,
        sandbox: Sandbox | None = None,
        spares: SparePool | None = None,
        stops: InterruptScope | None = None,
    ) -> None:
        self.command = command
        self.stops = stops
        self._tree: tree_end.Tree | None = None
        self._registration: Registration | None = None
        self.spares = spares
        self.sandbox = sandbox or Sandbox()
        self.cwd = cwd
        self.on_output = on_output
        self.timeout_s = timeout_s
        self.grace_s = grace_s
        self.kill_wait_s = kill_wait_s
        self.drain_s = drain_s
        self.ledger = ledger if ledger is not None else ProcessLedger()
        self.env = env
        self.output = OutputBuffer(max_output_bytes)
        self.group: int | None = None
        self._child: Child | None = None
        self.exit_code: int | None = None
        self.timed_out = False
        self.stopped = False
        self.endings: list[GroupEnding] = []
        self._callback_failed = False
        self._term_sent = False  # interrupt() signalled the tree (a stop, on its thread)

    @property
    def pid(self) -> int | None:
        """The shell's pid once started (the keeper's until known)."""
        if self._child is not None and self._child.protocol.command_pid is not None:
            return self._child.protocol.command_pid
        return self.group

    @property
    def children_ended(self) -> int:
        """Processes this run ended (the shell included when it was still running)."""
        return sum(ending.ended for ending in self.endings)

    # -- running -------------------------------------------------------------------------------

    async def run(self) -> ToolResult:
        """Run the command to its end (exit or timeout).

        Returns:
            the result: output and exit code, or an error for a timeout or a start failure.

        Raises:
            asyncio.CancelledError: on a hard stop, after the whole group is gone and the shell
                is reaped; also when the stop's SIGTERM ended the command before the stop's
                cancel reached this loop (never an exit code for a stopped command).
        """
        argv = ["/bin/sh", "-c", self.command]
        spawn = asyncio.ensure_future(self._spawn(argv))
        try:
            child = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            # Stopped while the child was being created: let the spawn finish, then end it.
            self.stopped = True
            started = await shell_spawn.settle(spawn)
            if started is not None:
                self.group, self._child = started.pid, started
                try:
                    await run_to_completion(asyncio.ensure_future(self._end(started, None, "stop")))
                finally:
                    started.close()
            raise
        except OSError as exc:
            return ToolResult.error(f"could not start the command in {self.cwd}: {exc}")
        self.group, self._child = child.pid, child
        self._arm(child)  # a spare's guard is known already: before the command's first output
        reader = asyncio.ensure_future(self._pump(child.stdout))
        try:
            result = await self._supervise(child, reader)
            if self._term_sent:  # the stop's SIGTERM ended it: a stop, whose cancel is coming
                raise asyncio.CancelledError
            return result
        except asyncio.CancelledError:
            stamp("shell.cancelled")
            self.stopped = True
            await run_to_completion(asyncio.ensure_future(self._end(child, reader, "stop")))
            stamp("shell.ended")
            raise
        finally:
            if self._registration is not None:
                self._registration.unregister()
            if self._tree is not None:
                self._tree.close()
            child.close()
            if self.spares is not None:  # for the next call, now that this one is over
                self.spares.warm(STOPPED_WARM_DELAY_S if self.stopped else 0.0)

    async def _spawn(self, argv: list[str]) -> Child:
        """Start ``argv`` under a spare keeper when one is ready and fits, else under one the
        pool starts for the call (reaped by the pool too), else a new one of asyncio's."""
        pool = self.spares if not self.sandbox.on and self.cwd.is_dir() else None
        spare = None
        if pool is not None and pool.grace_s == self.grace_s:
            spare = await pool.take_or_start(_REAP_WAIT_S)
        if spare is None:
            return await shell_spawn.spawn(argv, self.cwd, self.env, self.grace_s, self.sandbox)
        stamp("shell.spawn_spare")
        return await attach(spare, argv, self.cwd, shell_spawn.command_env(self.env))

    async def _supervise(self, child: Child, reader: asyncio.Future[None]) -> ToolResult:
        # The timeout is the command's: it starts once the guard forked the shell.
        begun: set[asyncio.Future[Any]] = {child.protocol.started, child.exited}
        await asyncio.wait(
            begun,
            timeout=_REAP_WAIT_S,
            return_when=asyncio.FIRST_COMPLETED,
        )
        self._arm(child)
        done, _ = await asyncio.wait({child.exited}, timeout=self.timeout_s)
        if not done:
            self.timed_out = True
            ending = await run_to_completion(
                asyncio.ensure_future(self._end(child, reader, "timeout"))
            )
            ended = f"; {count_processes(ending.ended)} ended" if ending.ended else ""
            return ToolResult(
                content=f"timed out after {self.timeout_s:g} s{ended}\n\n{self._text()}",
                is_error=True,
                truncated=self.output.truncated,
                children_ended=self.children_ended,
            )
        self.exit_code = child.exited.result()
        await asyncio.wait({reader}, timeout=self.drain_s)
        notes: list[str] = []
        if child.protocol.guard_killed:  # the keeper ended the tree at once, unasked
            ending = await run_to_completion(
                asyncio.ensure_future(self._end(child, reader, "guard"))
            )
            notes.append(f"[the command killed its guard: {count_processes(ending.ended)} ended]")
        elif not child.reaped.done():  # the keeper lingers: something still runs
            ending = await run_to_completion(
                asyncio.ensure_future(self._end(child, reader, "leftover"))
            )
            if ending.ended:
                notes.append(
                    f"[ended {count_processes(ending.ended)} still running after the "
                    "command exited]"
                )
        else:
            await self._close_reader(reader)
        if self.exit_code != 0:
            notes.append(f"[exit code {self.exit_code}]")
        content = self._text()
        if notes:
            content += ("" if content.endswith("\n") else "\n") + "\n".join(notes)
        return ToolResult(
            content=content,
            is_error=self.exit_code != 0,
            exit_code=self.exit_code,
            truncated=self.output.truncated,
            children_ended=self.children_ended,
        )

    def _text(self) -> str:
        text = self.output.text()
        return text if text else "(no output)"

    # -- output --------------------------------------------------------------------------------

    async def _pump(self, stream: asyncio.StreamReader) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            chunk = await stream.read(READ_CHUNK)
            if not chunk:
                break
            self.output.append(chunk)
            self._emit(decoder.decode(chunk))
        self._emit(decoder.decode(b"", final=True))

    def _emit(self, text: str) -> None:
        if not text:
            return
        try:
            self.on_output(text)
        except Exception:
            if not self._callback_failed:  # keep reading: a full pipe would block the command
                self._callback_failed = True
                _log.exception("the output callback of %r failed", self.command)

    # -- ending --------------------------------------------------------------------------------

    def _arm(self, child: Child) -> None:
        """Once the guard said who it is: hold the tree, join the turn's scope (once)."""
        if self._registration is None and self._tree_of(child) is not None and self.stops:
            self._registration = self.stops.register(self)

    def interrupt(self, stop: StopRequest) -> None:
        """A hard stop, on the thread that stops: the tree gets its SIGTERM now (``Tree.term``)
        and dies while the turn's loop waits to run; the cancel that follows ends the rest."""
        tree = self._tree
        if tree is not None:
            stamp("shell.term_now")
            self._term_sent = True
            tree.term()

    async def _end(
        self, child: Child, reader: asyncio.Future[None] | None, cause: str
    ) -> GroupEnding:
        """End the tree, book the ending, finish reading.

        desk ends the tree itself (:mod:`agent.tools.tree_end`; the guard and the keeper then
        exit by themselves, having nothing left), unless the keeper is ending it already (the
        command killed its guard), has exited (nothing was left), the guard has not said its
        pid yet (a stop during the start), or desk cannot (no pidfds or ``/proc``): then the
        keeper is asked by SIGTERM and its count waited for.
        """
        started = time.monotonic()
        protocol = child.protocol
        keeper_at_it = protocol.guard_killed or protocol.ending.done()
        unknown = protocol.guard_pid is None  # the guard has not said who it is yet
        tree = None if keeper_at_it or unknown else self._tree_of(child)
        detached = False
        if tree is None:
            ended, survivors, signals, gone_at = await self._keeper_ends(child)
        else:
            stamp("shell.desk_ends")
            end = await tree.end(self.grace_s, self.kill_wait_s)
            ended, survivors, signals, gone_at = end.ended, end.survivors, end.signals, end.gone_at
            # The guard and the keeper exit by themselves now (a stop leaves a spare's to its pool)
            if not end.survivors and cause == "stop" and child.detach is not None:
                detached = child.detach()
                stamp("shell.detached")
            elif not end.survivors:
                await asyncio.wait({child.reaped}, timeout=_REAP_WAIT_S)
            if not detached and not child.reaped.done():  # something is left: the keeper too
                more = await self._keeper_ends(child)
                ended, survivors = ended + more[0], more[1]
                signals = signals or more[2]
                gone_at = more[3]
        ending = GroupEnding(
            pgid=child.pid,
            cause=cause,
            ended=ended,
            signals=signals,
            survivors=survivors,
            elapsed_s=max(0.0, gone_at - started),
            gone_at=gone_at,
            pid=protocol.command_pid,
        )
        if ending.ended or ending.signals:
            self.endings.append(ending)
            self.ledger.record(ending)
        # Reaped by asyncio's watcher or a spare's pidfd reader (``reaped``); detached: its pool
        if not detached:
            await asyncio.wait({child.reaped}, timeout=_REAP_WAIT_S)
        stamp("shell.reaped")
        if reader is not None:
            await self._close_reader(reader)
        return ending

    def _tree_of(self, child: Child) -> tree_end.Tree | None:
        """The tree desk ends itself (held since the guard said who it is, else now); None when
        desk cannot (:func:`agent.tools.tree_end.hold`) or the keeper was reaped."""
        if self._tree is None or self._tree.closed:
            guard = child.protocol.guard_pid
            if guard is None or child.reaped.done():
                return None
            wrapped = sandbox_init.WRAPPERS if self.sandbox.on else 0
            self._tree = tree_end.hold(child.pid, guard, wrapped)
        return self._tree

    async def _keeper_ends(self, child: Child) -> tuple[int, int, tuple[str, ...], float]:
        """Ask the keeper to end the tree (SIGTERM) unless it is at it or gone; its count."""
        protocol = child.protocol
        if not protocol.ending.done() and not child.reaped.done():
            with contextlib.suppress(ProcessLookupError):
                child.signal_keeper(signal.SIGTERM)
                stamp("shell.term_sent")
        watched: set[asyncio.Future[Any]] = {protocol.ending, child.reaped}
        await asyncio.wait(
            watched,
            timeout=self.grace_s + self.kill_wait_s + _REAP_WAIT_S,
            return_when=asyncio.FIRST_COMPLETED,
        )
        stamp("shell.ending")
        if protocol.ending.done():
            return protocol.ending.result()
        return 0, 0, (), time.monotonic()

    async def _close_reader(self, reader: asyncio.Future[None]) -> None:
        """Let the reader reach end of file (the group is gone); give up after a short wait."""
        await asyncio.wait({reader}, timeout=max(self.drain_s, 0.05))
        if not reader.done():
            # A process that left the group still holds the pipe: stop reading it.
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        elif not reader.cancelled() and reader.exception() is not None:
            _log.error("reading the output of %r failed: %s", self.command, reader.exception())


__all__ = ["NON_INTERACTIVE_ENV", "ShellRun"]
