"""The compression panel: a running compression's phase, progress, token counts and Cancel.

Shown (by :class:`desk.controllers.compression.CompressionController`) while a compression runs, for
a ``/compress`` turn or a prompt turn that compresses first. It only shows what the gateway's
``compression.progress`` and ``compression.complete`` events say. Its button, "Cancel
compression", posts :class:`CompressionPanel.CancelRequested`, and the app calls
``compression_cancel``: the compression alone stops (a prompt turn then goes on, sent as it is
when it fits without it); the stop key (Esc) stops the turn, compression included, wherever
the focus is. Its phase, bar, counts and button are made with the first compression
(:mod:`desk.widgets.lazy_children`).

The bar claims no more than the events say. Before the summary streams (the lease, reading the
transcript) it is indeterminate. While the summary streams it fills with the summary's tokens
against its budget (the most the summary may have), up to :data:`STREAMING_FILL` of the bar:
the count is the stream's, an estimate, and a summary still streaming is not done. When that
count reaches the budget while the summary still streams, it measures nothing any more: the bar
goes back to indeterminate and the panel says "writing summary" with the count so far
(``~700 tokens``). Only the ``done`` phase fills the bar.

The counts are never cut mid-word: the panel picks, for its width, the fullest wording that fits
in one row (:func:`fit_row`): every count with its words and the elapsed time (``64/1,362 tokens ·
4,322 tokens to summarise · 3.1 s``), then without the elapsed time (the status bar shows it
too), then a shorter phase (``⇊ summarising``) and bar (none at the narrowest), then shorter words
(``64/1,362 · 4,322 to summarise``), at the least the summary's count alone.
"""

from __future__ import annotations

import time

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.clock import Clock as TextualClock
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Button, ProgressBar, Static
from textual.widgets._progress_bar import Bar

from contract.events import CompressionComplete, CompressionProgressed
from contract.text import terminal_safe
from desk.receipts import format_elapsed, format_ms
from desk.widgets._css import css_beside
from desk.widgets.click_button import ClickButton
from desk.widgets.lazy_children import LazyChildren
from desk.widgets.status_bar import TICK_S, Clock

PHASE_TEXT: dict[str, str] = {
    "lease": "taking the lease",
    "prepare": "preparing",
    "summarize": "summarising",
    "commit": "committing",
    "done": "done",
}
"""How each phase of ``compression.progress`` reads on the panel."""

PAST_BUDGET_TEXT = "writing summary"
"""The phase's text while the summary streams past its budget's count (see the docstring)."""

STREAMING_FILL = 0.95
"""The most of the bar a streaming summary fills (its whole is kept for ``done``)."""


LOOKS = ((0, 22), (0, 12), (1, 22), (1, 12), (1, 8), (1, 0))
"""(phase wording, bar width in cells) in the order the panel tries them for the counts it
shows: the full phase (0) with a wide then a narrower bar, then the short phase (1) with
narrower and narrower bars, and no bar (0 cells) at the narrowest rather than counts cut."""

PHASE_GAP = 2
"""Cells between the phase and the bar (the phase's right margin, see the CSS)."""

COUNTS_GAP = 1
"""Cells before the counts and before the button (their left margins)."""

BUTTON_PADDING = 2
"""Cells a compact button adds to its label (one each side)."""

CANCEL_LABEL = "Cancel compression"
"""The panel's button: it cancels the compression, not the turn (the stop key does that)."""

CANCEL_BEFORE_PROMPT = (
    "Cancel the compression only: the prompt is sent without it when it fits, and otherwise "
    "not sent. Esc stops the turn."
)
"""The button's hint while a prompt turn compresses first."""

CANCEL_COMPRESS = "Cancel /compress: the transcript stays as it was."
"""The button's hint during a ``/compress``."""


def outcome_text(outcome: CompressionComplete) -> str:
    """The one line a finished compression leaves, e.g. ``compressed 12 messages: 5,200 →
    1,100 tokens``, ``compression cancelled`` or the failure message."""
    if outcome.status == "committed":
        what = outcome.message.removesuffix(" into a summary") or "compressed"
        return terminal_safe(f"{what}: {outcome.before_tokens:,} → {outcome.after_tokens:,} tokens")
    text = outcome.message or f"compression {outcome.status}"
    stop = outcome.stop
    if outcome.status == "cancelled" and stop is not None:  # the cancel's own figures
        by = "you" if stop.issuer == "user" else f"the system: {stop.reason}"
        parts = [f"{text} by {by}"]
        if stop.closed_ms is not None:
            parts.append(f"summary connection closed in {format_ms(stop.closed_ms)}")
        if stop.rolled_back_ms is not None:
            parts.append(f"rolled back in {format_ms(stop.rolled_back_ms)}")
        text = " · ".join(parts)
    return terminal_safe(text)


def outcome_line(outcome: CompressionComplete) -> Static:
    """The transcript's line for a finished compression (``⇊`` and :func:`outcome_text`): the
    panel collapses into it live, and a resumed session shows it again in its place. A failure
    is marked as an error (a ``committed``, ``cancelled`` or ``nothing`` outcome is not)."""
    error = outcome.status not in ("committed", "cancelled", "nothing")
    return Static(
        "⇊ " + outcome_text(outcome),
        classes="note -error compression-note" if error else "note compression-note",
        markup=False,
    )


def fit_row(
    width: int, phases: list[str], counts: list[str], *, bar: bool, button: bool
) -> tuple[str, int, str]:
    """The fullest row that fits ``width`` cells: (phase text, bar width, counts text).

    Args:
        width: the panel's content width in cells.
        phases: the phase's wordings: the full one, and a shorter one (optional).
        counts: the counts' wordings, fullest first (the first that fits wins over a longer
            phase or a wider bar, see :data:`LOOKS`).
        bar: the bar is shown (not once the compression finished).
        button: the Cancel button is shown.

    Returns:
        the wording and bar width chosen (0: no bar); when nothing fits, the shortest of
        each and no bar (the counts are then cut at the panel's edge).
    """
    fixed = (COUNTS_GAP + BUTTON_PADDING + cell_len(CANCEL_LABEL)) if button else 0
    looks = [
        (phases[min(which, len(phases) - 1)], bar_width if bar else 0) for which, bar_width in LOOKS
    ]
    for count in counts:
        for phase, bar_width in dict.fromkeys(looks):  # in order, each once
            used = cell_len(phase) + PHASE_GAP + bar_width + COUNTS_GAP + cell_len(count)
            if used + fixed <= width:
                return phase, bar_width, count
    return phases[-1], 0, counts[-1]


class PanelProgress(ProgressBar):
    """The panel's progress bar: no once-a-second ETA timer (the panel shows no ETA), and its
    indeterminate animation (a repaint 15 times a second) only while a compression runs
    (:meth:`animate`): the panel is mounted, closed, all the time, and a hidden bar's timers
    still woke desk when it had nothing to do."""

    def _on_mount(self, event: events.Mount) -> None:
        # Handled before ProgressBar's on_mount, which it replaces (no default after it): the
        # bar drawn, without the ETA's timer. (Widget's own only shows scrollbars.)
        event.prevent_default()
        self.update()

    def on_resize(self, _event: events.Resize) -> None:
        """The bar rounds its fill to its width when the fill is set: a width set after it
        (the panel's wording chose another bar width) kept a fill of the old one, half a cell
        off. Round it again at the new width."""
        bar = self.query_one(Bar)
        bar.percentage = self.percentage

    def animate_waiting(self) -> None:
        """No total yet (a compression began): the indeterminate animation."""
        self.update(total=None, progress=0)

    def rest(self) -> None:
        """Nothing runs: a still, empty bar (no animation timer)."""
        self.update(total=1, progress=0)


class CompressionPanel(Horizontal, LazyChildren, can_focus=True):
    """Phase, a progress bar of summary tokens out of the budget, counts, elapsed, Cancel.

    Args:
        clock: the clock the elapsed time is measured with (tests pin it).
        id: the widget id.
    """

    DEFAULT_CSS = css_beside(__file__)

    turn_id: reactive[str | None] = reactive(None)
    """The turn whose compression is shown, or None when the panel is idle."""

    class CancelRequested(Message):
        """The person asked to cancel the compression (the panel's button)."""

        def __init__(self, turn_id: str) -> None:
            super().__init__()
            self.turn_id = turn_id
            """The turn running the compression."""

    def __init__(self, *, clock: Clock = time.monotonic, id: str | None = None) -> None:
        super().__init__(id=id)
        self._clock = clock
        self._started_at = 0.0
        self.phase = ""
        """The last phase shown."""
        self.outcome: CompressionComplete | None = None
        """The outcome, once ``compression.complete`` arrived."""
        self.before_tokens: int | None = None
        """Tokens of the transcript before, once known."""
        self.after_tokens: int | None = None
        """Tokens of the transcript after, once known."""
        self.tokens_out = 0
        """Summary tokens received so far."""
        self._phases: list[str] = [""]  # the phase's wordings, fullest first
        self._counts: list[str] = [""]  # the counts' wordings, fullest first
        self._drawn = (0, 0, 0)  # the counts last drawn: tokens in, tokens out, budget
        self._shown_elapsed = ""
        self._ticker: Timer | None = None  # redraws the elapsed time while it runs

    def children_to_make(self) -> ComposeResult:
        yield Static("", classes="phase", markup=False)
        yield PanelProgress(
            total=1,  # still while closed: begin() starts the animation
            show_eta=False,
            clock=TextualClock(get_time=self._clock),
            classes="bar",
        )
        yield Static("", classes="counts", markup=False)
        yield ClickButton(CANCEL_LABEL, id="compression-cancel", variant="warning", compact=True)

    @property
    def started_at(self) -> float:
        """Clock time the shown compression's elapsed time counts from."""
        return self._started_at

    @property
    def running(self) -> bool:
        """True while a compression is shown and has not finished."""
        return self.turn_id is not None and self.outcome is None

    def begin(
        self, turn_id: str, started_at: float | None = None, *, prompt_turn: bool = False
    ) -> None:
        """Show a new compression of ``turn_id`` (its first event arrived).

        Args:
            turn_id: the turn that runs it.
            started_at: clock time its elapsed time counts from (the running turn's start,
                so the panel and the status bar agree); now when None.
            prompt_turn: the compression runs before a prompt (its button's hint says the
                prompt is then sent without it); False for ``/compress``.
        """
        self.turn_id = turn_id
        self.outcome = None
        self.phase = ""
        self.before_tokens = self.after_tokens = None
        self.tokens_out = 0
        self._started_at = self._clock() if started_at is None else started_at
        self.make_children()
        button = self.query_one(Button)
        button.disabled = False
        button.tooltip = CANCEL_BEFORE_PROMPT if prompt_turn else CANCEL_COMPRESS
        self.query_one(PanelProgress).animate_waiting()
        self.add_class("-open")
        self.remove_class("-finished")
        self._draw(0, 0, 0)
        if self._ticker is None:  # the time goes on between events (a server counting first)
            self._ticker = self.set_interval(TICK_S, self._tick)
        self._ticker.resume()

    def show_progress(self, progress: CompressionProgressed) -> None:
        """A ``compression.progress`` event of the shown compression."""
        if progress.turn_id != self.turn_id or self.outcome is not None:
            return
        self.make_children()
        self.phase = progress.phase
        self.tokens_out = progress.tokens_out
        if progress.tokens_in:
            self.before_tokens = progress.tokens_in
        bar = self.query_one(PanelProgress)
        if progress.phase == "done":
            bar.update(total=1, progress=1)
        elif _past_budget(progress.phase, progress.tokens_out, progress.budget):
            bar.animate_waiting()  # the count measures nothing now: no fill it cannot back
        elif progress.phase == "summarize" and progress.budget > 0:
            most = progress.budget * STREAMING_FILL
            bar.update(total=progress.budget, progress=min(progress.tokens_out, most))
        self._draw(progress.tokens_in, progress.tokens_out, progress.budget)

    def show_outcome(self, outcome: CompressionComplete) -> None:
        """``compression.complete``: the outcome line; the Cancel button is done."""
        self.outcome = outcome
        if outcome.before_tokens:
            self.before_tokens = outcome.before_tokens
            self.after_tokens = outcome.after_tokens
        self.make_children()
        self.query_one(Button).disabled = True
        self.query_one(PanelProgress).rest()  # hidden from now on
        self._still()
        self.add_class("-finished")
        self.set_class(outcome.status != "committed", "-failed")
        self._phases = [outcome_text(outcome)]
        self._counts = [self._elapsed()]
        self._fit()

    def close(self) -> None:
        """Hide the panel (its outcome is then one line in the transcript)."""
        self.turn_id = None
        self._still()
        if self.has_children_made:  # never shown: no bar to still
            self.query_one(PanelProgress).rest()
        self.remove_class("-open", "-finished", "-failed")

    def _elapsed(self) -> str:
        return format_elapsed(self._clock() - self._started_at)

    def _tick(self) -> None:
        if self.running and self._elapsed() != self._shown_elapsed:
            self._draw(*self._drawn)

    def _still(self) -> None:
        if self._ticker is not None:
            self._ticker.pause()

    def _draw(self, tokens_in: int, tokens_out: int, budget: int) -> None:
        self._drawn = (tokens_in, tokens_out, budget)
        past = _past_budget(self.phase, tokens_out, budget)
        phase = PAST_BUDGET_TEXT if past else PHASE_TEXT.get(self.phase, self.phase or "starting")
        self._phases = [f"⇊ compressing · {phase}", f"⇊ {phase}"]
        summary: tuple[str, str] | None = None  # (long, short) wordings of each count
        if past:  # tokens_out is counted from the stream, an estimate: never "budget/budget"
            summary = (f"~{tokens_out:,} tokens", f"~{tokens_out:,}")
        elif self.phase == "summarize" and budget:
            summary = (f"{tokens_out:,}/{budget:,} tokens", f"{tokens_out:,}/{budget:,}")
        whole: tuple[str, str] | None = None
        if self.before_tokens and self.after_tokens is not None:
            whole = (f"{self.before_tokens:,} → {self.after_tokens:,} tokens",) * 2
        elif self.before_tokens:
            whole = (
                f"{self.before_tokens:,} tokens to summarise",
                f"{self.before_tokens:,} to summarise",
            )
        long = [count[0] for count in (summary, whole) if count is not None]
        short = [count[1] for count in (summary, whole) if count is not None]
        elapsed = self._shown_elapsed = self._elapsed()
        counts = [" · ".join([*long, elapsed])]
        if long:
            counts += [" · ".join(long), " · ".join(short), short[0]]
        self._counts = list(dict.fromkeys(counts))  # in order, each once
        self._fit()

    def _fit(self) -> None:
        """Show the fullest phase, bar and counts that fit the panel's width (see
        :func:`fit_row`)."""
        finished = self.outcome is not None
        phase, bar_width, counts = fit_row(
            self.content_region.width,
            self._phases,
            self._counts,
            bar=not finished,
            button=not finished,
        )
        self.query_one(".phase", Static).update(phase)
        self.query_one(".counts", Static).update(counts)
        bar = self.query_one(PanelProgress)
        bar.display = bar_width > 0
        if bar_width:
            bar.styles.width = bar_width

    def on_resize(self, event: events.Resize) -> None:
        """The wording is chosen for the new width. The bar rounds its fill to its width when
        it is set; set before the panel was laid out (it opens with the first progress event)
        it kept an unrounded fill: round it now, so the same progress always draws the same
        bar."""
        if not self.has_children_made:
            return
        self._fit()  # the wording that fits the new width
        bar = self.query_one(ProgressBar)
        bar.query_one(Bar).percentage = bar.percentage

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The "Cancel compression" button."""
        if event.button.id == "compression-cancel":
            event.stop()
            if self.running and self.turn_id is not None:
                self.post_message(self.CancelRequested(self.turn_id))


def _past_budget(phase: str, tokens_out: int, budget: int) -> bool:
    """True when a streaming summary's count reached its budget (it is no measure then)."""
    return phase == "summarize" and budget > 0 and tokens_out >= budget
