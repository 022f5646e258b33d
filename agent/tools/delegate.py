"""The ``delegate`` tool: hand a task to a child agent, and wait for its answer or not.

The tool only states the call; a host that can run agents (the gateway) does the work through
a :class:`Delegator`: it runs the child on a worker of its own, with its own tools and
transcript, under a child :class:`~agent.scope.InterruptScope` of the parent's turn, so every
hard stop of the parent reaches it (and a child that starts after that stop is stopped on
entry).

- Foreground (``background`` false, the default): the parent's turn waits; the child's final
  answer is the tool result. When the parent is stopped, the host waits (bounded) for the
  child's worker to exit before the tool lets the stop through, so nothing of the child
  outlives the parent.
- Background: the tool returns at once with the child's id; the child's answer comes back to
  the parent as a steer (:mod:`agent.steering`) when it finishes, or as a note in the
  transcript when the parent has ended by then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agent.tools.base import ToolContext, ToolResult, tool_schema

DELEGATE = "delegate"
"""The tool's name, as the model calls it."""


@dataclass(frozen=True, slots=True)
class DelegateRequest:
    """One ``delegate`` call, as the model made it.

    Attributes:
        task: what the child agent is asked to do (not empty).
        background: True to run it in the background (the call returns at once).
        call_id: the parent's tool call id (a frontend nests the child's card under it).
    """

    task: str
    background: bool
    call_id: str


class Delegator(Protocol):
    """What runs child agents for one parent agent (the gateway implements it)."""

    async def delegate(self, request: DelegateRequest) -> ToolResult:
        """Run the child; called on the parent turn's event loop.

        Returns:
            the tool result: the child's answer (foreground), its id (background), or an error
            result (a depth or width limit, a child that failed or was stopped on its own).

        Raises:
            asyncio.CancelledError: the parent was hard-stopped (after the child's worker
                exited, or the host's bound passed).
        """
        ...


@dataclass(frozen=True, slots=True)
class DelegateTool:
    """The ``delegate`` tool of one parent agent. Arguments: ``task``, optional ``background``.

    Attributes:
        delegator: runs the children of this parent.
        name: always ``delegate``.
        needs_approval: False (the child asks for approval of its own calls).
    """

    delegator: Delegator
    name: str = DELEGATE
    needs_approval: bool = False

    @property
    def description(self) -> str:
        """What the model reads about the tool."""
        return (
            "Hand a self-contained task to a child agent with its own tools and context. "
            "With background false (the default) you wait and get its final answer as the "
            "result; with background true the call returns at once with the child's id and "
            "its answer arrives later as a message while you are still working (after your "
            "final answer it goes to the person). Write the task so it needs nothing else "
            "from this conversation."
        )

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments."""
        return {
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "What the child agent should do."},
                "background": {
                    "type": "boolean",
                    "description": "Run it in the background and go on without waiting.",
                },
            },
            "required": ["task"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Start the child through the delegator (see the module docstring).

        Raises:
            asyncio.CancelledError: the parent was hard-stopped.
        """
        task = str(args["task"]).strip()
        if not task:
            return ToolResult.error("delegate: the task is empty; say what the child should do")
        background = bool(args.get("background", False))
        return await self.delegator.delegate(DelegateRequest(task, background, ctx.call_id))


class _Unhosted:
    """A delegator for the tool's definition only: it runs nothing."""

    async def delegate(self, request: DelegateRequest) -> ToolResult:
        """Refuse: no host runs child agents here."""
        return ToolResult.error("delegate: no host runs child agents here")


def delegate_schema() -> dict[str, Any]:
    """The ``tools[]`` element every request offering ``delegate`` carries (the same for every
    parent): what a context count adds for it."""
    return tool_schema(DelegateTool(_Unhosted()))


__all__ = ["DELEGATE", "DelegateRequest", "DelegateTool", "Delegator", "delegate_schema"]
