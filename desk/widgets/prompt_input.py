"""The prompt box: a multi-line text area where Enter sends and Ctrl+J inserts a new line.

Up on the first line recalls earlier prompts and Down on the last line comes back
(:class:`desk.prompt_history.PromptHistory`); on an empty box while prompts wait in the queue,
Up edits the last of them instead (:class:`PromptInput.EditLast`), also in the burst of typing
that queued it, before the desk listed it (the box shows the text it queued at once, and the
desk names the prompt next: :data:`LAST_QUEUED`). While the box edits a
queued prompt (:attr:`PromptInput.editing`), Enter saves the edit in the prompt's place, and
emptying the box cancels the edit; Up and Down then only move the cursor (recalling an older
prompt into the box kept "Save edit" while Enter sent the older text as a new prompt).

While a turn runs (:attr:`PromptInput.busy`) Enter does what the ``busy_input`` setting says:
queue the text as the next prompt, or steer the running turn with it (delivered at its next
model-call boundary); Ctrl+T does the other, and Ctrl+S stops the running turn and sends the
text at once ("stop and send"). The footer names what each key does now.

Tab completes a slash command (one line ``/word``, no space yet): one match becomes ``/name ``;
several complete to their common prefix and are listed in a :class:`SlashHints` just above the
box, and Tab again goes through them. With nothing to complete Tab does nothing: it never moves
the focus away from what is being typed (Shift+Tab does, on purpose). Tab on an ``@`` mention
inserts its file (:attr:`PromptInput.complete_mention`) before the keys typed after it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar, TypeAlias

from textual import events
from textual.binding import Binding, BindingType
from textual.dom import NoScreen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import TextArea

from contract.text import terminal_safe
from desk.prompt_history import PromptHistory
from desk.send_mode import LAST_QUEUED, SendMode
from desk.sends_in_flight import SendsInFlight
from desk.slash import SlashCommand
from desk.slash_completion import SlashCompletion, completing_slash
from desk.typing_drain import DrainTyping
from desk.widgets import prompt_messages
from desk.widgets._css import css_beside
from desk.widgets.key_order import run_own_binding, typed_text
from desk.widgets.slash_hints import SlashHints
from tui_gateway.settings.resolution import BusyInput


class PromptInput(TextArea):
    """Where the person types. Posts :class:`PromptInput.Submitted` on Enter.

    Enter takes the text and empties the box in the same key event, before anything else runs
    (the message it posts carries the text): keys typed after it start the next prompt, in
    order, and never join or replace the one sent. A prompt the app could not send (too long,
    the gateway closing, an unknown command) comes back with :meth:`give_back`.
    """

    DEFAULT_CSS = css_beside(__file__)

    BINDINGS: ClassVar[list[BindingType]] = [
        # Shown in the footer; the keys themselves are handled in _on_key (see there), and
        # check_action shows the ones that say what each key does now.
        Binding("enter", "submit", "Send"),
        Binding("enter", "save_edit", "Save edit"),
        Binding("enter", "send_edit", "Send"),
        Binding("enter", "busy_queue", "Queue"),
        Binding("enter", "busy_steer", "Steer"),
        Binding("ctrl+t", "other_steer", "Steer", key_display="^t"),
        Binding("ctrl+t", "other_queue", "Queue", key_display="^t"),
        Binding("ctrl+s", "stop_and_send", "Stop+send", key_display="^s"),
        Binding("ctrl+j,shift+enter", "newline", "New line", key_display="^j"),
        # Shown only while the text is a /command to complete (elsewhere Tab does nothing).
        Binding("tab", "complete_slash", "Complete", tooltip="Complete the slash command"),
    ]

    SUBMIT_KEYS: ClassVar[frozenset[str]] = frozenset({"enter"})
    """Keys that send the prompt."""
    OTHER_KEYS: ClassVar[frozenset[str]] = frozenset({"ctrl+t"})
    """Keys that, while a turn runs, do what Enter does not (steer or queue)."""
    STOP_AND_SEND_KEYS: ClassVar[frozenset[str]] = frozenset({"ctrl+s"})
    """Keys that stop the running turn and send the text at once."""
    NEWLINE_KEYS: ClassVar[frozenset[str]] = frozenset({"ctrl+j", "shift+enter"})
    """Keys that insert a line break."""
    COMPLETE_KEYS: ClassVar[frozenset[str]] = frozenset({"tab"})
    """Keys that complete a slash command (only while :func:`completing_slash`)."""
    SEND_KEYS: ClassVar[frozenset[str]] = SUBMIT_KEYS | OTHER_KEYS | STOP_AND_SEND_KEYS
    """Keys that may send a prompt (counted on their way: :mod:`desk.sends_in_flight`)."""

    Submitted: TypeAlias = prompt_messages.Submitted
    EditLast: TypeAlias = prompt_messages.EditLast
    EditCancelled: TypeAlias = prompt_messages.EditCancelled

    def __init__(
        self, *, id: str | None = None, placeholder: str = "", busy_input: BusyInput = "queue"
    ) -> None:
        super().__init__(
            id=id,
            placeholder=placeholder,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            compact=True,
        )
        self.prompt_history = PromptHistory()
        """Prompts sent from this box (Up on the first line recalls them)."""
        self.busy_input: BusyInput = busy_input
        """What Enter does while a turn runs (the other is Ctrl+T)."""
        self._busy = False
        self._sent = 0  # prompts posted and not yet handled by the screen: a turn may run
        self._has_queue = False
        self._queued_here: str | None = None  # queued by this box since the desk last listed
        self._editing: str | None = None
        self._edit_sends = False  # the prompt edited is sent by Enter (one not sent before)
        self.sends = SendsInFlight()
        """The send keys given to this box and not done with (counted by the app and the
        screen too)."""
        self.answer_key: Callable[[events.Key], bool] | None = None
        """Asked first for every key: True when the desk took it as an answer (an approval
        waiting, see :mod:`desk.approval_keys`), so it is not typed. Set by the app."""
        self.side_key: Callable[[events.Key], Awaitable[bool]] | None = None
        """Asked next: True when the sessions sidebar took the key (its Ctrl+R, and the keys
        typed behind it for the rename box), so it is not typed. Set by the app."""
        self.complete_mention: Callable[[], bool] | None = None
        """Tab with no /command to complete: insert the file of the ``@`` mention at the
        cursor, within the Tab's own handling so the keys typed after it follow the inserted
        path (True when it did). Set by the app."""
        self.console_commands: Sequence[SlashCommand] = ()
        """The gateway console's commands, completed after the desk's own (set by the app)."""
        self._hints: SlashHints | None = None
        self._completing = False  # the text is a /word Tab completes (footer shows Tab)
        self._completion = SlashCompletion()

    def render_line(self, y: int) -> Strip:
        """One row of the box. With no room for text (a window a few columns wide: the box's
        padding takes them all) the row is blank: the placeholder cannot be wrapped to no
        width at all (Textual raised ``ValueError`` and the desk ended)."""
        if self.content_size.width < 1:
            return Strip.blank(0)
        return super().render_line(y)

    @property
    def slash_hints(self) -> SlashHints:
        """The list of matching commands above the box (mounted beside the box when first used)."""
        if self._hints is None:
            self._hints = SlashHints()
            container = self.parent if isinstance(self.parent, Widget) else self.screen
            container.mount(self._hints)
        return self._hints

    async def _on_paste(self, event: events.Paste) -> None:
        """A paste goes in with its control characters made visible (``␇``, ``<U+202E>``), as
        the transcript shows them: what the box shows is what is sent. (Textual then runs
        :class:`TextArea`'s own handler, which inserts it.)"""
        event.text = terminal_safe(event.text)

    def on_drain_typing(self, message: DrainTyping) -> None:
        """A quit waits for the keys typed before it: once more behind what they posted here
        (an Enter's ``Submitted``), then up to the screen (see :mod:`desk.typing_drain`)."""
        if message.hops > 0:
            message.stop()
            self.post_message(message.next_hop())

    async def _on_key(self, event: events.Key) -> None:
        if not await self._take_key(event) and event.key in self.SEND_KEYS:
            self.sends.done()  # it sent nothing: no prompt is on its way

    async def _take_key(self, event: events.Key) -> bool:
        """Act on a key in this widget's own queue; True when it posted a prompt."""
        # Enter, Ctrl+J and Tab are handled here, in this widget's own queue, after the keys
        # typed before them: a binding (priority ones run as the key arrives at the app) could
        # read the text before the last typed characters were inserted. Tab with nothing to
        # complete is taken too, and does nothing: the app's focus_next would move the focus
        # away mid-sentence, and the keys typed after it would be lost.
        sent = False  # a send key posted a prompt: the screen counts it done (SendsInFlight)
        if await self._taken_elsewhere(event):
            event.stop()
            event.prevent_default()
        elif event.key in self.SUBMIT_KEYS:
            event.stop()
            event.prevent_default()
            sent = self._send(self._mode(), event.time, from_key=True)
        elif event.key in self.OTHER_KEYS:
            event.stop()
            event.prevent_default()
            sent = self._send(self._mode(other=True), event.time, from_key=True)
        elif event.key in self.STOP_AND_SEND_KEYS:
            event.stop()
            event.prevent_default()
            how = SendMode.STOP_AND_SEND if self.running else SendMode.SEND
            sent = self._send(how, event.time, from_key=True)
        elif event.key in self.NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.action_newline()
        elif event.key in self.COMPLETE_KEYS:
            event.stop()
            event.prevent_default()
            if completing_slash(self.text):
                self.action_complete_slash()
            elif self.complete_mention is not None:
                self.complete_mention()  # now, before the keys typed after Tab are inserted
        elif await run_own_binding(self, event):  # see desk.widgets.key_order
            event.stop()
            event.prevent_default()
        elif (text := typed_text(event)) is not None:  # a no-break space, a joiner...
            event.stop()
            event.prevent_default()
            self.replace(text, *self.selection)
        else:
            await super()._on_key(event)
        return sent

    async def _taken_elsewhere(self, event: events.Key) -> bool:
        """True when a waiting approval took the key as its answer, or the sessions sidebar
        took it (its Ctrl+R, or a key for its rename box)."""
        if self.answer_key is not None and self.answer_key(event):
            return True
        return self.side_key is not None and await self.side_key(event)

    @property
    def busy(self) -> bool:
        """True while a turn runs (set by the turns controller); the footer follows it."""
        return self._busy

    @busy.setter
    def busy(self, value: bool) -> None:
        if value != self._busy:
            self._busy = value
            with contextlib.suppress(NoScreen):  # an event that comes while the app ends
                self.refresh_bindings()

    @property
    def running(self) -> bool:
        """True while a turn runs, or may: a prompt this box sent is still on its way to the
        screen. Ctrl+T then steers and Ctrl+S stops and sends (``first⏎steer^T`` in one burst
        queued the steer: the screen had not drawn the first turn's start yet); the gateway
        decides what runs, and takes a steer or a stop with nothing running as a prompt."""
        return self._busy or self._sent > 0

    def handled(self, message: PromptInput.Submitted) -> None:
        """The screen is done with ``message`` (the turn it started, if any, is shown as
        running now): it no longer makes the box busy."""
        if message.starts_turn:
            message.starts_turn = False
            self._sent = max(0, self._sent - 1)

    @property
    def has_queue(self) -> bool:
        """Prompts wait in the queue (set by the desk as it lists them): Up on an empty box
        edits the last."""
        return self._has_queue

    @has_queue.setter
    def has_queue(self, value: bool) -> None:
        self._has_queue = value
        self._queued_here = None  # listed now: Up edits the last as the desk lists it

    @property
    def editing(self) -> str | None:
        """The key of the queued prompt the box edits (set by the desk), or None."""
        return self._editing

    @editing.setter
    def editing(self, key: str | None) -> None:
        if key != self._editing:
            self._editing = key
            self._edit_sends = False
            self.refresh_bindings()

    def edit_sends(self) -> None:
        """Enter sends the prompt edited (one not sent before): the footer says so."""
        self._edit_sends = True
        self.refresh_bindings()

    def _mode(self, *, other: bool = False) -> SendMode:
        """How Enter (or, with ``other``, Ctrl+T) sends now."""
        if self._editing is not None and not other:
            return SendMode.EDIT
        if not self.running:
            return SendMode.SEND
        steer = (self.busy_input == "steer") != other
        return SendMode.STEER if steer else SendMode.QUEUE

    def action_submit(self, key_time: float | None = None) -> None:
        """Send the text to whoever listens (the app), and remember it.

        Args:
            key_time: when the Enter key that sends it was made, or None.
        """
        self._send(self._mode(), key_time)

    def action_save_edit(self) -> None:
        """Enter while the box edits a queued prompt (e.g. clicked in the footer)."""
        self.action_submit()

    def action_send_edit(self) -> None:
        """Enter while the box edits a prompt not sent when desk last closed: sends it."""
        self.action_submit()

    def action_busy_queue(self) -> None:
        """Enter while a turn runs (``busy_input = "queue"``), e.g. clicked in the footer."""
        self.action_submit()

    def action_busy_steer(self) -> None:
        """Enter while a turn runs (``busy_input = "steer"``)."""
        self.action_submit()

    def action_other_steer(self) -> None:
        """Ctrl+T while a turn runs and Enter queues: steer instead."""
        self._send(self._mode(other=True))

    def action_other_queue(self) -> None:
        """Ctrl+T while a turn runs and Enter steers: queue instead."""
        self._send(self._mode(other=True))

    def action_stop_and_send(self) -> None:
        """Ctrl+S: stop the running turn and send the text at once."""
        self._send(SendMode.STOP_AND_SEND if self.running else SendMode.SEND)

    def _send(
        self, how: SendMode, key_time: float | None = None, *, from_key: bool = False
    ) -> bool:
        """Take the text, empty the box and post it, all within this key's handling; False
        when there was nothing to send. ``from_key``: a send key given to the box sends it."""
        text = self.text
        if not text.strip():
            if self._editing is None:
                return False
            key, self.editing = self._editing, None  # Enter on the emptied box: given up
            self.post_message(self.EditCancelled(key))
            return True

        if self._hints is not None:
            self._hints.hide()  # the command is sent; an edit shows it again
        editing, self.editing = self._editing, None  # emptying the box below is no cancel
        if how is not SendMode.EDIT and editing is not None:  # sent as a prompt of its own
            self.post_message(self.EditCancelled(editing))
            editing = None
        self.prompt_history.add(text)
        if how is SendMode.QUEUE:
            self._queued_here = text  # Up right behind it edits it (see action_cursor_up)
        self.clear()
        starts_turn = how is not SendMode.EDIT and not text.lstrip().startswith("/")
        self._sent += starts_turn
        submitted = self.Submitted(
            text, how, key_time, editing, in_flight=from_key, starts_turn=starts_turn
        )
        self.post_message(submitted)
        return True

    def give_back(self, text: str) -> None:
        """A prompt the app could not send: back in the box when nothing was typed since;
        otherwise what was typed stays and the text waits in the history (Up recalls it)."""
        if self.text.strip():
            return
        self.text = text
        self.move_cursor(self.document.end)

    # -- slash completion ---------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer Tab (footer, help, the key itself) only while a /command is being typed, and
        name what Enter, Ctrl+T and Ctrl+S do now (Ctrl+S only while a turn runs)."""
        if action == "complete_slash":
            return completing_slash(self.text)
        steering = self.busy_input == "steer"
        editing = self._editing is not None
        shown = {
            "submit": not self._busy and not editing,
            "save_edit": editing and not self._edit_sends,
            "send_edit": editing and self._edit_sends,
            "busy_queue": self._busy and not steering and not editing,
            "busy_steer": self._busy and steering and not editing,
            "other_steer": self._busy and not steering,
            "other_queue": self._busy and steering,
            "stop_and_send": self._busy,
        }
        if action in shown:
            return shown[action]
        return super().check_action(action, parameters)

    def action_complete_slash(self) -> None:
        """Tab on ``/word``: complete the command name, list the candidates, or cycle them
        (:mod:`desk.slash_completion`)."""
        completed = self._completion.tab(self.text, self.console_commands)
        if completed is not None:
            if completed != self.text:
                self.text = completed
            self.move_cursor(self.document.end)
        self._show_hints()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """Keep the hint list (and Tab in the footer) in step with the text."""
        if event.text_area is not self:
            return
        self._completion.edited(self.text)
        completing = completing_slash(self.text)
        if completing != self._completing:
            self._completing = completing
            self.refresh_bindings()
        self._show_hints()

    def on_resize(self, event: events.Resize) -> None:
        """The box grew or shrank: the hint list moves with it."""
        if self._hints is not None and self._hints.display:
            self._hints.place_above(self._hint_anchor)

    def _show_hints(self) -> None:
        """Show what fits the text now: the Tab message, the candidates, or the usage."""
        hints = self._completion.hints(self.text, self.console_commands)
        if hints.message is not None:
            self.slash_hints.show_message(hints.message)
        elif hints.commands:
            self.slash_hints.show_commands(hints.commands, hints.selected)
        else:
            if self._hints is not None:
                self._hints.hide()
            return
        self.slash_hints.place_above(self._hint_anchor)

    @property
    def _hint_anchor(self) -> Widget:
        """The list sits above the box's row (the box's own parent), or above the box."""
        parent = self.parent
        if isinstance(parent, Widget) and parent is not self.screen:
            return parent
        return self

    def on_unmount(self) -> None:
        """Take the hint list away with the box."""
        if self._hints is not None:
            self._hints.remove()

    def action_cursor_up(self, select: bool = False) -> None:
        """Up: on an empty box with prompts queued edit the last of them; on the first
        (visual) line recall the previous prompt; else move the cursor."""
        if not select and not self.text and self._editing is None:
            if self._queued_here is not None:  # sent in this burst: not listed yet
                self.text = self._queued_here
                self.move_cursor(self.document.end)
                self.editing = LAST_QUEUED  # named by the desk on EditLast, before Enter goes
                self.post_message(self.EditLast(loaded=True))
                return
            if self._has_queue:
                self.post_message(self.EditLast())
                return
        if (
            not select
            and self._editing is None  # an edit stays the edit: Enter saves what it shows
            and self.navigator.is_first_wrapped_line(self.cursor_location)
        ):
            recalled = self.prompt_history.older(self.text)
            if recalled is not None:
                self._show_recalled(recalled)
                return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        """Down: on the last line while browsing history show the next prompt (then the draft)."""
        if (
            not select
            and self._editing is None
            and self.prompt_history.browsing
            and self.navigator.is_last_wrapped_line(self.cursor_location)
        ):
            recalled = self.prompt_history.newer()
            if recalled is not None:
                self._show_recalled(recalled)
                return
        super().action_cursor_down(select)

    def _show_recalled(self, text: str) -> None:
        self.text = text
        self.move_cursor(self.document.end)

    def action_newline(self) -> None:
        """Insert a line break at the cursor."""
        self.insert("\n")

    def action_delete_to_start_of_line(self) -> None:
        """Ctrl+U: delete from the cursor to the start of its line as typed (Textual's stops
        at the wrapped row's start: a long pasted line took one press per row); at a line's
        start, join it to the line above."""
        row, column = cursor = self.selection.end
        if column == 0 or not self.selection.is_empty:
            super().action_delete_to_start_of_line()
            return
        self.delete((row, 0), cursor)

    async def action_delete_to_end_of_line_or_delete_line(self) -> None:
        """Ctrl+K: delete from the cursor to the end of its line as typed; at its end, join
        the next line to it; an empty line goes."""
        row, column = cursor = self.selection.end
        end = len(self.document.get_line(row))
        if column == end or not self.selection.is_empty:
            await super().action_delete_to_end_of_line_or_delete_line()
            return
        self.delete(cursor, (row, end))
