"""What the desk notes of each key and mouse press before Textual routes it.

- Each key: counted once (the input thread compares at Ctrl+Q whether the app has seen every
  key it posted; a key no widget took bubbles back up to the app, and counted again it made the
  app look ahead of the keys still on their way), its time kept for the stop it may make (a
  stop counts from the key), Enter and the other send keys announced to the prompt box's sends
  in flight, and the delete confirmation offered the key before it is routed
  (:meth:`ConfirmDelete.take_key`; a stop key of a running turn goes on to stop it), and an
  Enter in the console's command line announced to the stop keys (a stop key after it is for
  the command it sends).
- Each mouse press: where it landed (a button takes a release in the same place, see
  :mod:`desk.widgets.click_button`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual import events
from textual.app import App

from desk.controllers.stop_keys import StopKeysController
from desk.screens.confirm_delete import ConfirmDelete
from desk.widgets.click_button import ButtonPresses, widget_under
from desk.widgets.console_input import ConsoleInput
from desk.widgets.prompt_input import PromptInput


class InputNotes:
    """The app's notes of keys and presses (UI thread; :attr:`keys_seen` is read by any).

    Args:
        app: the desk app.
        prompt: its prompt box.
        stops: its stop keys.
        running_turn: the turn shown as running, if any.
    """

    def __init__(
        self,
        app: App[int],
        prompt: PromptInput,
        stops: StopKeysController,
        running_turn: Callable[[], str | None],
    ) -> None:
        self._app = app
        self._prompt = prompt
        self._stops = stops
        self._running_turn = running_turn
        self.keys_seen = 0
        """Keys that reached the app's ``on_event``."""
        self.keys_done = 0
        """Keys the app has handled (its bindings' actions run, or routed on)."""
        self.presses = ButtonPresses()
        """Where mouse presses landed."""
        self._popup_key_at = 0  # keys posted up to the last Ctrl+P the input thread read

    def popup_key_read(self, keys_posted: int) -> None:
        """The input thread read Ctrl+P after posting ``keys_posted`` keys (any thread)."""
        self._popup_key_at = keys_posted + 1

    def popup_key_pending(self) -> bool:
        """True until the app has handled the last Ctrl+P read (the command palette is on its
        screen stack then): the palette takes an Esc read meanwhile (any thread). Not only
        until the app has seen it: between the two the input thread may read the Esc."""
        return self.keys_done < self._popup_key_at

    async def route_key(
        self,
        event: events.Key,
        taken: Callable[[events.Key], bool],
        route: Callable[[events.Event], Awaitable[None]],
    ) -> None:
        """Note ``event`` (:meth:`key`), then ``route`` it on unless the delete confirmation
        answered it or ``taken`` says it was a stop; counted handled after either."""
        try:
            if not (self.key(event) or taken(event)):
                await route(event)
        finally:
            if not event.is_forwarded:
                self.keys_done += 1

    def key(self, event: events.Key) -> bool:
        """Note ``event``; True when the delete confirmation answered it (route it no
        further)."""
        app, prompt = self._app, self._prompt
        # The send key is counted on its way before the key is counted seen: the input thread
        # reads the two (at Ctrl+Q) and, seeing every key it posted seen and nothing on its
        # way, lets the quit go ahead of an Enter the app had just seen (its prompt was lost,
        # 1 quit in 5 with the cores busy).
        if event.is_forwarded:  # a key no widget took, bubbled back up: seen already
            return False
        if event.key in prompt.SEND_KEYS and app.focused is prompt:
            prompt.sends.given()  # on its way to the box, then to the screen
        self.keys_seen += 1
        self._stops.key_time = event.time
        if event.key == "enter" and isinstance(app.focused, ConsoleInput):
            self._stops.console_enter(event.time)  # before a stop key after it is handled
        asked = app.screen if isinstance(app.screen, ConfirmDelete) else None
        stops = event.key in self._stops.input_keys and self._running_turn() is not None
        return asked is not None and not stops and asked.take_key(event)

    def mouse_down(self, event: events.MouseDown) -> None:
        """A press: note the widget under it."""
        self.presses.mouse_down(widget_under(self._app, event))

    def mouse_up(self, event: events.MouseUp) -> None:
        """A release (after Textual made its click, if any)."""
        self.presses.mouse_up(event, widget_under(self._app, event))
