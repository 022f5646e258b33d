"""The status bar: the running turn's state and elapsed time, queued prompts, what keeps
prompts from the model server (one line: unreachable, a refused key, a model it does not list),
the model, the server and how full the context window is."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from agent.usage import TokenUsage
from contract.text import terminal_safe
from desk.config import ConnectionInfo
from desk.receipts import format_elapsed
from desk.status_fit import Part, cut, fit, joined
from desk.widgets._css import css_beside
from desk.widgets.painted_label import PaintedLabel

Clock = Callable[[], float]
"""Returns seconds (``time.monotonic`` or a test's fake clock)."""

STATE_ICONS: dict[str, str] = {
    "idle": "○",
    "waiting": "◌",
    "streaming": "●",
    "retrying": "↻",
    "tool": "⚙",
    "stopping": "■",
    "compressing": "⇊",
}
"""Glyph shown before each turn state."""

TICK_S = 0.1
"""How often the elapsed time is redrawn while a turn runs, in seconds."""


RUNNING_STYLE = "$text-accent bold"
"""How the turn's side reads while a turn runs (theme variables resolve when drawn)."""

MODEL_WIDTH = 28
"""Longest model name shown, in characters (longer ones are cut with ``…``)."""

APPROVAL_TEXT = "waiting for your approval"
"""After the running turn's state while one of its tool calls (or a child agent's) waits for
the person's answer (the idle line's wording is ``1 agent waiting for approval``)."""

APPROVAL_STEPS: tuple[tuple[int, str], ...] = ((60, "waiting for approval"), (25, "approval"))
"""How :data:`APPROVAL_TEXT` gives way on a narrow line: late, since the person has to act."""


def server_label(connection: ConnectionInfo) -> str:
    """``demo model`` for the built-in demo, else the server's ``host:port``."""
    if connection.is_demo:
        return "demo model"
    parts = urlsplit(connection.base_url)
    return parts.netloc or connection.base_url


def context_percent(used: int | None, window: int | None) -> int | None:
    """Per cent of the context window the last prompt used, or None when not known yet."""
    if not window:
        return None
    if used is None:  # nothing sent yet
        return 0
    return max(0, round(100 * used / window))


def short_count(tokens: int) -> str:
    """Tokens for the status bar: ``950``, ``9,950``, ``12.3k``, ``1.2M``."""
    if tokens < 10_000:
        return f"{tokens:,}"
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k"
    return f"{tokens / 1_000_000:.1f}M"


def usage_text(usage: TokenUsage | None) -> str:
    """The session's tokens for the status bar: ``Σ 12.3k in 345 out`` (``~`` before the
    figures when part of them is desk's estimate); "" before the first request."""
    if usage is None or not usage.requests:
        return ""
    mark = "~" if usage.estimated else ""
    prompt, completion = short_count(usage.prompt_tokens), short_count(usage.completion_tokens)
    return f"Σ {mark}{prompt} in {mark}{completion} out"


def server_parts(
    connection: ConnectionInfo,
    model: str = "",
    percent: int | None = None,
    window: str = "",
    usage: str = "",
) -> list[Part]:
    """The right-hand side's items (see :func:`server_text`), each with how it gives way on a
    narrow line (:mod:`desk.status_fit`): the window's source first, then the session's
    tokens, the model shortened, the server, then the model; the context gauge stays."""
    name = model or connection.model or "no model yet"
    if len(name) > MODEL_WIDTH:
        name = name[: MODEL_WIDTH - 1] + "…"
    gauge = "ctx –" if percent is None else f"ctx {percent}%"
    return [
        Part(terminal_safe(name), ((75, cut(terminal_safe(name), 12)), (30, ""))),
        Part(terminal_safe(server_label(connection)), ((70, ""),)),
        Part(gauge),
        Part(terminal_safe(usage), ((80, ""),)),
        Part(terminal_safe(window), ((90, ""),)),
    ]


def server_text(
    connection: ConnectionInfo,
    model: str = "",
    percent: int | None = None,
    window: str = "",
    usage: str = "",
) -> str:
    """The right-hand side: ``"<model> · <host:port or demo model> · ctx <n>%"``, the session's
    tokens once it sent a request (``Σ 12.3k in 345 out``), then where the window's figure came
    from once the gateway said (``window 2,048 from the server``)."""
    return joined(server_parts(connection, model, percent, window, usage))


class StatusBar(Horizontal):
    """One line at the bottom: turn state on the left, the model server on the right.

    The app sets the reactive attributes; the bar redraws itself and ticks the elapsed time
    of a running turn with its own timer.

    Args:
        connection: the model server shown on the right.
        clock: the clock the elapsed time is measured with.
    """

    DEFAULT_CSS = css_beside(__file__)

    state: reactive[str] = reactive("idle")
    """``idle``, ``waiting``, ``streaming``, ``retrying``, ``compressing`` or ``stopping``."""
    detail: reactive[str] = reactive("")
    """Short text after the state (e.g. the retry reason); :data:`APPROVAL_TEXT` shows in its
    place while the person's approval is awaited (:attr:`asks_approval`)."""
    started_at: reactive[float | None] = reactive(None)
    """Clock time when the running turn started, or None."""
    queued: reactive[int] = reactive(0)
    """Prompts waiting behind the running turn."""
    agents: reactive[int] = reactive(0)
    """Child agents running while no turn does (background ones that outlived their turn)."""
    agents_waiting: reactive[int] = reactive(0)
    """Of :attr:`agents`, those waiting for an approval (the person has to act)."""
    approvals: reactive[int] = reactive(0)
    """The running turn's own tool calls waiting for the person's approval."""
    notice: reactive[str] = reactive("")
    """Overrides the left side when set (e.g. ``stopping 1 turn…``)."""
    mcp: reactive[str] = reactive("")
    """The MCP servers that failed (``mcp: NAME failed: ...``), after the state; "" for none."""
    server_problem: reactive[str] = reactive("")
    """Why prompts cannot reach the model server now (one line), after the state; "" for none."""
    model: reactive[str] = reactive("")
    """The model shown ("" for the connection's)."""
    context_window: reactive[int | None] = reactive(None)
    """The server's context window in tokens, once known."""
    context_used: reactive[int | None] = reactive(None)
    """What the next request carries before its prompt (tokens), once known."""
    context_pending: reactive[int] = reactive(0)
    """Tokens of the prompt being typed and of the queued prompts (they are sent next)."""
    window_note: reactive[str] = reactive("")
    """Where the window's figure came from, as the gateway says it ("" until it does)."""
    usage: reactive[TokenUsage | None] = reactive(None)
    """The shown session's model requests summed, as the gateway counted them (None: none)."""
    saving: reactive[str] = reactive("")
    """Shown after the state while writes wait for the database ("" when all is saved)."""

    def __init__(
        self, connection: ConnectionInfo, *, clock: Clock = time.monotonic, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.connection = connection
        """The model server shown on the right."""
        self._clock = clock
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield PaintedLabel("", classes="turn")
        yield Static(self.server_side_text(), classes="server", markup=False)

    def on_mount(self) -> None:
        self._timer = self.set_interval(TICK_S, self._redraw, pause=True)
        self._redraw()

    def turn_text(self) -> str:
        """The left-hand side as it should read now (all of it: a narrow line shows less,
        :meth:`fitted`)."""
        return joined(self._turn_parts())

    def _turn_parts(self) -> list[Part]:
        """The left-hand side's items, each with how it gives way (:mod:`desk.status_fit`):
        the failed MCP servers and the retry detail first, the queue count, then the turn's
        elapsed time; the state's glyph, a notice and the saving warning stay."""
        if self.notice:  # a quit that waits for the database says so too
            extra = f" · ⚠ {self.saving}" if self.saving else ""
            return [Part(terminal_safe(self.notice + extra))]
        icon = STATE_ICONS.get(self.state, "·")
        state = f"{icon} {self.state}"
        steps: tuple[tuple[int, str], ...] = ((5, icon),)
        if self.state != "idle" and self.started_at is not None:
            steps = ((20, state), *steps)
            state += f" {format_elapsed(self._clock() - self.started_at)}"
        problem = terminal_safe(self.server_problem)
        mcp = terminal_safe(self.mcp)
        detail = Part(terminal_safe(self.detail), ((68, ""),))
        if self.asks_approval:
            detail = Part(APPROVAL_TEXT, APPROVAL_STEPS)
        return [
            Part(state, steps),
            detail,
            Part(f"{self.queued} queued" if self.queued else "", ((45, ""),)),
            Part(self._agents_text(), ((45, ""),)),
            Part(terminal_safe(f"⚠ {self.saving}") if self.saving else ""),
            Part(problem, ((35, cut(problem, 28)),)),
            Part(mcp, ((65, cut(mcp, 20)), (55, ""))),
        ]

    @property
    def asks_approval(self) -> bool:
        """True while a turn runs (not being stopped) and the person's answer is awaited: one
        of its tool calls, or a child agent's, waits for an approval."""
        running = self.state not in ("idle", "stopping")
        return running and bool(self.approvals or self.agents_waiting)

    def _agents_text(self) -> str:
        """``1 agent running`` while idle with background children (Esc stops them);
        ``1 agent waiting for approval`` when they wait for the person (Shift+Tab reaches the
        card); ``3 agents running, 1 waiting for approval`` for both."""
        if self.state != "idle" or not self.agents:
            return ""
        waiting = min(self.agents_waiting, self.agents)
        if waiting == self.agents:
            return f"{waiting} agent{'s' if waiting != 1 else ''} waiting for approval"
        running = f"{self.agents} agent{'s' if self.agents != 1 else ''} running"
        return f"{running}, {waiting} waiting for approval" if waiting else running

    def server_side_text(self) -> str:
        """The right-hand side as it should read now (all of it: a narrow line shows less,
        :meth:`fitted`)."""
        return joined(self._server_parts())

    def _server_parts(self) -> list[Part]:
        percent = context_percent(self._context_total(), self.context_window)
        used = usage_text(self.usage)
        return server_parts(self.connection, self.model, percent, self.window_note, used)

    def fitted(self) -> tuple[str, str]:
        """The two sides as the bar's width shows them: lower-priority items give way on a
        narrow line, so the sides never overlap (:func:`desk.status_fit.fit`)."""
        return fit(self._turn_parts(), self._server_parts(), self.content_size.width)

    def _context_total(self) -> int | None:
        if self.context_used is None and not self.context_pending:
            return None
        return (self.context_used or 0) + self.context_pending

    def refresh_server(self) -> None:
        """Redraw the right-hand side (after :attr:`connection` was replaced)."""
        self._redraw_server()

    def _redraw_server(self) -> None:
        self._redraw()  # the two sides share the line: the left gives room or takes it
        percent = context_percent(self._context_total(), self.context_window) or 0
        self.set_class(percent >= 80, "-context-full")

    def on_resize(self) -> None:
        """A new width: the sides fit it again."""
        self._redraw()

    def watch_model(self) -> None:
        self._redraw_server()

    def watch_context_window(self) -> None:
        self._redraw_server()

    def watch_context_used(self) -> None:
        self._redraw_server()

    def watch_context_pending(self) -> None:
        self._redraw_server()

    def watch_window_note(self) -> None:
        self._redraw_server()

    def watch_usage(self) -> None:
        self._redraw_server()

    def _turn_label(self) -> PaintedLabel | None:
        return next(self.query_children(".turn").results(PaintedLabel), None)

    async def wait_painted(self) -> None:
        """Return once a frame showing the turn's side as it reads now has been drawn (at once
        when it has, or when the bar is not composed). Cancelled with its caller."""
        label = self._turn_label()
        if label is not None:
            await label.wait_painted()

    def _redraw(self) -> None:
        label = self._turn_label()
        if label is None:
            return  # not composed yet; on_mount draws
        left, right = self.fitted()
        server = next(self.query_children(".server").results(Static), None)
        if server is not None and server.content != right:
            # Its width is its text's: a layout of the screen only when that width changes
            # (a figure that ticks at a turn's end, 12% -> 13%, asked for one: 5-7 ms of the
            # UI thread in the frame that says "idle")
            server.update(right, layout=cell_len(right) != cell_len(str(server.content)))
        # Emphasis in the label's own text, not a class of the bar: a class change restyled
        # the bar and its parts (about a millisecond of the UI thread) in the frame that shows
        # a turn's end.
        label.show(left, style=RUNNING_STYLE if self.state != "idle" else "")
        ticking = self.state != "idle" and self.started_at is not None and not self.notice
        if self._timer is not None:
            if ticking:
                self._timer.resume()
            else:
                self._timer.pause()

    def show_turn(self, state: str, *, detail: str = "", started_at: float | None = None) -> None:
        """Set :attr:`state`, :attr:`detail` and :attr:`started_at` together, redrawn once
        (one by one, each change redrew the bar)."""
        changed = (state, detail, started_at) != (self.state, self.detail, self.started_at)
        self.set_reactive(StatusBar.state, state)
        self.set_reactive(StatusBar.detail, detail)
        self.set_reactive(StatusBar.started_at, started_at)
        if changed:
            self._redraw()

    def watch_state(self) -> None:
        self._redraw()

    def watch_detail(self) -> None:
        self._redraw()

    def watch_started_at(self) -> None:
        self._redraw()

    def watch_queued(self) -> None:
        self._redraw()

    def watch_agents(self) -> None:
        self._redraw()

    def watch_agents_waiting(self) -> None:
        self._redraw()

    def watch_approvals(self) -> None:
        self._redraw()

    def watch_notice(self) -> None:
        self._redraw()

    def watch_saving(self) -> None:
        self._redraw()

    def watch_mcp(self) -> None:
        self._redraw()

    def watch_server_problem(self) -> None:
        self._redraw()
        self.set_class(bool(self.server_problem), "-server-problem")
