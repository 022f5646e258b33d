"""Approval prompts: a tool call that needs the person's yes waits on a future of its turn.

The future lives on the turn's own event loop, so a hard stop (which cancels the turn's task)
wakes the wait at once and the call is answered "stopped by ...". The person's answer arrives
from another thread and is handed to the loop with ``call_soon_threadsafe``. The request says
what a ``write_file``, ``edit_file`` or ``apply_patch`` will change: its diff against the
files on disk, read here, on the gateway's side (:mod:`tui_gateway.turns.approval_preview`,
:mod:`tui_gateway.turns.edit_preview`).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.provider.types import ToolCall
from agent.tools.runner import Approver
from contract.errors import GatewayError
from contract.events import ApprovalRequest, ApprovalResolved, Payload
from tui_gateway.turns.approval_preview import change_preview
from tui_gateway.turns.edit_preview import edit_preview

DECISIONS = ("once", "always", "deny")
"""What the person can answer: allow once, allow always for this session, deny."""


def refused(tool: str, where: str) -> str:
    """What the model is told of a call that needed approval where no one can be asked
    (``where``: ``desk run without --yes``)."""
    return (
        f"this {tool} call was not run: calls that need approval are refused in {where}, "
        "where no one is asked (no person declined it)"
    )


@dataclass(slots=True)
class _Pending:
    turn_id: str
    tool: str
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[tuple[str, str]]


@dataclass(slots=True)
class SessionApprovals:
    """One session's approval state: the tools allowed always, and the prompts pending.

    Args:
        publish: sends an event payload for this session; must not block.
    """

    publish: Callable[[Payload], None]
    always: set[str] = field(default_factory=set)
    _pending: dict[str, _Pending] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def approver(
        self,
        turn_id: str,
        who_stopped: Callable[[], str] | None = None,
        cwd: Path | None = None,
        on_wait: Callable[[ToolCall, bool], None] | None = None,
    ) -> Approver:
        """The ``approve`` callback for one turn's tool batch.

        Args:
            turn_id: the turn.
            who_stopped: names who stopped the turn (``stopped by the user``...), for the
                ``approval.resolved`` of a prompt that a stop ended.
            cwd: the workspace (a patch's paths are relative to it); default: the process's.
            on_wait: ``(call, True)`` before the person is asked, ``(call, False)`` once they
                answered (before an approved call runs); it may block (to save the wait).
        """
        where = cwd if cwd is not None else Path.cwd()

        async def approve(call: ToolCall, args: dict[str, Any], reason: str) -> bool | str:
            # What a write_file, edit_file or apply_patch will change, on disk (read here, off
            # the turn's loop: a large file must not delay a stop).
            preview = await asyncio.to_thread(change_preview, call.name, args)
            if not preview.kind and not preview.note:
                preview = await asyncio.to_thread(edit_preview, call.name, args, where)
            with self._lock:
                if call.name in self.always:
                    return True
                request_id = uuid.uuid4().hex[:12]
                loop = asyncio.get_running_loop()
                future: asyncio.Future[tuple[str, str]] = loop.create_future()
                self._pending[request_id] = _Pending(turn_id, call.name, loop, future)
            if on_wait is not None:
                on_wait(call, True)
            self.publish(
                ApprovalRequest(
                    turn_id=turn_id,
                    request_id=request_id,
                    tool=call.name,
                    arguments=call.arguments,
                    reason=reason,
                    preview_kind=preview.kind,
                    preview=preview.text,
                    preview_note=preview.note,
                )
            )
            try:
                decision, refusal = await future
            except asyncio.CancelledError:
                self.publish(
                    ApprovalResolved(
                        turn_id=turn_id,
                        request_id=request_id,
                        decision="deny",
                        reason=who_stopped() if who_stopped is not None else "stopped",
                    )
                )
                raise
            finally:
                with self._lock:
                    self._pending.pop(request_id, None)
            if on_wait is not None:
                on_wait(call, False)
            if decision == "always":
                with self._lock:
                    self.always.add(call.name)
            self.publish(
                ApprovalResolved(
                    turn_id=turn_id, request_id=request_id, decision=decision, reason=refusal
                )
            )
            return decision in ("once", "always") or refusal or False

        return approve

    def respond(self, request_id: str, decision: str, refusal: str = "") -> bool:
        """Answer a pending prompt from any thread.

        Args:
            request_id: from the ``approval.request`` event.
            decision: ``once``, ``always`` or ``deny``.
            refusal: with ``deny``, when no person was asked: what the model is told instead
                of "the person declined" (e.g. approvals are off in this run).

        Returns:
            False when nothing waits under that id any more (answered, or its turn stopped).

        Raises:
            GatewayError: for an unknown decision (code -32602).
        """
        if decision not in DECISIONS:
            choices = ", ".join(DECISIONS)
            raise GatewayError(f"decision must be one of {choices}, not {decision!r}", code=-32602)
        with self._lock:
            pending = self._pending.get(request_id)
        if pending is None:
            return False

        def resolve() -> None:
            if not pending.future.done():
                pending.future.set_result((decision, refusal if decision == "deny" else ""))

        try:
            pending.loop.call_soon_threadsafe(resolve)
        except RuntimeError:  # the turn's loop has closed: the turn is over
            return False
        return True
