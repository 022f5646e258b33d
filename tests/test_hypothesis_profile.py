"""Every hypothesis test runs without a deadline, whatever settings it gives itself."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st


def test_the_default_has_no_deadline() -> None:
    assert settings.default.deadline is None


@settings(max_examples=5)
@given(st.integers())
def _with_its_own_settings(_n: int) -> None:
    return None


def test_a_test_with_its_own_settings_has_no_deadline() -> None:
    own = _with_its_own_settings._hypothesis_internal_use_settings  # type: ignore[attr-defined]
    assert own.deadline is None and own.max_examples == 5
