"""Summarising a middle in as many calls as the window needs, committed as one summary.

A summary call must fit the window too, so a middle longer than one call can read is
summarised in rounds: the first round summarises what fits, the next reads that summary with the
messages that follow it (and, when the next plan keeps less of the head, the head's messages
before it), and so on (a rolling summary), until the transcript reaches the target or nothing
more can be gained (at most `MAX_ROUNDS`). Messages too large for their share are
summarised on their own first (the plan's ``singles``). Only the last summary is committed, in
place of everything the rounds read; nothing changes before that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent.compression.fitting import RequestBuilder
from agent.compression.plan import CompressionPlan, plan_compression
from agent.compression.template import single_request, summary_message, summary_request
from agent.context.calibration import TokenCalibration
from agent.context.shape import well_formed
from agent.provider.types import ChatMessage

MAX_ROUNDS = 8
"""Most summary rounds in one compression."""

Summarise = Callable[[RequestBuilder, int], str | None]
"""Runs one summary call: (its request, read at most so many characters of conversation; most
tokens of the summary) -> the summary, or None when it did not end (stopped, failed): the
rounds then end with nothing. The call reads the request as planned (None), or shorter when
that does not fit the window (:mod:`agent.compression.fitting`)."""


@dataclass(frozen=True, slots=True)
class RoundsResult:
    """What the rounds produced: ``history[start:end]`` becomes ``summary``.

    Attributes:
        start: first index of what is replaced, in the transcript the rounds began with.
        end: end of what is replaced (exclusive), in that transcript.
        summary: the summary message.
        tokens_in: estimated tokens of what is replaced.
        rounds: how many rounds ran.
    """

    start: int
    end: int
    summary: ChatMessage
    tokens_in: int
    rounds: int


def run_rounds(
    history: Sequence[ChatMessage],
    first: CompressionPlan,
    *,
    window_tokens: int,
    calibration: TokenCalibration,
    target_tokens: int | None,
    summarise: Summarise,
    focus: str | None = None,
    on_plan: Callable[[CompressionPlan], None] | None = None,
) -> RoundsResult | None:
    """Run the summary rounds of ``first`` (a non-empty plan of ``history``).

    Args:
        history: the transcript (not modified).
        first: the plan of the first round.
        window_tokens: the context window (tokens).
        calibration: the session's count.
        target_tokens: the size to reach; None runs one round.
        summarise: makes one summary call.
        focus: what the summary should keep in view.
        on_plan: told each round's plan before its calls (progress).

    Returns:
        the replacement, or None when a call did not end.
    """
    head = first.head_end
    current = list(history)
    plan = first
    consumed = head  # history[head:consumed] is what the summary so far replaces
    summary: ChatMessage | None = None
    rounds = 0
    while True:
        rounds += 1
        if on_plan is not None:
            on_plan(plan)
        text = _one_round(current, plan, summarise, focus)
        if text is None:
            return None
        # current[head] is the previous round's summary from the second round on; a round may
        # begin before it (what it summarises then includes part of the head kept so far)
        consumed += plan.tail_start - head - (1 if summary is not None else 0)
        head = plan.head_end
        summary = summary_message(text)
        current = [*history[:head], summary, *history[consumed:]]
        size = calibration.count(well_formed(current))
        if target_tokens is None or size <= target_tokens or rounds >= MAX_ROUNDS:
            break
        following = plan_compression(
            current,
            window_tokens=window_tokens,
            calibration=calibration,
            target_tokens=target_tokens,
        )
        if following.empty or not _goes_on(following, head):
            break
        plan = following
    tokens_in = sum(calibration.costs(history[head:consumed]))
    return RoundsResult(head, consumed, summary, tokens_in, rounds)


def _goes_on(following: CompressionPlan, head: int) -> bool:
    """True when ``following`` (a non-empty plan of the transcript with the summary so far at
    ``head``) carries the rounds on: its middle holds that summary (alone, it is written
    shorter: a plan keeps the messages after it and makes room in the summary instead)."""
    return following.head_end <= head < following.tail_start


def _one_round(
    current: list[ChatMessage],
    plan: CompressionPlan,
    summarise: Summarise,
    focus: str | None,
) -> str | None:
    replaced: dict[int, str] = {}
    for index in plan.singles:

        def single(limit: int | None, message: ChatMessage = current[index]) -> list[ChatMessage]:
            keep = plan.single_chars if limit is None else min(plan.single_chars, limit)
            return single_request(message, keep)

        text = summarise(single, plan.single_budget)
        if text is None:
            return None
        replaced[index - plan.head_end] = text
    middle = current[plan.head_end : plan.tail_start]

    def request(limit: int | None) -> list[ChatMessage]:
        return summary_request(
            middle,
            focus=focus,
            cut_chars=plan.cut_chars,
            share_chars=plan.share_chars or None,
            replaced=replaced,
            max_chars=limit,
        )

    return summarise(request, plan.budget)
