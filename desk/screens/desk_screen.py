"""The desk's main screen: what its widgets ask.

The app composes the widgets onto it (:meth:`desk.screens.desk_widgets.DeskWidgets.layout`) and
mounts the session's view at the top. The screen hands what these widgets post to the controller
of that concern: the prompt box's text (a command, a prompt for the model, or a queued prompt's
new text), the Stop button, the queue's ✎ / ✕ / ↻, the panels' commands and Cancel buttons, the
sidebar's open / rename / delete, and where the focus is (the console's stop keys depend on it).

It also keeps the typing in the prompt box: a printable key that reaches the screen (the
focused widget took no text and has no binding for it: a tool card, a button, the sessions
list) goes to the prompt box, which takes the focus back at once, or to the console's command
line when the focus is inside the console panel. The keys typed in the same burst behind it,
which went to the old focus, follow it there (the sessions list binds no letter: its Ctrl+R and
Delete type nothing). Nothing typed is lost to a stray focus.
"""

from __future__ import annotations

from textual import events
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Input, TextArea

from agent.context.instructions import INIT_PROMPT
from agent.stops import Surface
from desk.controllers import DeskControllers
from desk.controllers.view import ShownSession
from desk.screens.desk_widgets import DeskWidgets
from desk.send_mode import SendMode
from desk.slash import parse_slash, unknown_command
from desk.typing_drain import DrainTyping
from desk.widgets.compression_panel import CompressionPanel
from desk.widgets.console_panel import ConsolePanel
from desk.widgets.prompt_input import PromptInput
from desk.widgets.queued_item import QueuedItem
from desk.widgets.sessions_sidebar import SessionsSidebar

EARLY_NOTICE = "your prompt is sent once desk is ready"
"""The status bar's line while an Enter typed during the start waits for the session."""


class DeskScreen(Screen[None]):
    """The main screen.

    Args:
        widgets: the widgets on it.
        controllers: the controllers its widgets' messages go to.
    """

    AUTO_FOCUS = "#prompt"
    """The prompt box has the focus from the first frame: keys typed while the desk starts
    (they wait in the terminal) go there, not to the first focusable widget."""

    def __init__(self, widgets: DeskWidgets, controllers: DeskControllers) -> None:
        super().__init__(id="_default")
        self._widgets = widgets
        self._controllers = controllers
        self._early: list[PromptInput.Submitted] | None = []  # None once the desk is ready
        self._quit_waits = False  # a quit waits for the early prompts to be sent
        widgets.sidebar.type_text = self.type_where_text_goes
        widgets.sidebar.follow_focus = self.follow_focus

    async def desk_ready(self) -> None:
        """The session's view is up: send, in order, what Enter sent while the desk started
        (keys typed before the app ran wait in the terminal and arrive as its first keys),
        then the stop keys pressed meanwhile (each stops the prompt of an Enter before it)."""
        early, self._early = self._early or [], None
        if early:
            self._widgets.status.notice = ""
        for message in early:
            await self.on_prompt_input_submitted(message)
        view = self._controllers.sessions.view
        if view is not None:  # and the stop keys pressed meanwhile, after those Enters
            self._controllers.stops.send_early(view.session_id)
        if self._quit_waits:
            self._controllers.quit.typing_in()

    # -- the prompt box ------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """A printable key nobody took: type it where text goes (see the module docstring)."""
        if self.type_where_text_goes(event):
            event.stop()
            event.prevent_default()

    def type_where_text_goes(self, event: events.Key) -> bool:
        """Type a printable key where text goes: the focused text field, else the prompt box
        (or the console's command line), which takes the focus at once. True when it typed
        it; False for a key that types nothing, a field that takes no text now, or a key the
        focused widget binds. Also called by the sessions list, in its own queue, so a word
        typed there lands before the keys behind it act (Ctrl+R)."""
        if not event.is_printable or event.character is None:
            return False
        focused = self.focused
        target: Input | TextArea | None
        if isinstance(focused, (Input, TextArea)):
            if focused.disabled or (isinstance(focused, TextArea) and focused.read_only):
                return False  # it takes no text now (a key that reaches here was refused)
            # It takes every printable key it is given: this one went to the widget that had
            # the focus before (a burst typed while an earlier key of it moved the focus).
            target = focused
        else:
            active = self.active_bindings.get(event.key)
            if active is not None and active.enabled:
                return False  # the focused widget's own key
            target = self._text_home(focused)
            if target is None:
                return False
            # At once, not later: the keys of the burst behind this one must see the box
            # focused, or a key the old focus binds would act.
            self.set_focus(target)
        if isinstance(target, Input):
            target.insert_text_at_cursor(event.character)
        else:
            target.insert(event.character)
        return True

    def follow_focus(self, event: events.Key) -> bool:
        """Hand ``event``, a key that reached a widget the focus has left since (the sessions
        list, behind a letter of its burst that went to the prompt box), to the widget focused
        now, behind the keys already on their way there; True when it did (False: no focus)."""
        focused = self.focused
        if focused is None:
            return False
        key = events.Key(event.key, event.character)
        key.time = event.time  # the moment it was typed (a stop counts from it)
        prompt = self._widgets.prompt
        if focused is prompt and event.key in prompt.SEND_KEYS:
            prompt.sends.given()  # on its way to the box, as the app counts one it forwards
        focused._forward_event(key)  # forwarded: back at the app, it is not a new key
        return True

    def _text_home(self, focused: Widget | None) -> Input | TextArea | None:
        """Where a key typed at ``focused`` goes: the console's command line from inside the
        console panel, else the prompt box (None when it is disabled: the desk is quitting)."""
        node: Widget | None = focused
        while node is not None:
            if isinstance(node, ConsolePanel) and node.is_open:
                return node.input
            parent = node.parent
            node = parent if isinstance(parent, Widget) else None
        prompt = self._widgets.prompt
        return None if prompt.disabled else prompt

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        """Run a command, or send the prompt: while a turn runs the gateway queues it, the
        running turn takes it as a steer, or it stops the turn and runs at once (``how``)."""
        try:
            await self._take_prompt(message)
        finally:
            self._widgets.prompt.handled(message)  # its turn (if any) is shown running now
            if message.in_flight:  # its key is done with: the prompt reached the gateway
                message.in_flight = False
                self._widgets.prompt.sends.done()

    async def _take_prompt(self, message: PromptInput.Submitted) -> None:
        c = self._controllers
        view = c.sessions.view
        if view is None:
            if self._early is not None:  # the desk is starting: it goes once it is ready
                self._early.append(message)
                self._widgets.status.notice = EARLY_NOTICE
            else:
                self._widgets.prompt.give_back(message.text)
            return
        text = message.text.lstrip("\n").rstrip()  # stray blank lines around it mean nothing
        if c.quit.started and not c.quit.takes_prompts:
            self._widgets.prompt.give_back(message.text)
        elif text and message.how is SendMode.EDIT and message.editing is not None:
            await c.queue.save_edit(view, message.editing, text)
            return
        elif text:
            view.transcript.follow()  # what is sent, and its answer, come into view
            await self._submitted(view, text, message.how, message.key_time)
        await c.queue.sync(view)
        c.gauge.count_pending(view)

    @property
    def ready(self) -> bool:
        """True once the session is up (the prompts sent during the start then go; read by
        the terminal's input thread at Ctrl+Q too)."""
        return self._early is None

    @property
    def prompts_waiting(self) -> bool:
        """True while prompts sent during the start wait for the desk to be ready."""
        return bool(self._early)

    def on_drain_typing(self, message: DrainTyping) -> None:
        """The keys typed before a quit were handled (see :mod:`desk.typing_drain`); prompts
        sent while the desk starts go first, once it is ready. It ends here: bubbled on to the
        app, it was posted to the focus again, round and round until the desk exited."""
        message.stop()
        if message.hops > 0:  # it came here with the keys: after those forwarded to the box
            self._widgets.prompt.post_message(message.next_hop())
            return
        self._widgets.prompt.sends.settle()  # what was typed before the quit was handled
        if self._early:
            self._quit_waits = True
        else:
            self._controllers.quit.typing_in()

    async def on_prompt_input_edit_last(self, message: PromptInput.EditLast) -> None:
        """Up on an empty prompt box with prompts queued: edit the last of them."""
        view = self._controllers.sessions.view
        if view is not None:
            self._controllers.queue.edit_last(view, loaded=message.loaded)

    async def on_prompt_input_edit_cancelled(self, message: PromptInput.EditCancelled) -> None:
        """The prompt box was emptied (or sent its text as a new prompt) while it edited."""
        view = self._controllers.sessions.view
        if view is not None:
            await self._controllers.queue.edit_cancelled(view)

    async def on_queued_item_chosen(self, message: QueuedItem.Chosen) -> None:
        """✎, ✕ or ↻ on a line of the queue."""
        message.stop()
        view = self._controllers.sessions.view
        if view is not None:
            await self._controllers.queue.chosen(view, message.key, message.action)

    async def _submitted(
        self, view: ShownSession, text: str, how: SendMode, key_time: float | None
    ) -> None:
        """Send what the prompt box took (it is empty already: keys typed since are the next
        prompt's); what cannot go comes back to the box (:meth:`PromptInput.give_back`)."""
        c, prompt = self._controllers, self._widgets.prompt
        if await self._run_command(view, text, key_time):
            return
        unknown = unknown_command(text)
        if unknown is not None:  # a mistyped command is never sent to the model
            prompt.give_back(text)
            await view.add_note(f"unknown command {unknown} — F1 lists the commands", error=True)
            return
        if how is SendMode.STEER:
            steered = c.turns.steer(view, text)
            if steered is None:
                prompt.give_back(text)
            else:
                await c.turns.show_steer(view, text, steered)
            return
        if how is SendMode.STOP_AND_SEND:
            result = c.turns.stop_and_send(view, text, key_time)
        else:
            result = c.turns.send(view, text, key_time)
        if result is None:
            prompt.give_back(text)
        else:
            await c.turns.show_sent(view, text, result)

    async def _run_command(
        self, view: ShownSession, text: str, key_time: float | None = None
    ) -> bool:
        """Run ``text`` when it is a command (the desk's, or the console's); True if it was.
        ``key_time``: when its Enter was made (a stop key made after it cancels a console
        command, :meth:`ConsoleController.run_typed`)."""
        c = self._controllers
        parsed = parse_slash(text)
        name, arg = parsed if parsed is not None else ("", "")
        if name == "theme":
            if arg:
                c.themes.choose(arg)
            else:
                await view.add_note("themes: " + c.themes.listing(), scroll=True)
        elif name == "export":
            await c.export.export(view, arg)
        elif name == "compress":
            await c.compression.start(view, arg or None)
        elif name == "undo":
            await c.checkpoints.undo(view)
        elif name == "diff":
            await c.checkpoints.diff(view)
        elif name == "init":  # a prompt: the model looks, write_file asks before it writes
            sent = c.turns.send(view, INIT_PROMPT, None)
            if sent is not None:
                await c.turns.show_sent(view, INIT_PROMPT, sent)
        else:
            return await c.console.run_typed(view, text, key_time)  # console commands, /stop
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """The Stop button."""
        view = self._controllers.sessions.view
        if event.button.id == "stop" and view is not None:
            event.stop()
            self._controllers.turns.stop(view, Surface.DESK_BUTTON)
            self._widgets.prompt.focus()

    # -- the panels and the sidebar ------------------------------------------------------------

    def on_console_panel_command_entered(self, message: ConsolePanel.CommandEntered) -> None:
        """A line typed in the console panel (or an empty Enter: the console notes it)."""
        view = self._controllers.sessions.view
        self._controllers.console.entered(view, message.line, message.key_time)

    def on_console_panel_cancel_requested(self, message: ConsolePanel.CancelRequested) -> None:
        """The console panel's Cancel button (or Esc in the panel)."""
        self._controllers.console.cancel_all()

    def on_compression_panel_cancel_requested(
        self, message: CompressionPanel.CancelRequested
    ) -> None:
        """The compression panel's "Cancel compression" button."""
        message.stop()
        view = self._controllers.sessions.view
        if view is not None:
            self._controllers.compression.cancel_requested(view)

    async def on_sessions_sidebar_open_requested(
        self, message: SessionsSidebar.OpenRequested
    ) -> None:
        """Enter on a session in the sidebar."""
        await self._controllers.sessions.open_requested(message.session_id)

    async def on_sessions_sidebar_rename_requested(
        self, message: SessionsSidebar.RenameRequested
    ) -> None:
        """A new title typed in the sidebar."""
        await self._controllers.sessions.rename_requested(message.session_id, message.title)

    def on_sessions_sidebar_delete_requested(
        self, message: SessionsSidebar.DeleteRequested
    ) -> None:
        """``d`` on a session in the sidebar."""
        self._controllers.sessions.delete_requested(message.session_id, message.title)

    def on_resize(self, event: events.Resize) -> None:
        """A new terminal size: the queue takes its share of the new height."""
        self._widgets.queue.fit_screen(event.size.height)

    # -- where the focus is (read by the input thread for the stop keys) -----------------------

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Track whether the focus is inside the console panel."""
        # The screen's focus now, not the event's widget: focus and blur events of two
        # widgets may arrive in either order.
        self._controllers.console.focus_moved(self.focused)

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        """See :meth:`on_descendant_focus`."""
        self._controllers.console.focus_moved(self.focused)

    def on_screen_suspend(self, event: events.ScreenSuspend) -> None:
        """A screen (help, a confirmation) covers this one: the console has no focus now."""
        self._controllers.console.focus_moved(None)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """This screen is on top again: its focus counts again."""
        self._controllers.console.focus_moved(self.focused)
