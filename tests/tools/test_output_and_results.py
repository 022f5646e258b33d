"""OutputBuffer truncation and stopped_result text: head and tail kept, the stop named right."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.stops import StopRequest, Surface
from agent.tools import OutputBuffer, stopped_result, truncate_text
from agent.tools.output import cut_marker


def test_short_output_is_kept_whole() -> None:
    assert truncate_text("hello\n", 100) == ("hello\n", False)


def test_long_output_keeps_head_and_tail_with_the_count_cut() -> None:
    text, truncated = truncate_text("A" * 50 + "B" * 12_345 + "C" * 50, 100)
    assert truncated
    assert text == "A" * 50 + "\n[... 12,345 bytes cut ...]\n" + "C" * 50


def test_cuts_never_split_a_character() -> None:
    text, _ = truncate_text("€" * 100, 10)  # 3 bytes each: 5 + 5 bytes do not fit whole chars
    head, marker, tail = text.split("\n")
    assert head == "€" and tail == "€"
    assert marker == cut_marker(300 - 6)


def test_memory_stays_bounded_however_much_arrives() -> None:
    buffer = OutputBuffer(1_000)
    for _ in range(10_000):
        buffer.append(b"x" * 1_000)
    assert buffer.total_bytes == 10_000_000
    assert len(buffer._head) + len(buffer._tail) == 1_000
    assert buffer.cut_bytes == 9_999_000


MARKED = re.compile(r"^(.*?)\n?\[\.\.\. ([\d,]+) bytes cut \.\.\.\]\n?(.*)$", re.S)


# Without newlines in the stream, the marker's own line breaks are unambiguous. Lone
# surrogates are left out: output is decoded bytes, which never holds them.
NO_NEWLINE = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=40
)


@given(st.lists(NO_NEWLINE, max_size=30), st.integers(min_value=2, max_value=200))
def test_truncation_keeps_a_prefix_and_a_suffix_of_the_stream(
    chunks: list[str], max_bytes: int
) -> None:
    buffer = OutputBuffer(max_bytes)
    for chunk in chunks:
        buffer.append(chunk)
    whole = "".join(chunks)
    text = buffer.text()
    if not buffer.truncated:
        assert text == whole
        return
    match = MARKED.match(text)
    assert match is not None, text
    head, cut, tail = match.group(1), int(match.group(2).replace(",", "")), match.group(3)
    assert len(head.encode()) <= max_bytes // 2
    assert len(tail.encode()) <= max_bytes - max_bytes // 2
    assert whole.startswith(head)
    assert whole.endswith(tail)
    assert len(head.encode()) + cut + len(tail.encode()) == len(whole.encode())


def test_a_user_stop_says_the_user_stopped_it() -> None:
    result = stopped_result(StopRequest.by_user(Surface.DESK_KEY), "line 1\n", children_ended=2)
    assert result.is_error and result.stopped_by is not None
    assert result.content == (
        "stopped by the user (2 child processes ended)\n\npartial output before the stop:\nline 1\n"
    )
    assert result.children_ended == 2


def test_a_system_stop_never_claims_the_user_asked() -> None:
    stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "quitting")
    result = stopped_result(stop)
    assert result.content == "stopped by the system: quitting"
    assert "user" not in result.content
    assert stopped_result(stop, started=False).content == "not run: stopped by the system: quitting"


def test_partial_output_in_a_stopped_result_is_cut_to_the_budget() -> None:
    result = stopped_result(
        StopRequest.by_user(Surface.DESK_KEY), "x" * 1_000, max_output_bytes=100
    )
    assert result.truncated
    assert "[... 900 bytes cut ...]" in result.content


def test_one_child_process_is_singular() -> None:
    result = stopped_result(StopRequest.by_user(Surface.API_STOP), children_ended=1)
    assert result.content == "stopped by the user (1 child process ended)"


@settings(deadline=None, max_examples=60)
@given(st.integers(min_value=200, max_value=60_000), st.integers(min_value=64, max_value=4096))
def test_a_cut_output_keeps_whole_lines_on_both_sides(count: int, budget: int) -> None:
    # `seq 1 50000` kept to 2,048 bytes gave the model "[... 286,846 bytes cut ...]" then
    # "830", the end of 49830, which it read as a number of its own
    numbers = "".join(f"{n}\n" for n in range(1, count + 1))
    kept, truncated = truncate_text(numbers, budget)
    lines = kept.splitlines()
    if not truncated:
        assert kept == numbers
        return
    marker = next(i for i, line in enumerate(lines) if line.endswith("bytes cut ...]"))
    head, tail = lines[:marker], lines[marker + 1 :]
    assert head == [str(n) for n in range(1, len(head) + 1)]
    assert tail == [str(n) for n in range(count - len(tail) + 1, count + 1)]
    assert len(kept.encode()) <= budget + len(lines[marker]) + 2
