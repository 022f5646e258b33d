"""The approval prompt inside a tool card: allow once (y), allow always (a), deny (n).

It shows what the call will change: a ``write_file`` its diff against the file on disk (or a
new file's first lines) with the size of the change, a ``shell`` call its whole command, each
syntax coloured in a box that scrolls (:class:`~desk.widgets.change_preview.ChangePreview`).

It never takes the focus: the prompt box keeps the keyboard, and only the card's own keys
answer (:mod:`desk.approval_keys`): a click on its buttons, its y / a / n once the person moved
the focus to it (Shift+Tab; they work once :data:`~desk.approval_keys.ANSWER_PAUSE_S` passed
since it appeared), and Alt+y / Alt+a / Alt+n at any time, while Esc is not the stop key; the
card says so. Nothing typed in the prompt box answers it. Esc is not one of its
keys: Esc stops the turn, and the gateway then resolves the approval as denied; from the stop
on the card takes no answer (:meth:`ApprovalPrompt.stopping`), so what is typed after the stop
is typed.
"""

from __future__ import annotations

import time
from typing import ClassVar

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Static
from textual.widgets.button import ButtonVariant

from contract.events import ApprovalRequest
from contract.text import terminal_safe
from desk.approval_keys import ANSWER_PAUSE_S, KEY_HINT, Decision
from desk.tool_text import describe_arguments, full_command, stopped_text, written_path
from desk.widgets._css import css_beside
from desk.widgets.change_preview import ChangePreview
from desk.widgets.click_button import ClickButton

DECISION_TEXT: dict[str, str] = {
    "once": "✓ allowed once",
    "always": "✓ allowed always in this session",
    "deny": "✖ denied",
}
"""What a resolved prompt says for each decision."""

CHOICES: tuple[tuple[str, str, str, str], ...] = (
    ("approve-once", "y  Allow once", "y  Allow once", "y Once"),
    ("approve-always", "a  Allow always (this session)", "a  Always", "a Always"),
    ("approve-deny", "n  Deny", "n  Deny", "n Deny"),
)
"""Each button's id and its label on a wide card, a narrow one (``-narrow``) and a very
narrow one (``-stacked``: one button a row)."""

BUTTON_MIN_WIDTH = 16
"""A button's least width (Textual's ``Button``), but on a narrow card."""
BUTTON_GAP = 2
"""Columns between two buttons on a wide card (``margin-right`` in the .tcss)."""
NARROW_GAP = 1
"""Columns between two buttons on a narrow card."""


def row_width(labels: list[str], *, min_width: int, gap: int) -> int:
    """Columns the buttons with these labels take on one row (a compact button is its label
    and a column each side, at least ``min_width``; ``gap`` after each)."""
    return sum(max(min_width, cell_len(label) + 2) + gap for label in labels)


def choices_fit(width: int) -> str:
    """How the buttons sit on a card ``width`` columns wide inside: ``"wide"`` (one row, full
    labels), ``"narrow"`` (one row, short labels) or ``"stacked"`` (one under the other, the
    shortest labels)."""
    wide = row_width([c[1] for c in CHOICES], min_width=BUTTON_MIN_WIDTH, gap=BUTTON_GAP)
    if width >= wide:
        return "wide"
    narrow = row_width([c[2] for c in CHOICES], min_width=0, gap=NARROW_GAP) - NARROW_GAP
    return "narrow" if width >= narrow else "stacked"


class ApprovalPrompt(Widget, can_focus=True):
    """Asks whether a tool call may run. Posts :class:`ApprovalPrompt.Decided`.

    Args:
        request: the ``approval.request`` (its tool, arguments, reason and preview).
        shown_at: when it appeared (``time.monotonic()``); now when None.
        key_hint: what it says about its keys (:func:`desk.approval_keys.key_hint`).
    """

    DEFAULT_CSS = css_beside(__file__)

    FOCUS_ON_CLICK = False
    """A click on the card (not on a button) leaves the focus in the prompt box."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Alt+y / Alt+a / Alt+n are the app's, while Esc is not the stop key (desk.app_keys).
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

    def __init__(
        self, request: ApprovalRequest, *, shown_at: float | None = None, key_hint: str = KEY_HINT
    ) -> None:
        super().__init__(classes="-pending")
        self.key_hint = key_hint
        """What it says about its keys."""
        self.request = request
        """The ``approval.request`` this prompt answers."""
        self.request_id = request.request_id
        """The ``approval.request`` id."""
        self.tool = request.tool
        """The tool asking."""
        self.arguments = request.arguments
        """The call's JSON arguments."""
        self.reason = request.reason
        """Why the call asks beyond its tool ("" when its tool always asks)."""
        self.shown_at = time.monotonic() if shown_at is None else shown_at
        """When it appeared (``time.monotonic()``): its own keys answer only later."""
        self.answer: str | None = None
        """The decision the person sent, once sent."""
        self.decision: str | None = None
        """The decision the gateway resolved, once resolved."""
        self.stopped = False
        """True once its turn was stopped: the gateway resolves it, and no key answers it."""
        self.answered_with_focus = False
        """True when it was answered while the focus was in it (on one of its buttons, which
        the answer disables): the focus goes back to the prompt box."""

    @property
    def waiting(self) -> bool:
        """True while nobody has answered, its turn was not stopped, and the gateway has not
        resolved it."""
        return self.answer is None and self.decision is None and not self.stopped

    def compose(self) -> ComposeResult:
        request, tool = self.request, terminal_safe(self.tool)
        command = full_command(self.tool, self.arguments)
        path = written_path(self.tool, self.arguments)
        preview: ChangePreview | None = None
        note = request.preview_note
        if command is not None:
            question = f"Allow {tool} to run this command?"
            lines = command.count("\n") + 1
            note = f"{lines:,} lines" if lines > 1 else ""
            preview = ChangePreview(command, "shell")
        elif path is not None and request.preview_kind == "diff":
            question = f"Allow {tool} to change {path}?"
            preview = ChangePreview(request.preview, "diff") if request.preview else None
        elif path is not None and request.preview_kind == "new_file":
            question = f"Allow {tool} to create {path}?"
            preview = ChangePreview(request.preview, "file", path=path)
        elif path is not None:
            question = f"Allow {tool} to write {path}?"
        else:
            question = f"Allow {tool}?"
        yield Static(question, classes="question", markup=False)
        if self.reason:  # e.g. a path outside the workspace: the resolved path says it all
            yield Static(terminal_safe(self.reason), classes="detail", markup=False)
        elif preview is None and path is None:
            detail = describe_arguments(self.tool, self.arguments, limit=400)
            yield Static(detail, classes="detail", markup=False)
        if note:
            yield Static(terminal_safe(note), classes="size", markup=False)
        if preview is not None:
            yield preview
        variants: dict[str, ButtonVariant] = {"approve-once": "success", "approve-deny": "error"}
        with Horizontal(classes="choices"):
            for button_id, label, _, _ in CHOICES:
                variant = variants.get(button_id, "default")
                yield ClickButton(label, id=button_id, compact=True, variant=variant)
        yield Static(self.key_hint, classes="keys", markup=False)
        yield Static("", classes="resolution", markup=False)

    def on_resize(self, event: events.Resize) -> None:
        """Every button stays in sight: on a narrow card the labels get shorter, and on a very
        narrow one the buttons go one under the other (:func:`choices_fit`)."""
        fit = choices_fit(self.content_size.width)
        self.set_class(fit != "wide", "-narrow")
        self.set_class(fit == "stacked", "-stacked")
        labels = {"wide": 1, "narrow": 2, "stacked": 3}[fit]
        for choice in CHOICES:
            self.query_one(f"#{choice[0]}", Button).label = choice[labels]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Its keys work once it waited :data:`ANSWER_PAUSE_S` (it has the focus on purpose)."""
        if action == "decide":
            return self.waiting and time.monotonic() - self.shown_at >= ANSWER_PAUSE_S
        return True

    def action_decide(self, decision: str) -> None:
        """Send ``decision`` (once per prompt)."""
        if not self.waiting:
            return
        self.answer = decision
        self.answered_with_focus = self.has_focus_within
        for button in self.query(Button):
            button.disabled = True
        self.query_one(".resolution", Static).update("…")
        self.add_class("-sent")
        self.post_message(self.Decided(self, decision))

    def stopping(self) -> None:
        """Its turn was stopped: take no answer any more (the keys typed from now on are typed,
        the buttons are disabled) until the gateway's ``approval.resolved`` says how it ended."""
        if not self.waiting:
            return
        self.stopped = True
        for button in self.query(Button):
            button.disabled = True
        self.query_one(".resolution", Static).update("… stopping")
        self.can_focus = False

    def decide(self, decision: Decision) -> None:
        """Answer with ``decision`` (a deliberate key read by the desk)."""
        self.action_decide(decision)

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
