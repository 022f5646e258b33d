"""The queue above the prompt box: the session's waiting prompts, in order, removable and
editable, and the prompts not sent when the desk last closed, offered again.

The view keeps the session's :class:`~desk.queue_state.SessionQueue` (the turns controller
adds a prompt the gateway queued and takes it away as it runs or is dropped); this controller
shows it in the :class:`~desk.widgets.queue_list.QueueList` (:meth:`QueueController.sync`, after
every change) and does what its lines ask:

- ✕ removes a prompt (``prompt_remove``; it goes when its ``prompt.dropped`` arrives), or
  dismisses a prompt offered again (``prompt_remove`` of the prompts not sent it stands for:
  saved, a later resume offers it no more);
- ✎, or Up on an empty prompt box (the last one), edits a prompt in the prompt box: Enter saves
  the new text in the prompt's place (``prompt_edit``; a prompt offered again is sent with it,
  and the prompt it stood for is saved as dismissed), an empty box gives the edit up; a
  prompt that starts running meanwhile keeps its old text and the edit stays in the box;
- ↻ sends a prompt offered again (``prompt_submit``: it runs, or waits behind the queue).

A session shown again gets its queue from ``session_queue``; a resumed one offers the prompts
that were still queued when it was last closed (saved as not sent), however many turns ran
since, until one is sent again with its text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contract.errors import GatewayError
from contract.results import TranscriptEntry
from desk.controllers.ports import FocusPrompt, Notify
from desk.controllers.turns import TurnsController
from desk.queue_state import SessionQueue
from desk.send_mode import LAST_QUEUED
from desk.widgets.prompt_input import PromptInput
from desk.widgets.queue_list import QueueList
from desk.widgets.queued_item import QueueAction

if TYPE_CHECKING:
    from contract.ports import DeskGateway
    from desk.controllers.view import ShownSession


def unsent_tail(entries: list[TranscriptEntry]) -> list[tuple[str, tuple[str, ...]]]:
    """The prompts not sent when a saved session was closed that are still to be offered, in
    transcript order, each with the turn ids of the not-sent prompts it stands for (one line
    per text): every prompt saved as not sent that no later prompt of the session sent again
    with the same text (↻ sends it as a new prompt, which answers it), and that the person did
    not dismiss (✕ saves that). Later turns do not answer a prompt left not sent: it stays
    offered until the person sends or dismisses it."""
    offered: dict[str, list[str]] = {}
    sent_later: set[str] = set()
    for entry in reversed(entries):
        if entry.role != "user" or entry.summary or entry.steer:
            continue
        if not entry.unsent:
            sent_later.add(entry.content)
        elif entry.content not in sent_later and not entry.dismissed:
            offered.setdefault(entry.content, []).append(entry.turn_id)
    return [(text, tuple(ids[::-1])) for text, ids in reversed(offered.items())]


def offered_apart(entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
    """A saved transcript without the prompts :func:`unsent_tail` offers again: those are
    listed above the prompt box ("not sent when desk last closed"), not also shown as turns
    of the transcript that never ran."""
    offered = {turn_id for _, ids in unsent_tail(entries) for turn_id in ids}
    if not offered:
        return entries
    return [e for e in entries if not (e.unsent and e.role == "user" and e.turn_id in offered)]


class QueueController:
    """The queue of the session a view shows.

    Args:
        gateway: the gateway (``prompt_remove``, ``prompt_edit``, ``session_queue``).
        turns: sends a prompt offered again, and keeps the status bar's queued count.
        queue_list: the list above the prompt box.
        prompt: the prompt box (it edits queued prompts).
        notify: shows a toast.
        focus_prompt: gives the focus back to the prompt box.
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        turns: TurnsController,
        queue_list: QueueList,
        prompt: PromptInput,
        notify: Notify,
        focus_prompt: FocusPrompt,
    ) -> None:
        self._gateway = gateway
        self._turns = turns
        self._list = queue_list
        self._prompt = prompt
        self._notify = notify
        self._focus_prompt = focus_prompt

    async def sync(self, view: ShownSession) -> None:
        """Show the view's queue as it is now (call after every change). An edited prompt
        that left the queue (it runs, or was dropped) ends the edit; its text stays in the
        box."""
        queue = view.queue
        editing = self._prompt.editing
        if editing not in (None, LAST_QUEUED) and queue.get(editing) is None:
            self._prompt.editing = None
            self._notify(
                "the queued prompt you were editing left the queue before the edit was "
                "saved; your text is still in the prompt box",
                title="Not edited",
                severity="warning",
            )
        self._prompt.has_queue = queue.last() is not None
        self._turns.set_queued(view)
        if self._list.is_attached:
            await self._list.show(queue, self._prompt.editing)

    async def load(self, view: ShownSession) -> None:
        """A session is shown: its queue as the gateway holds it now."""
        try:
            waiting = self._gateway.session_queue(view.session_id)
        except GatewayError:
            waiting = []  # a session the gateway no longer holds: nothing waits
        for info in waiting:
            view.queue.add(info.turn_id, info.text, info.position, compress=not info.editable)
        await self.sync(view)

    async def offer_unsent(self, view: ShownSession, entries: list[TranscriptEntry]) -> None:
        """A resumed session: offer again the prompts that were still queued when it was last
        closed (they are saved as not sent, and run only if the person sends them)."""
        for text, turn_ids in unsent_tail(entries):
            view.queue.hold(text, turn_ids)
        await self.sync(view)

    async def chosen(self, view: ShownSession, key: str, action: QueueAction) -> None:
        """A queue line's ✎, ✕ or ↻."""
        entry = view.queue.get(key)
        if entry is None:
            return
        if action == "edit":
            self.edit(view, key)
        elif action == "remove" and entry.kind == "held":
            view.queue.pop(key)
            self.dismiss(view, entry.turn_ids)
            await self.sync(view)
        elif action == "remove":
            self.remove(view, key)
        else:
            await self.resend(view, key)

    def remove(self, view: ShownSession, turn_id: str) -> None:
        """✕ on a queued prompt: ask the gateway to drop it (it goes with ``prompt.dropped``)."""
        try:
            self._gateway.prompt_remove(view.session_id, turn_id)
        except GatewayError as exc:
            self._notify(exc.message, title="Not removed", severity="error")

    def dismiss(self, view: ShownSession, turn_ids: tuple[str, ...]) -> None:
        """✕ on a prompt offered again: saved as dismissed (``prompt_remove`` of each prompt
        not sent it stands for), so a later resume offers it no more."""
        try:
            for turn_id in turn_ids:
                if turn_id:
                    self._gateway.prompt_remove(view.session_id, turn_id)
        except GatewayError as exc:
            self._notify(exc.message, title="Not saved as dismissed", severity="warning")

    async def resend(self, view: ShownSession, key: str) -> bool:
        """↻ on a prompt offered again: send it (it runs, or waits behind the queue).

        Returns:
            True when the gateway took it.
        """
        entry = view.queue.get(key)
        if entry is None:
            return False
        result = self._turns.send(view, entry.text)
        if result is not None:
            view.queue.pop(key)
            await self._turns.show_sent(view, entry.text, result)
        await self.sync(view)
        return result is not None

    def edit(self, view: ShownSession, key: str) -> None:
        """✎: the prompt box takes the prompt's text to edit; a draft it held goes to the
        prompt history (Up recalls it)."""
        entry = view.queue.get(key)
        if entry is None or not entry.editable:
            return
        prompt = self._prompt
        if prompt.editing is None and prompt.text.strip():
            prompt.prompt_history.add(prompt.text)
            self._notify("your draft is in the prompt history: Up recalls it", title="Editing")
        prompt.editing = None  # the text set below is not the box being emptied
        prompt.text = entry.text
        prompt.move_cursor(prompt.document.end)
        prompt.editing = key
        if entry.kind == "held":  # not sent when desk last closed: Enter sends it
            prompt.edit_sends()
        self._focus_prompt()
        self._prompt.call_later(self.sync, view)

    def edit_last(self, view: ShownSession, loaded: bool = False) -> None:
        """Up on an empty prompt box: edit the last queued prompt. ``loaded``: the box shows
        the prompt it queued last already (and what was typed since): only its key is set;
        when it is not queued (it ran), the text stays in the box as a prompt of its own."""
        entry = view.queue.last()
        if not loaded:
            if entry is not None:
                self.edit(view, entry.key)
            return
        prompt = self._prompt
        if prompt.editing == LAST_QUEUED:
            prompt.editing = entry.key if entry is not None and entry.editable else None
            if prompt.editing is not None and entry is not None and entry.kind == "held":
                prompt.edit_sends()
            self._prompt.call_later(self.sync, view)

    async def save_edit(self, view: ShownSession, key: str, text: str) -> None:
        """Enter while the box edits ``key``: its new text, in its place.

        The box emptied itself on Enter. A held prompt is sent with its new text, and the
        prompts not sent it stood for are saved as dismissed (a later prompt with the same
        text is what answers one otherwise: edited, it was offered again on every resume and
        could be sent twice). When the
        prompt is no longer queued the text comes back to the box (a toast says so), and Enter
        then sends it as a prompt of its own.
        """
        prompt = self._prompt
        if key == LAST_QUEUED:  # Enter came before the desk named it: the last queued
            last = view.queue.last()
            key = last.key if last is not None else key
        entry = view.queue.get(key)
        prompt.editing = None
        if entry is not None and entry.kind == "held":
            settled = entry.turn_ids if text != entry.text else ()
            entry.text = text
            if await self.resend(view, key) and settled:
                self.dismiss(view, settled)  # sent with new text: never offered again
            return
        edited = False
        if entry is not None:
            try:
                edited = self._gateway.prompt_edit(view.session_id, key, text)
            except GatewayError as exc:
                prompt.give_back(text)
                self._notify(exc.message, title="Not edited", severity="error")
                await self.sync(view)
                return
        if edited and entry is not None:
            entry.text = text  # the gateway's prompt.queued says so too
        else:
            prompt.give_back(text)
            self._notify(
                "that prompt is not queued any more (it ran); your text is still here: Enter "
                "sends it as a new prompt",
                title="Not edited",
                severity="warning",
            )
        await self.sync(view)

    async def edit_cancelled(self, view: ShownSession) -> None:
        """The box was emptied while it edited: the queued prompt stays as it was."""
        await self.sync(view)

    async def take_queued(self, view: ShownSession, turn_id: str) -> bool:
        """A queued ``/compress`` starts (it never gets a ``message.start``: its compression
        panel and outcome line stand for it): its line goes.

        Returns:
            True if a queued line was taken away.
        """
        taken = view.queue.pop(turn_id) is not None
        if taken:
            await self.sync(view)
        return taken


__all__ = ["QueueController", "SessionQueue", "offered_apart", "unsent_tail"]
