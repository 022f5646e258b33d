"""One child agent in the transcript: its task, live output, elapsed time, Stop and outcome.

A ``delegate`` tool call starts a child agent; its card sits right under the call's tool card
(a child's own tool calls and children are nested inside the card's box). While the child runs
the card shows the tail of what it writes, under its tool cards (the text it writes last is
about what its tools did), and a ticking time, and its Stop button stops that
child alone (its parent goes on). When it ends the card shows how, and what became of its
answer (the tool result, a steer of its parent, or this note).
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Button, Static

from agent.stops import YOU_STOPPED
from contract.events import ChildCompleted
from contract.text import terminal_safe
from desk.export_text import quote
from desk.markdown_cuts import closed_fences, markdown_tail
from desk.receipts import format_elapsed
from desk.widgets._css import css_beside
from desk.widgets.click_button import ClickButton
from desk.widgets.reply_body import markdown_for
from desk.widgets.status_bar import Clock

LIVE_TAIL_LINES = 6
"""Lines of the child's reply shown while it runs (and after, folded)."""

MAX_KEPT_CHARS = 32_000
"""Reply text kept per card, in characters (its tail)."""

TICK_S = 0.1
"""How often the running time is redrawn, in seconds."""

DELIVERY = {
    "tool_result": "answer returned to its parent",
    "steer": "answer handed to its parent at its next step",
    "note": "its parent had ended: the answer stays here",
}
"""What became of a finished child's answer, by ``child.complete``'s ``delivery``."""


def outcome_words(exit_reason: str) -> str:
    """A child's exit reason as the card's header says it: ``interrupted_by_user`` -> "■
    stopped by you", ``interrupted_by_system(gateway.shutdown)`` -> "■ stopped by the system",
    ``failed(X)`` -> "✖ failed (X)", ``completed`` -> "✓ done"; anything else as it is."""
    if exit_reason == "completed":
        return "✓ done"
    if exit_reason == "interrupted_by_user":
        return f"■ {YOU_STOPPED}"
    if exit_reason.startswith("interrupted_by_system"):
        return "■ stopped by the system"
    if exit_reason.startswith("failed(") and exit_reason.endswith(")"):
        return f"✖ failed ({exit_reason[len('failed(') : -1]})"
    return exit_reason


class AgentCard(Widget):
    """A child agent block.

    Args:
        turn_id: the child's turn id.
        parent_turn_id: the turn whose ``delegate`` call started it.
        task: what it was asked.
        background: the parent did not wait for it.
        clock: the clock its running time is measured with (seconds).
        started_at: when it started (clock seconds); None for now.
        saved: a saved child's tool calls, for its box (a live one's come as it makes them).
    """

    DEFAULT_CSS = css_beside(__file__)

    class StopRequested(Message):
        """The card's Stop: stop this child alone.

        Args:
            turn_id: the child's turn id.
        """

        def __init__(self, turn_id: str) -> None:
            super().__init__()
            self.turn_id = turn_id
            """The child to stop."""

    def __init__(
        self,
        turn_id: str,
        parent_turn_id: str,
        task: str,
        *,
        background: bool,
        clock: Clock,
        started_at: float | None = None,
        saved: Sequence[Widget] = (),
    ) -> None:
        super().__init__(id=f"agent-{turn_id}", classes="-running")
        self.turn_id = turn_id
        """The child's turn id."""
        self.parent_turn_id = parent_turn_id
        """Its parent's turn id."""
        self.agent_task = task
        """What it was asked."""
        self.background = background
        """The parent did not wait for it."""
        self.text = ""
        """What it wrote so far (its tail), then its final answer."""
        self.outcome: str | None = None
        """Its exit reason, once it ended."""
        self.box = Vertical(*saved, classes="box")
        """Where the child's own tool cards and children go."""
        # its own lines, held: a query would find a nested child's first (they are in the box)
        self._state = Static("", classes="state", markup=False)
        self._stop = ClickButton(
            "■ Stop", classes="stop", compact=True, tooltip="stop this agent only"
        )
        self._output = Static("", classes="output", markup=False)
        self._outcome = Static("", classes="outcome", markup=False)
        self._clock = clock
        self._started_at = clock() if started_at is None else started_at
        self._elapsed: float | None = None
        self._stopping = False
        self._line = ""  # the outcome line, once it ended
        self._timer: Timer | None = None

    @property
    def running(self) -> bool:
        """True until the child's outcome arrived."""
        return self.outcome is None

    def compose(self) -> ComposeResult:
        kind = "background agent" if self.background else "agent"
        title = f"⧉ {kind} {self.turn_id[:6]} · {terminal_safe(self.agent_task)}"
        with Horizontal(classes="summary"):
            yield Static(" ".join(title.split()), classes="title", markup=False)
            yield self._state
            yield self._stop
        yield self.box  # its tool cards and children, then what it wrote last, in that order
        yield self._output
        yield self._outcome

    def on_mount(self) -> None:
        if self.running:
            self._timer = self.set_interval(TICK_S, self._show_state)
        self._show_state()
        self._show_output()
        self._show_outcome_line()

    def _show_outcome_line(self) -> None:
        if self.outcome is not None:
            self._outcome.update(terminal_safe(self._line))
            self._stop.disabled = True

    def state_text(self) -> str:
        """The right-hand side of the summary line as it reads now."""
        if self.outcome is not None:
            said = outcome_words(self.outcome)
            if self._elapsed is None:
                return said
            return f"{said} · {format_elapsed(self._elapsed)}"
        running = format_elapsed(self._clock() - self._started_at)
        return f"stopping… {running}" if self._stopping else f"running {running}"

    def _show_state(self) -> None:
        self._state.update(self.state_text())

    def _show_output(self) -> None:
        shown = markdown_tail(self.text, LIVE_TAIL_LINES)  # drawn as in the whole reply
        self._output.update(markdown_for(self)(shown) if shown.strip() else "")
        self.set_class(bool(shown.strip()), "-has-output")

    def add_text(self, text: str) -> None:
        """A streamed piece of the child's reply."""
        if self.outcome is not None or not text:
            return
        self.text = (self.text + text)[-MAX_KEPT_CHARS:]
        self._show_output()

    def stopping(self) -> None:
        """The child's stop was sent; its outcome follows."""
        self._stopping = True
        self._show_state()

    def finish(self, result: ChildCompleted, note: str) -> None:
        """Show the child's outcome (``child.complete``).

        Args:
            result: the outcome.
            note: the stop receipt or error line ("" when it completed).
        """
        self.show_outcome(
            result.exit_reason,
            result.text,
            completed=result.status == "completed",
            note=note,
            delivery=DELIVERY.get(result.delivery, ""),
            elapsed_s=result.elapsed_s,
        )

    def show_outcome(
        self,
        exit_reason: str,
        text: str,
        *,
        completed: bool,
        note: str = "",
        delivery: str = "",
        elapsed_s: float | None = None,
    ) -> None:
        """Show how the child ended (live, or from a saved session).

        Args:
            exit_reason: its exit reason.
            text: its final answer ("" keeps what it streamed).
            completed: it completed (else it was stopped, failed or ran out of calls).
            note: the stop receipt or error line.
            delivery: what became of its answer ("" when not known).
            elapsed_s: how long it ran, seconds (None when not known).
        """
        if self.outcome is not None:
            return
        self.outcome = exit_reason or "ended"
        self._elapsed = elapsed_s
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.text = text or self.text
        self.remove_class("-running")
        self.add_class("-ok" if completed else "-stopped")
        self._line = " · ".join(part for part in (note, delivery) if part)
        self._show_outcome_line()
        self._show_state()
        self._show_output()

    def export_markdown(self) -> str:
        """The child for ``/export``: its task, its own tool calls and children, its answer
        and how it ended."""
        kind = "Background agent" if self.background else "Agent"
        task = " ".join(self.agent_task.split())
        parts = [f"### {kind} {self.turn_id[:6]}: {task}"]
        for child in self.box.children:
            export = getattr(child, "export_markdown", None)
            if callable(export) and (text := str(export()).strip()):
                parts.append(text)
        if self.text.strip():
            parts.append(closed_fences(self.text.strip()))
        line = self._line or (self.outcome or "still running")
        parts.append(quote(line))
        return "\n\n".join(parts)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Stop: this child only."""
        event.stop()
        if self.outcome is None:
            self.post_message(self.StopRequested(self.turn_id))
