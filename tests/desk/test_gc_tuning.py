"""The desk collects garbage rarely from the moment it starts, not only once it is up.

Start-up (importing, building the screen, reading a resumed session) allocates many long-lived
objects; with Python's default thresholds the collector walked them again and again before the
first frame (see :mod:`desk.gc_tuning`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from desk.app import DeskApp
from desk.gc_tuning import THRESHOLDS
from desk.late_gateway import Built, LateGateway
from tests.desk.kit import connection


@pytest.fixture
def default_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def never_built() -> Built:
    raise AssertionError("the gateway is not built in this test")


@pytest.mark.usefixtures("default_thresholds")
def test_making_the_app_raises_the_collector_thresholds_before_its_screen_is_built() -> None:
    DeskApp(LateGateway(never_built), connection(), handle_signals=False)
    assert gc.get_threshold() == THRESHOLDS
