"""Which messages a compression keeps, and which it summarises.

The usual plan: the head is the system prompt and the first exchange (the first user message and
everything up to the next user message); the tail is chosen from the end by a token budget, with
at least ``min_tail_messages`` messages and the last user message; the middle is the rest.
Boundaries move so that an assistant message with tool calls always stays with the tool results
answering it, and so that the tail never starts with a user message (the summary, a user
message, takes the middle's place: user and assistant turns keep alternating).

With a target (the size the transcript must come down to, so the next request fits), a plan
that would not reach it gives way to bolder ones, in order: a tail of the last exchange only,
no tail at all, and the first exchange summarised too. A session of a few large messages
therefore always has something to summarise. What a plan keeps is counted as the request
carries it (results a crash left unanswered, notes after tool results) over the messages it
really keeps. The usual plan is kept when it reaches the target, in one call or in rounds
(:mod:`agent.compression.rounds`, when one call cannot read its whole middle); else the first
bolder plan whose one call does, else the first whose rounds can, else the one that comes
closest.

In every plan the middle is read by the summary call as it fits that call's window: tool
outputs cut to a head and a tail with a note, a message too large for its share (a paste)
summarised on its own first (``singles``), and, when that is not enough, every other message cut
to a share of what the singles leave; a middle still too long for one call is cut at its end,
the rest left for the next round (or a later compression).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agent.context.calibration import TokenCalibration
from agent.context.shape import NO_REPLY, NO_RESULT, STEER_NOTE
from agent.context.shrink import KEEP_CHARS, note_chars
from agent.provider.types import ChatMessage
from agent.tokens import MESSAGE_OVERHEAD_TOKENS

SUMMARY_MARKER = "[desk: summary of the earlier conversation]"
"""First line of a summary message; marks it as a reference, not something the person typed."""

TEMPLATE_TOKENS = 160
"""Tokens of the summary call's instructions (its system message), with room to spare."""

MIN_BUDGET, MAX_BUDGET = 256, 2048
"""Bounds of a usual summary's length (tokens): a third of what it replaces."""

TIGHT_MIN_BUDGET = 32
"""Shortest summary a plan under a target allows (tokens)."""


MIN_SHARE = 16
"""Fewest tokens a message is cut to when a middle is too long for one summary call."""


def is_summary(message: ChatMessage) -> bool:
    """True for a summary message a previous compression wrote."""
    return message.role == "user" and message.content.startswith(SUMMARY_MARKER)


@dataclass(frozen=True, slots=True)
class CompressionPlan:
    """Index ranges of a transcript: ``[0, head_end)`` kept, ``[head_end, tail_start)``
    summarised, ``[tail_start, n)`` kept.

    Attributes:
        head_end: end of the head (exclusive).
        tail_start: start of the tail.
        tokens_in: estimated tokens of the middle.
        previous_summary: index of an earlier summary inside the middle, updated rather than
            summarised again, or None.
        singles: indexes of middle messages summarised on their own first (too large for
            their share of the summary call).
        budget: most tokens the middle's summary may have.
        single_budget: most tokens each single's summary may have.
        cut_chars: characters a tool output keeps in the summary call's input.
        single_chars: characters of a single its own summary call reads (more is cut out of
            its middle).
        share_chars: when the middle is too long for one call, the characters each of its
            messages is read cut to (0: read whole).
        tokens_after: the transcript's estimated size once this plan's summary replaces its
            middle (tokens): what it really keeps (head and ``[tail_start, n)``, with the
            results and notes the request adds) plus the summary at its full budget. A middle
            cut short for the summary call's window counts as kept: later rounds (see
            :mod:`agent.compression.rounds`) plan afresh and may keep it too.
        tokens_reach: the transcript's estimated size once the whole middle this plan aims at
            is summarised, in rounds when one call cannot read it all (tokens); equal to
            ``tokens_after`` when one call reads it all.
        tight: planned under a target with a bolder shape than the usual one (a middle of
            one large message is then worth summarising).
    """

    head_end: int
    tail_start: int
    tokens_in: int
    previous_summary: int | None = None
    singles: tuple[int, ...] = ()
    budget: int = MIN_BUDGET
    single_budget: int = 0
    cut_chars: int = KEEP_CHARS
    single_chars: int = 0
    share_chars: int = 0
    tokens_after: int = 0
    tokens_reach: int = 0
    tight: bool = False

    @property
    def empty(self) -> bool:
        """True when there is nothing worth summarising."""
        span = self.tail_start - self.head_end
        if span <= 0 or (span == 1 and not self.tight):
            return True
        return self.tokens_in <= self.budget + MESSAGE_OVERHEAD_TOKENS


def _keeps_tool_pairs(messages: Sequence[ChatMessage], index: int) -> int:
    """Move a boundary at ``index`` back so that tool results stay with their call."""
    while 0 < index < len(messages) and messages[index].role == "tool":
        index -= 1
    return index


@dataclass(frozen=True, slots=True)
class _Shape:
    """One way of choosing head and tail."""

    first_exchange: bool
    min_tail: int
    tail_budget: int
    usual: bool  # the last user message stays, the tail does not start with a user message


class _Planner:
    """Plans over one transcript; everything per message is worked out once, in one pass."""

    def __init__(
        self,
        messages: Sequence[ChatMessage],
        costs: list[int],
        *,
        window: int,
        input_limit: int,
        chars_per_token: float,
        target: int | None,
    ) -> None:
        self.messages = messages
        self.window = window
        self.input_limit = input_limit
        self.target = target
        self.cut_chars = int(min(KEEP_CHARS, max(200, input_limit // 6 * chars_per_token)))
        self.single_budget = max(TIGHT_MIN_BUDGET, min(512, input_limit // 6))
        self.ratio = chars_per_token
        overhead = MESSAGE_OVERHEAD_TOKENS
        cut = math.ceil((self.cut_chars + note_chars(self.cut_chars)) / chars_per_token)
        cut += overhead + 8
        note_result = math.ceil(len(NO_RESULT) / chars_per_token) + overhead
        note_chars_most = max(len(NO_REPLY), len(STEER_NOTE))
        self.note_reply = math.ceil(note_chars_most / chars_per_token) + overhead
        # A prompt that was never sent is in no request: it costs nothing.
        self.costs = [0 if m.unsent else c for m, c in zip(messages, costs, strict=True)]
        self.rendered = list(self.costs)  # as a summary call reads it: long tool outputs cut
        repairs = [0] * len(messages)
        roles = [m.role for m in messages]
        for i in [i for i, role in enumerate(roles) if role == "tool"]:
            if len(messages[i].content) > self.cut_chars:
                self.rendered[i] = cut
        for i in [i for i, m in enumerate(messages) if m.tool_calls]:
            answered = set()
            j = i + 1
            while j < len(messages) and roles[j] == "tool":
                answered.add(messages[j].tool_call_id)
                j += 1
            repairs[i] = len({c.id for c in messages[i].tool_calls} - answered) * note_result
        self.last_user = (
            len(roles) - 1 - roles[::-1].index("user") if "user" in roles else len(roles)
        )
        self.prefix = [0, *itertools.accumulate(self.costs)]
        notes = [0] * len(messages)  # notes[i]: the note between results ending at i and a
        following: str | None = None  # user message sent after them (role of the next sent)
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].unsent:
                continue
            if following == "user" and (roles[i] == "tool" or messages[i].tool_calls):
                notes[i] = self.note_reply
            following = roles[i]
        self.repair_prefix = [0, *itertools.accumulate(repairs)]
        self.note_prefix = [0, *itertools.accumulate(notes)]
        # the last message sent, and its note before the next prompt: a tail's size at once
        sent = (i for i in reversed(range(len(messages))) if not messages[i].unsent)
        self.last_sent = next(sent, -1)
        last = messages[self.last_sent] if self.last_sent >= 0 else None
        ends_in_results = last is not None and (last.role == "tool" or bool(last.tool_calls))
        self.end_note = self.note_reply if ends_in_results else 0

    def cost(self, start: int, end: int) -> int:
        """Tokens of ``messages[start:end]``."""
        return self.prefix[end] - self.prefix[start]

    def head_end(self, first_exchange: bool) -> int:
        messages, n = self.messages, len(self.messages)
        head_end = 1 if n and messages[0].role == "system" else 0
        if not first_exchange:
            return head_end
        first_user = next((i for i in range(head_end, n) if messages[i].role == "user"), None)
        if first_user is not None and not is_summary(messages[first_user]):
            return next((i for i in range(first_user + 1, n) if messages[i].role == "user"), n)
        if first_user is not None:
            return first_user  # an earlier summary starts the middle: it gets updated
        return head_end

    def repairs(self, start: int, end: int, *, then_user: bool = False) -> int:
        """Tokens the request adds for ``[start, end)`` when built (results of calls a crash
        left unanswered, the note after tool results a user message follows; see
        :mod:`agent.context.shape`): a summary saves them too. ``then_user``: a user message
        (a summary) follows the range, whatever the transcript has after it."""
        messages = self.messages
        added = self.repair_prefix[end] - self.repair_prefix[start]
        last_sent = next((i for i in range(end - 1, start - 1, -1) if not messages[i].unsent), None)
        if last_sent is None:
            return added
        added += self.note_prefix[last_sent] - self.note_prefix[start]  # notes inside the range
        last = messages[last_sent]  # its note depends on what follows the range
        in_results = last.role == "tool" or bool(last.tool_calls)
        after = None if then_user else next((m for m in messages[end:] if not m.unsent), None)
        if in_results and (after is None or after.role == "user"):  # the prompt comes next
            added += self.note_reply
        return added

    def tail(self, start: int) -> int:
        """Tokens of ``[start, n)`` as the request carries it: ``cost + repairs``, at once."""
        n = len(self.messages)
        size = self.cost(start, n) + self.repair_prefix[n] - self.repair_prefix[start]
        if start > self.last_sent:
            return size
        return size + self.note_prefix[self.last_sent] - self.note_prefix[start] + self.end_note

    def alternate(self, head_end: int, tail_start: int) -> int:
        """Move a usual tail's start back so that it does not start with a user message.

        The summary is a user message: what follows it must not be one too, or chat templates
        that require user and assistant turns to alternate (Mistral's, Gemma's) reject the
        request. The assistant turn before it is kept in the tail.
        """
        messages, n = self.messages, len(self.messages)
        while head_end < tail_start < n and messages[tail_start].role == "user":
            tail_start = max(head_end, _keeps_tool_pairs(messages, tail_start - 1))
        return tail_start

    def kept(self, head_end: int, tail_start: int) -> int:
        """Tokens of what a plan keeps, as the request carries it: the head, then the tail
        ``[tail_start, n)``, with the results and notes the request adds (the summary, a user
        message, follows the head). Without a middle, the whole transcript."""
        if tail_start <= head_end:
            return self.tail(0)
        head = self.cost(0, head_end) + self.repairs(0, head_end, then_user=True)
        return head + self.tail(tail_start)

    def plan(self, shape: _Shape) -> CompressionPlan:
        messages, n = self.messages, len(self.messages)
        head_end = self.head_end(shape.first_exchange)
        tail_start = n
        while tail_start > head_end:  # the tail as the request carries it (results, notes)
            if n - tail_start >= shape.min_tail and self.tail(tail_start - 1) > shape.tail_budget:
                break
            tail_start -= 1
        if shape.usual:
            tail_start = min(tail_start, self.last_user)
        tail_start = _keeps_tool_pairs(messages, max(tail_start, head_end))
        if shape.usual:
            tail_start = self.alternate(head_end, tail_start)
        head_end = min(head_end, tail_start)
        intended = tail_start  # what the rounds summarise, if one call cannot read it all
        rendered = self.rendered[head_end:tail_start]  # rendered[k] is message head_end + k
        total = sum(rendered)
        singles: list[int] = []
        if not shape.usual and total > self.input_limit:
            floor = max(self.input_limit // 3, self.single_budget * 2)
            big = [k for k, v in enumerate(rendered) if v > floor]
            for k in sorted(big, key=lambda k: -rendered[k]):
                message = messages[head_end + k]
                if message.role in ("user", "assistant") and not is_summary(message):
                    singles.append(head_end + k)
                    total -= rendered[k] - (self.single_budget + MESSAGE_OVERHEAD_TOKENS)
                    rendered[k] = self.single_budget + MESSAGE_OVERHEAD_TOKENS
                if total <= self.input_limit:
                    break
        cap_chars = 0
        if not shape.usual and total > self.input_limit:
            # Still too long for one call: every other message is read cut to a share of
            # what the singles' summaries and an earlier summary (read whole: it stands for
            # all before it) leave of the call, so one round covers the range (the rounds
            # carry on if it still does not).
            span = range(head_end, head_end + len(rendered))
            chosen_set = {*singles, *(i for i in span if is_summary(messages[i]))}
            fixed = sum(rendered[i - head_end] for i in chosen_set)
            per = (self.input_limit - fixed) // max(1, len(rendered) - len(chosen_set))
            cap_chars = int(max(MIN_SHARE, per - MESSAGE_OVERHEAD_TOKENS - 12) * self.ratio)
            read = math.ceil((cap_chars + note_chars(cap_chars)) / self.ratio) + 4
            read += MESSAGE_OVERHEAD_TOKENS
            rendered = [
                v if v <= read or head_end + k in chosen_set else read
                for k, v in enumerate(rendered)
            ]
        spent, end = 0, head_end
        while end < tail_start and spent + rendered[end - head_end] <= self.input_limit:
            spent += rendered[end - head_end]
            end += 1
        tail_start = max(head_end, _keeps_tool_pairs(messages, end))
        if shape.usual:
            tail_start = self.alternate(head_end, tail_start)
        chosen = [i for i in singles if i < tail_start]
        read_tokens = sum(rendered[: tail_start - head_end])  # as the call reads it
        plan = self._finish(head_end, tail_start, intended, chosen, shape, read_tokens)
        return replace(plan, share_chars=cap_chars) if cap_chars else plan

    def _finish(
        self,
        head_end: int,
        tail_start: int,
        intended: int,
        singles: list[int],
        shape: _Shape,
        read: int,
    ) -> CompressionPlan:
        tokens_in = self.cost(head_end, tail_start) + self.repairs(head_end, tail_start)
        low = MIN_BUDGET if shape.usual else TIGHT_MIN_BUDGET
        budget = max(low, min(MAX_BUDGET, self.cost(head_end, intended) // 3))
        marker = math.ceil((len(SUMMARY_MARKER) + 2) / self.ratio) + MESSAGE_OVERHEAD_TOKENS
        if self.target is not None and not shape.usual:
            # The summary may be as long as the whole compression's (the rounds read it again
            # with the rest of the middle, when one call cannot read it all).
            final = self.kept(head_end, intended)
            budget = max(TIGHT_MIN_BUDGET, min(budget, self.target - final - marker))
        # the call's prompt with the count's headroom (`agent.context.budget.headroom`, before
        # the server counted anything), and the summary's room after it
        room = self.window - math.ceil((TEMPLATE_TOKENS + read) * 1.15) - 16
        budget = max(TIGHT_MIN_BUDGET, min(budget, room))
        previous = next(
            (i for i in range(head_end, tail_start) if is_summary(self.messages[i])), None
        )
        summary = budget + marker if tail_start > head_end else 0
        after = self.kept(head_end, tail_start) + summary
        return CompressionPlan(
            head_end=head_end,
            tail_start=tail_start,
            tokens_in=tokens_in,
            previous_summary=previous,
            singles=tuple(singles),
            budget=budget,
            single_budget=self.single_budget,
            cut_chars=self.cut_chars,
            single_chars=int(self.input_limit * self.ratio),
            tokens_after=after,
            tokens_reach=min(after, self.kept(head_end, intended) + summary),
            tight=not shape.usual,
        )


def plan_compression(
    messages: Sequence[ChatMessage],
    *,
    window_tokens: int,
    calibration: TokenCalibration | None = None,
    target_tokens: int | None = None,
    tail_fraction: float = 0.25,
    min_tail_messages: int = 6,
    input_fraction: float = 0.6,
) -> CompressionPlan:
    """Choose head, middle and tail.

    Args:
        messages: the active transcript, oldest first.
        window_tokens: the model's context window, in tokens.
        calibration: the session's token count (a default one when None).
        target_tokens: the transcript's size the compression must reach (tokens), so the next
            request fits; None plans the usual compression only.
        tail_fraction: share of the window the usual tail may fill, by estimated tokens.
        min_tail_messages: the usual tail has at least this many messages (fewer if the
            transcript is short).
        input_fraction: share of the window the summary call may read, so that it fits; a
            longer middle is cut at its end (the rest stays, between the summary and the
            tail, for a later compression).

    Returns:
        the plan; ``plan.empty`` when there is nothing worth summarising.
    """
    counter = calibration if calibration is not None else TokenCalibration()
    costs = counter.costs(messages)
    planner = _Planner(
        messages,
        costs,
        window=window_tokens,
        input_limit=int(window_tokens * input_fraction) - TEMPLATE_TOKENS,
        chars_per_token=counter.chars_per_token,
        target=target_tokens,
    )
    usual = planner.plan(
        _Shape(True, min_tail_messages, int(window_tokens * tail_fraction), usual=True)
    )
    # The transcript as the request will carry it (a missing tool result added, and so on).
    if (
        target_tokens is None
        or planner.cost(0, len(messages)) + planner.repairs(0, len(messages)) <= target_tokens
    ):
        return usual
    if not usual.empty and usual.tokens_reach <= target_tokens:
        return usual  # in one call, or in rounds when one call cannot read the whole middle
    tight: list[CompressionPlan] = []
    for first_exchange, min_tail in ((True, 2), (True, 0), (False, 0)):
        head = planner.head_end(first_exchange)
        kept = planner.cost(0, head) + planner.repairs(0, head, then_user=True)
        room = target_tokens - kept - max(TIGHT_MIN_BUDGET, target_tokens // 4)
        plan = planner.plan(_Shape(first_exchange, min_tail, max(0, room), usual=False))
        if plan.empty:
            continue
        if plan.tokens_after <= target_tokens:
            return plan
        tight.append(plan)
    # No bolder plan's call reaches the target alone: the first whose rounds can, else the
    # one that comes closest.
    reaching = [p for p in tight if p.tokens_reach <= target_tokens]
    if reaching:
        return reaching[0]
    options = tight if usual.empty else [usual, *tight]
    return min(options, key=lambda p: (p.tokens_reach, p.tokens_after), default=usual)
