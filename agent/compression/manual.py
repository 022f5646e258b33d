"""``/compress`` asked by the person: what it may summarise beyond the usual plan, and why,
in words, when there is nothing to summarise.

The usual plan (:func:`agent.compression.plan.plan_compression`) keeps the first exchange and a
recent tail (a quarter of the window, at least six messages) whole, and summarises what lies
between. A session below half its window often has nothing there: its whole tail fits the
quarter. An automatic compression then has no reason to run; a ``/compress`` does, since the
person asked for a smaller context. :func:`manual_plan` plans it as an automatic compression
would plan a transcript that must shrink (the bolder shapes of the plan, aiming just under the
size it has now), and takes that plan only when it keeps the last exchange whole: the person
goes on from there. When even that finds nothing worth a summary, :func:`nothing_reason` says
why in one line.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.compression.plan import CompressionPlan, is_summary, plan_compression
from agent.context.calibration import TokenCalibration
from agent.provider.types import ChatMessage


def is_prompt(message: ChatMessage) -> bool:
    """True for a prompt the person sent (it starts an exchange): not a steer, not a prompt
    that was never sent, not an earlier compression's summary."""
    return (
        message.role == "user"
        and not message.unsent
        and not message.steer
        and not is_summary(message)
    )


def keeps_last_exchange(history: Sequence[ChatMessage], plan: CompressionPlan) -> bool:
    """True when ``plan`` summarises nothing of the last exchange (its prompt and after)."""
    last = max((i for i, m in enumerate(history) if is_prompt(m)), default=None)
    return last is not None and plan.tail_start <= last


def manual_plan(
    history: Sequence[ChatMessage],
    usual: CompressionPlan,
    *,
    size_tokens: int,
    window_tokens: int,
    calibration: TokenCalibration,
    target_tokens: int | None,
) -> CompressionPlan:
    """The plan of a ``/compress`` whose usual plan is empty.

    Args:
        history: the active transcript.
        usual: its usual plan (empty).
        size_tokens: the transcript's size now (tokens, the session's count).
        window_tokens: the context window (tokens).
        calibration: the session's count.
        target_tokens: what the compression aims at (tokens), or None.

    Returns:
        a bolder plan that keeps the last exchange whole and leaves the transcript smaller,
        or ``usual`` when there is none.
    """
    aim = size_tokens - 1 if target_tokens is None else min(target_tokens, size_tokens - 1)
    if aim <= 0:
        return usual
    bold = plan_compression(
        history, window_tokens=window_tokens, calibration=calibration, target_tokens=aim
    )
    if bold.empty or not keeps_last_exchange(history, bold):
        return usual
    return bold


def nothing_reason(history: Sequence[ChatMessage], usual: CompressionPlan) -> str:
    """Why a compression found nothing to summarise, in words a person understands.

    Args:
        history: the active transcript.
        usual: its usual plan (empty): its head and tail are kept whole.

    Returns:
        one line starting ``nothing to compress: ``.
    """
    prompts = [i for i, m in enumerate(history) if is_prompt(m)]
    summary = any(is_summary(m) for m in history)
    if not prompts and not summary:
        return "nothing to compress: the session has no exchange yet"
    if len(prompts) <= 1 and not summary:
        return (
            "nothing to compress: the session has one exchange so far, and the last "
            "exchange is always kept whole"
        )
    later = sum(1 for i in prompts if i >= usual.tail_start)
    last = "the last exchange" if later <= 1 else f"the last {later} exchanges"
    middle = [m for m in history[usual.head_end : usual.tail_start] if not m.unsent]
    between = [m for m in middle if not is_summary(m)]
    if summary and not between:
        kept = "is kept whole, and before it" if later <= 1 else "are kept whole, and before them"
        return (
            f"nothing to compress: {last} {kept} there is only the summary an earlier "
            "compression wrote"
        )
    first = "the summary of the earlier conversation" if summary else "the first exchange"
    if not between:
        return (
            f"nothing to compress: {first} and {last} are kept whole, and there is "
            "nothing older between them"
        )
    count = f"{len(between)} message" + ("s" if len(between) != 1 else "")
    return (
        f"nothing to compress: {first} and {last} are kept whole, and between them there "
        f"is only {count} of about {usual.tokens_in:,} tokens, too little for a summary to save"
    )
