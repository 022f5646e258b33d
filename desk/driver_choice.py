"""Which Textual driver desk runs with: its own wherever it has one.

Under ``textual-serve`` the browser's (:class:`desk.web_driver.DeskWebDriver`: Textual's web
driver with desk's keys and stops); on a Linux terminal :class:`desk.driver.FastEscapeDriver`
(stop keys read on the input thread, a lone Esc at once). Each is imported only when chosen.
"""

from __future__ import annotations

import sys

from textual import constants
from textual.driver import Driver


def desk_driver() -> type[Driver] | None:
    """desk's driver for where it runs, or None to let Textual choose (``TEXTUAL_DRIVER`` set,
    or not Linux)."""
    from desk.web_driver import served_to_browser

    if served_to_browser():  # textual-serve: its web driver, with desk's keys and stops
        from desk.web_driver import DeskWebDriver

        return DeskWebDriver
    if constants.DRIVER is None and sys.platform.startswith("linux"):
        from desk.driver import FastEscapeDriver

        return FastEscapeDriver
    return None
