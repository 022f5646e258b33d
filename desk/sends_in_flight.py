"""Prompts on their way from a send key to the screen, for a quit typed right behind them.

A quit read on the terminal's input thread waits for the keys typed before it only when some
have not reached the app yet (:mod:`desk.typing_drain`). An Enter the app had already seen
could still be on its way: in the prompt box's queue, or its ``Submitted`` in the screen's.
The shutdown then began first, the prompt came back to the box, and was gone when desk
exited (``hello⏎`` then Ctrl+Q, 1 time in 12 as the desk came up). :class:`SendsInFlight`
counts the send keys the app hands to the prompt box and those the desk is done with (the
prompt handled by the screen, or the key sent nothing); while any is on its way, a quit
waits for it as for an unseen key.
"""

from __future__ import annotations


class SendsInFlight:
    """Send keys (Enter, Ctrl+T, Ctrl+S) given to the prompt box and not yet done with.

    Counted on the UI thread; :attr:`pending` is read on the terminal's input thread too
    (two integer reads, each written by the UI thread only).
    """

    def __init__(self) -> None:
        self._given = 0
        self._done = 0

    def given(self) -> None:
        """A send key goes to the prompt box (the app forwards it now)."""
        self._given += 1

    def done(self) -> None:
        """A send key given to the box is done with: its prompt was handled by the screen, or
        it sent nothing (an empty box, an answer to an approval)."""
        self._done = min(self._done + 1, self._given)

    def settle(self) -> None:
        """Every key typed before now was handled (a quit's drain reached the screen): none
        is on its way, whatever was miscounted."""
        self._done = self._given

    @property
    def pending(self) -> bool:
        """True while a send key given to the box is not done with (any thread)."""
        done = self._done  # read first: a key done meanwhile never shows as pending
        return self._given > done
