"""Keys typed before a quit take effect before the quit refuses prompts.

Ctrl+Q starts the quit on the terminal's input thread, while the keys typed just before it
(``a prompt⏎`` in the same burst) may still wait in the UI's queues: the Enter reached the
prompt box after the gateway had begun to shut down, the box got its text back, and the
prompt was gone when desk exited. So a quit that comes while keys typed before it have not
reached the app (the input thread counts what it posted, the app what it saw) first sends a
:class:`DrainTyping` the same way the keys went: to the app (after the keys still queued
there), from the app to the focused widget (after the keys it forwarded; from the screen, or a
widget bubbling up to it, on to the prompt box, after the keys the screen forwarded there),
once more to the box (after the ``Submitted`` its Enter posted), and up to the screen (after
that ``Submitted`` was handled: the prompt was sent). There it sets ``done``; the quit's thread
waits for it, bounded, before the gateway's shutdown begins.

From the input thread it is posted the way the keys were (:func:`post_after_keys`): Textual's
driver posts each key as a task of the app's loop (two turns of the loop), and a message posted
from another thread takes one: the drain overtook the last keys of the burst, the quit went
ahead of their Enter, and the prompt was lost (1 quit in 8, four processes on two cores).
"""

from __future__ import annotations

import contextlib
import threading

from textual.app import App
from textual.message import Message

DRAIN_S = 3.0
"""The longest a quit waits for the keys typed before it, in seconds (a bound for a UI thread
that never gets there, not a wait: the drain takes tens of milliseconds with the cores busy,
and 1 s was passed on a 2-core machine with four test processes beside it, the prompt then
lost)."""


class DrainTyping(Message):
    """Goes where typed keys go; ``done`` is set once those typed before it were handled.

    Args:
        done: set by the screen when the message reaches it.
        hops: posts to the prompt box still to make (each goes after what the last one
            queued).
    """

    def __init__(self, done: threading.Event, hops: int = 2) -> None:
        super().__init__()
        self.done = done
        self.hops = hops

    def next_hop(self) -> DrainTyping:
        """The same drain, one post nearer the screen."""
        return DrainTyping(self.done, self.hops - 1)


def post_after_keys(app: App[int], message: Message) -> None:
    """Post ``message`` to ``app`` behind every key its driver posted before (any thread).

    On the app's own thread it is queued at once. From another thread it goes as the driver
    sends keys (:meth:`textual.driver.Driver.send_message`, a task on the app's loop), so
    tasks made in that order put it in the app's queue in that order. Never raises: a closed
    loop (the app has exited) drops it.
    """
    driver = app._driver
    if driver is None or threading.get_ident() == app._thread_id:
        app.post_message(message)
        return
    with contextlib.suppress(RuntimeError):  # the app's loop has closed already
        driver.send_message(message)
