"""The fast-Esc driver's input wait, and that the app picks it only for a real Linux terminal."""

from __future__ import annotations

import sys

import pytest
from textual import constants

from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.driver import IDLE_WAIT_S, FastEscapeDriver, input_wait_s


def test_wait_is_the_idle_wait_when_no_escape_is_pending() -> None:
    assert input_wait_s(None, now=5.0) == IDLE_WAIT_S == 0.1


def test_wait_ends_at_the_pending_escape_deadline() -> None:
    assert input_wait_s(5.010, now=5.0) == pytest.approx(0.010)
    assert input_wait_s(4.9, now=5.0) == 0.0  # overdue: do not block at all
    assert input_wait_s(9.0, now=5.0) == IDLE_WAIT_S  # never longer than the idle wait


class _NoGateway:
    running_turns = 0


def test_app_sets_the_escape_delay_and_uses_the_driver_on_linux(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(constants, "ESCAPE_DELAY", 0.1)
    monkeypatch.setattr(constants, "DRIVER", None)
    app = DeskApp(_NoGateway(), ConnectionInfo("m", "http://x/v1"), escape_delay_ms=10)  # type: ignore[arg-type]
    assert abs(constants.ESCAPE_DELAY - 0.010) < 1e-9
    if sys.platform.startswith("linux"):
        assert app.get_driver_class() is FastEscapeDriver


def test_an_explicit_textual_driver_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constants, "DRIVER", "textual.drivers.linux_driver:LinuxDriver")
    app = DeskApp(_NoGateway(), ConnectionInfo("m", "http://x/v1"))  # type: ignore[arg-type]
    assert app.get_driver_class() is not FastEscapeDriver
