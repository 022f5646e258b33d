"""One tool call in the transcript: what runs, its live output, its duration and its outcome.

While the call runs the card shows the tail of its output and a ticking duration; an approval
prompt sits inside it while the person decides. Once the call has its result the card folds to
one summary line (``▸ ⚙ shell  $ make test   ✓ exit 0 · 2.1 s``); a click or Enter unfolds it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from contract.events import ApprovalRequest, ToolComplete
from contract.text import terminal_safe
from desk.export_text import ExportedCall, tool_call_markdown
from desk.receipts import format_elapsed
from desk.tool_text import describe_arguments, outcome_text, stopped_line, tail_lines
from desk.widgets._css import css_beside
from desk.widgets.approval_prompt import ApprovalPrompt
from desk.widgets.status_bar import Clock

LIVE_TAIL_LINES = 8
"""Output lines shown while the call runs."""

EXPANDED_TAIL_LINES = 40
"""Output lines shown when a finished card is unfolded."""

MAX_KEPT_CHARS = 64_000
"""Output kept per card, in characters (the tail; the model's copy is the gateway's)."""

TICK_S = 0.1
"""How often the running duration is redrawn, in seconds."""


class ToolCard(Widget, can_focus=True):
    """A tool call block.

    Args:
        turn_id: the turn that made the call.
        call_id: the call's id.
        name: the tool.
        arguments: the call's JSON arguments.
        clock: the clock the duration is measured with (seconds).
        started_at: when the call started (clock seconds; a call drawn again); None: now.
    """

    FOCUS_ON_CLICK = False
    """A click does what it does without taking the focus from the prompt box (Shift+Tab or
    Tab from another control still reach it)."""

    DEFAULT_CSS = css_beside(__file__)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "fold", "Unfold", show=False),
    ]

    expanded: reactive[bool] = reactive(False)
    """Show the output of a finished call (a running call always shows its tail)."""

    def __init__(
        self,
        turn_id: str,
        call_id: str,
        name: str,
        arguments: str,
        *,
        clock: Clock,
        started_at: float | None = None,
    ) -> None:
        super().__init__(classes="-running")
        self.turn_id = turn_id
        """The turn that made the call."""
        self.call_id = call_id
        """The call's id."""
        self.tool = name
        """The tool's name."""
        self.arguments = arguments
        """The call's JSON arguments."""
        self.output = ""
        """Output received so far (its last ``MAX_KEPT_CHARS`` characters)."""
        self.result: ToolComplete | None = None
        """The call's result, once it has one."""
        self.approval: ApprovalPrompt | None = None
        """The approval prompt, while or after one was asked."""
        self._clock = clock
        self._started_at = clock() if started_at is None else started_at
        self._elapsed: float | None = None
        self._timer: Timer | None = None

    @property
    def done(self) -> bool:
        """True once the call has its result."""
        return self.result is not None

    def compose(self) -> ComposeResult:
        with Horizontal(classes="summary"):
            yield Static(self._title(), classes="title", markup=False)
            yield Static("", classes="state", markup=False)
        yield Static("", classes="output", markup=False)
        yield Static("", classes="stop", markup=False)

    def on_mount(self) -> None:
        self._timer = self.set_interval(TICK_S, self._show_state)
        self._show_state()

    def _title(self) -> str:
        marker = "" if not self.done else ("▾ " if self.expanded else "▸ ")
        tool = terminal_safe(self.tool)  # the model names the tool, too
        return f"{marker}⚙ {tool}  {describe_arguments(self.tool, self.arguments)}"

    def state_text(self) -> str:
        """The right-hand side of the summary line as it reads now."""
        if self.result is not None:
            return outcome_text(self.result, self._elapsed)
        if self.approval is not None and self.approval.decision is None:
            return "waiting for approval"
        return f"running {format_elapsed(self._clock() - self._started_at)}"

    def _show_state(self) -> None:
        state = next(self.query(".state").results(Static), None)
        if state is not None:
            state.update(self.state_text())

    def _show_output(self) -> None:
        out = next(self.query(".output").results(Static), None)
        if out is None:
            return
        if self.result is None:
            text = tail_lines(self.output, LIVE_TAIL_LINES)
        else:
            shown = self.output if self.output.strip() else self.result.content
            text = tail_lines(shown, EXPANDED_TAIL_LINES)
        self.set_class(bool(text.strip()), "-has-output")
        # Colours (SGR) are decoded; every other control character is shown, never sent.
        out.update(Text.from_ansi(terminal_safe(text, keep_sgr=True)) if text else Text(""))

    def add_output(self, text: str) -> None:
        """Append a piece of the call's output (``tool.output``)."""
        if self.result is not None or not text:
            return
        self.output = (self.output + text)[-MAX_KEPT_CHARS:]
        self._show_output()

    async def ask_approval(self, request: ApprovalRequest, key_hint: str) -> ApprovalPrompt:
        """Show the approval prompt inside the card (``approval.request``), saying ``key_hint``
        of its keys; it does not take the focus (see :mod:`desk.widgets.approval_prompt`)."""
        prompt = ApprovalPrompt(request, key_hint=key_hint)
        self.approval = prompt
        await self.mount(prompt, after=self.query_one(".summary"))
        self._show_state()
        return prompt

    def approval_resolved(self, *, allowed: bool, at: float | None = None) -> None:
        """The approval ended at ``at`` (clock seconds; None: now); an allowed call's duration
        counts from then (not the wait)."""
        if allowed and self.result is None:
            self._started_at = self._clock() if at is None else at
        self._show_state()

    def finish(self, result: ToolComplete, at: float | None = None) -> None:
        """Show the call's result (``tool.complete``, that came at ``at``: clock seconds; None:
        now) and fold the card to its summary line."""
        if self.result is not None:
            return
        self.result = result
        self._elapsed = (self._clock() if at is None else at) - self._started_at
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.remove_class("-running")
        if result.stopped_by is not None:
            outcome = "-stopped"
        elif result.is_error or (result.exit_code not in (None, 0)):
            outcome = "-failed"
        else:
            outcome = "-ok"
        self.add_class(outcome)
        if result.stopped_by is not None:
            line = stopped_line(result.stopped_by, result.children_ended)
            self.query_one(".stop", Static).update(line)
        self.query_one(".title", Static).update(self._title())
        self._show_state()
        self._show_output()

    def export_markdown(self) -> str:
        """The call for ``/export``: its arguments, its result (capped), and how it ended (a
        stopped call's line says who stopped it)."""
        result = self.result
        # What the model was given (the gateway's copy, as saved: a long output's head and
        # tail), else what was printed so far.
        output = result.content if result is not None and result.content.strip() else self.output
        outcome = outcome_text(result, self._elapsed) if result is not None else "still running"
        return tool_call_markdown(ExportedCall(self.tool, self.arguments, output, outcome))

    def watch_expanded(self) -> None:
        self.set_class(self.expanded, "-expanded")
        title = next(self.query(".title").results(Static), None)
        if title is not None:
            title.update(self._title())

    def action_fold(self) -> None:
        """Enter: fold or unfold a finished card."""
        if self.done:
            self.expanded = not self.expanded

    def on_click(self, event: events.Click) -> None:
        """A click on the card folds or unfolds it (not a click inside the approval prompt)."""
        if self.approval is not None and self.approval.decision is None:
            return
        event.stop()
        self.action_fold()
