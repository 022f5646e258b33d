"""Exit reasons and turn statuses are closed: they render the glossary's forms and parse back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.outcome import ExitKind, ExitReason, TurnStatus
from agent.stops import StopRequest, Surface

ERROR_CLASSES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,20}", fullmatch=True)
REASONS = st.one_of(
    st.just(ExitReason.completed()),
    st.just(ExitReason.interrupted_by_user()),
    st.sampled_from(list(Surface)).map(lambda s: ExitReason.interrupted_by_system(s.value)),
    ERROR_CLASSES.map(ExitReason.failed),
    st.integers(0, 10**9).map(ExitReason.max_iterations),
)


def test_each_form_renders_as_the_wire_and_the_store_have_it() -> None:
    assert ExitReason.completed() == "completed"
    assert ExitReason.interrupted_by_user() == "interrupted_by_user"
    stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "quitting")
    assert stop.exit_reason() == "interrupted_by_system(gateway.shutdown)"
    assert ExitReason.failed("ConnectFailed") == "failed(ConnectFailed)"
    assert ExitReason.max_iterations(25) == "max_iterations(25)"
    assert TurnStatus.MAX_ITERATIONS == "max_iterations"


@given(REASONS)
def test_every_exit_reason_parses_back_to_itself(reason: ExitReason) -> None:
    back = ExitReason.parse(str(reason))
    assert back == reason and back.kind is reason.kind and back.detail == reason.detail
    assert back.status is reason.kind.status


def test_parts_and_status_of_an_exit_reason() -> None:
    reason = ExitReason.parse("interrupted_by_system(inactivity)")
    assert reason.kind is ExitKind.INTERRUPTED_BY_SYSTEM and reason.detail == "inactivity"
    assert reason.status is TurnStatus.INTERRUPTED
    assert ExitReason.parse("max_iterations(3)").detail == "3"
    assert ExitReason.completed().detail is None
    assert ExitReason.failed("Crash").status is TurnStatus.FAILED


@pytest.mark.parametrize(
    "text",
    [
        "",
        "done",
        "completed(1)",
        "interrupted_by_user(desk.key)",
        "interrupted_by_system",
        "interrupted_by_system()",
        "failed",
        "failed(not a class)",
        "max_iterations(many)",
        "max_iterations(3) ",
    ],
)
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        ExitReason.parse(text)
