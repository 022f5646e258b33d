"""The approval prompt inside a tool card: allow once (y), allow always (a), deny (n).

It takes the focus when it appears so the keys work at once; Esc is not one of its keys: Esc
stops the turn, and the gateway then resolves the approval as denied.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Static

from desk.tool_text import describe_arguments, full_command, stopped_text
from desk.widgets._css import css_beside
from tui_gateway.text import terminal_safe

DECISION_TEXT: dict[str, str] = {
    "once": "✓ allowed once",
    "always": "✓ allowed always in this session",
    "deny": "✖ denied",
}
"""What a resolved prompt says for each decision."""

COMMAND_LINES = 6
"""Most lines of a shell command shown in the prompt."""


class ApprovalPrompt(Widget, can_focus=True):
    """Asks whether a tool call may run. Posts :class:`ApprovalPrompt.Decided`.

    Args:
        request_id: the ``approval.request`` id.
        tool: the tool's name.
        arguments: the call's JSON arguments.
        reason: why the call asks beyond its tool (``read_file on /etc/hosts, outside the
            workspace ...``), or "".
    """

    DEFAULT_CSS = css_beside(__file__)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "decide('once')", "Allow once"),
        Binding("a", "decide('always')", "Allow always"),
        Binding("n", "decide('deny')", "Deny"),
    ]

    class Decided(Message):
        """The person answered.

        Args:
            prompt: the prompt answered.
            decision: ``once``, ``always`` or ``deny``.
        """

        def __init__(self, prompt: ApprovalPrompt, decision: str) -> None:
            super().__init__()
            self.prompt = prompt
            """The prompt answered."""
            self.decision = decision
            """``once``, ``always`` or ``deny``."""

    def __init__(self, request_id: str, tool: str, arguments: str, reason: str = "") -> None:
        super().__init__(classes="-pending")
        self.reason = reason
        """Why the call asks beyond its tool ("" when its tool always asks)."""
        self.request_id = request_id
        """The ``approval.request`` id."""
        self.tool = tool
        """The tool asking."""
        self.arguments = arguments
        """The call's JSON arguments."""
        self.answer: str | None = None
        """The decision the person sent, once sent."""
        self.decision: str | None = None
        """The decision the gateway resolved, once resolved."""

    def compose(self) -> ComposeResult:
        command = full_command(self.tool, self.arguments)
        tool = terminal_safe(self.tool)
        if command is not None:
            lines = command.splitlines() or [""]
            shown = "\n".join(lines[:COMMAND_LINES])
            if len(lines) > COMMAND_LINES:
                shown += f"\n… {len(lines) - COMMAND_LINES} more lines"
            question, detail = f"Allow {tool} to run this command?", shown
        elif self.reason:  # e.g. a path outside the workspace: the resolved path says it all
            question, detail = f"Allow {tool}?", terminal_safe(self.reason)
        else:
            question = f"Allow {tool}?"
            detail = describe_arguments(self.tool, self.arguments, limit=400)
        yield Static(question, classes="question", markup=False)
        yield Static(detail, classes="detail", markup=False)
        with Horizontal(classes="choices"):
            yield Button("y  Allow once", id="approve-once", compact=True, variant="success")
            yield Button("a  Allow always (this session)", id="approve-always", compact=True)
            yield Button("n  Deny", id="approve-deny", compact=True, variant="error")
        yield Static("", classes="resolution", markup=False)

    def action_decide(self, decision: str) -> None:
        """Send ``decision`` (once per prompt)."""
        if self.answer is not None or self.decision is not None:
            return
        self.answer = decision
        for button in self.query(Button):
            button.disabled = True
        self.query_one(".resolution", Static).update("…")
        self.add_class("-sent")
        self.post_message(self.Decided(self, decision))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The buttons do what the keys do."""
        event.stop()
        decision = (event.button.id or "").removeprefix("approve-")
        if decision in DECISION_TEXT:
            self.action_decide(decision)

    def resolve(self, decision: str, reason: str = "") -> None:
        """Show how the prompt ended (``approval.resolved``) and give up the focus.

        Args:
            decision: ``once``, ``always`` or ``deny``.
            reason: why, when it was not the person's answer: ``stopped``, or who stopped
                the turn (``stopped by the user``, ``stopped by the system: ...``).
        """
        self.decision = decision
        text = DECISION_TEXT.get(decision, decision)
        if reason == "stopped":
            text += ": the turn was stopped"
        elif reason.startswith("stopped by"):
            text += f": {stopped_text(reason)}"
        elif reason:
            text += f": {reason}"
        self.remove_class("-pending")
        self.add_class(f"-{decision}")
        self.can_focus = False
        self.query_one(".resolution", Static).update(terminal_safe(text))
