"""Keys through a real pseudo-terminal: Esc typed right behind Enter stops that prompt.

The terminal sends "prompt, Enter, Esc" in one write (a fast typist, or a paste): the input
thread reads the Esc before the UI has even handled the Enter, so nothing runs yet. The Esc
must still stop the prompt that Enter sent, not be lost.

Also: a bracketed paste whose end marker never comes, unknown escape sequences, and keys typed
in the same write as Ctrl+G (the editor).
"""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from demo_model.server import DemoModelServer
from tests.desk.test_pty_stop import (  # noqa: F401 (a fixture)
    PtyScreen,
    desk_in_pty,
    pty_server,
    start_streaming,
)
from tests.support import poll_until

pytestmark = [
    pytest.mark.pty,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty driver test"),
]


def test_esc_typed_right_after_enter_stops_that_prompt(
    pty_server: DemoModelServer,  # noqa: F811
) -> None:
    before = len(pty_server.records.list())
    with desk_in_pty(pty_server) as (proc, screen):
        mark = screen.size
        screen.write(b"Tell me about stopping streams\r\x1b")
        screen.wait_for(b"stopped by you", timeout_s=10.0, start=mark)
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=10.0) == 0
    records = [r for r in pty_server.records.list() if r.id > before]
    assert all(r.outcome != "completed" for r in records)  # never a reply that ran to its end


def read_by_desk(proc: subprocess.Popen[bytes], timeout_s: float = 10.0) -> None:
    """Wait until desk has read every byte written so far (its terminal's input queue is
    empty): what is written next comes in a read of its own."""
    slave = os.open(os.readlink(f"/proc/{proc.pid}/fd/0"), os.O_RDWR | os.O_NOCTTY)
    try:

        def waiting() -> int:
            return int(struct.unpack("i", fcntl.ioctl(slave, termios.FIONREAD, b"\0" * 4))[0])

        assert poll_until(lambda: waiting() == 0, timeout=timeout_s, every_s=0.0005)
    finally:
        os.close(slave)


def test_esc_read_after_the_enter_in_a_read_of_its_own_stops_that_prompt(
    pty_server: DemoModelServer,  # noqa: F811
) -> None:
    before = len(pty_server.records.list())
    with desk_in_pty(pty_server) as (proc, screen):
        mark = screen.size
        screen.write(b"Tell me about stopping streams\r")
        read_by_desk(proc)  # the Enter was read; the UI may not have sent it yet
        screen.write(b"\x1b")
        screen.wait_for(b"stopped by you", timeout_s=10.0, start=mark)
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=10.0) == 0
    records = [r for r in pty_server.records.list() if r.id > before]
    assert all(r.outcome != "completed" for r in records)


def test_keys_typed_during_a_submit_are_the_next_prompt(
    pty_server: DemoModelServer,  # noqa: F811
) -> None:
    before = len(pty_server.records.list())
    with desk_in_pty(pty_server) as (proc, screen):
        mark = screen.size
        screen.write(b"A20\r")
        read_by_desk(proc)
        screen.write(b"B20\r")  # while the first submit may still be in hand
        read_by_desk(proc)
        screen.wait_for(b"1 queued", timeout_s=10.0, start=mark)  # B20 waits, whole
        record = pty_server.records.wait_for_record(
            lambda r: r.id > before and "A20" in str(r.messages), 10.0
        )
        assert record is not None
        assert [m["content"] for m in record.messages if m["role"] == "user"] == ["A20"]
        screen.write(b"\x11")
        assert proc.wait(timeout=10.0) == 0


def test_esc_and_the_next_prompt_in_one_read_stop_the_first_and_send_the_second(
    pty_server: DemoModelServer,  # noqa: F811
) -> None:
    before = len(pty_server.records.list())
    with desk_in_pty(pty_server) as (proc, screen):
        mark = screen.size
        screen.write(b"Tell me about stopping streams\r\x1breply with exactly: second\r")
        screen.wait_for(b"stopped by you", timeout_s=10.0, start=mark)
        record = pty_server.records.wait_for_record(
            lambda r: r.id > before and "second" in str(r.messages), 10.0
        )
        assert record is not None
        last = [m["content"] for m in record.messages if m["role"] == "user"][-1]
        # The second prompt whole: no ^, no Alt, nothing typed glued to it (the stopped prompt,
        # which has no reply, comes before it in the same user message: strict alternation).
        assert last.split("\n\n")[-1] == "reply with exactly: second" and "^" not in last
        screen.write(b"\x11")
        assert proc.wait(timeout=10.0) == 0
    firsts = [
        r
        for r in pty_server.records.list()
        if r.id > before and r.messages[-1]["content"] == "Tell me about stopping streams"
    ]
    assert all(r.outcome != "completed" for r in firsts)  # stopped, or never sent


def test_a_prompt_typed_ahead_of_desk_is_sent_once_it_is_up(
    pty_server: DemoModelServer,  # noqa: F811
) -> None:
    # Typed before desk took the terminal: the terminal turned that Enter into a line feed
    # (Ctrl+J, a new line in the box); it is an Enter all the same.
    before = len(pty_server.records.list())
    with desk_in_pty(pty_server, typed_ahead=b"reply with exactly: typed ahead\r") as (proc, _):
        record = pty_server.records.wait_for_record(
            lambda r: r.id > before and "typed ahead" in str(r.messages), 20.0
        )
        assert record is not None
        users = [m["content"] for m in record.messages if m["role"] == "user"]
        assert users == ["reply with exactly: typed ahead"]


PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"


def write_in_bursts(screen: PtyScreen, data: bytes, burst: int = 8192, gap_s: float = 0.02) -> None:
    """Type ``data`` whole, ``burst`` bytes at a time with a ``gap_s`` pause between (a
    terminal on a link writes a long paste in bursts; a pty also takes a long write in parts)."""
    for start in range(0, len(data), burst):
        view = memoryview(data)[start : start + burst]
        while view:
            view = view[os.write(screen._fd, view) :]
        time.sleep(gap_s)  # the link's pace, not a wait for desk


def test_a_paste_whose_end_never_comes_ends_by_itself_and_the_keys_after_it_work(
    pty_server: DemoModelServer,  # noqa: F811
) -> None:
    with desk_in_pty(pty_server) as (proc, screen):
        start_streaming(pty_server, screen)
        mark = screen.size
        screen.write(PASTE_START + b"pasted words")  # no end marker, ever
        screen.wait_for(b"pasted words", timeout_s=10.0, start=mark)  # in the box
        screen.write(b"\x1b")  # Esc stops the reply
        screen.wait_for(b"stopped by you", timeout_s=10.0, start=mark)
        screen.write(b" then typed")
        screen.wait_for(b"pasted words then typed", timeout_s=10.0, start=mark)
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=10.0) == 0
        shown = screen.since(mark)
    assert b"Traceback" not in shown and b"ParseError" not in shown


def test_a_long_paste_is_one_paste(pty_server: DemoModelServer) -> None:  # noqa: F811
    # 185 KB with a line break (CR, as terminals paste them) every line: were it cut in two,
    # the rest would be typed, and its first line break would send a prompt
    lines = [f"line {i:05d} of the pasted text, long enough to count them all" for i in range(3040)]
    text = "\r".join([*lines, "end of the paste"]).encode()
    assert len(text) > 185_000
    before = len(pty_server.records.list())
    with desk_in_pty(pty_server) as (proc, screen):
        mark = screen.size
        write_in_bursts(screen, PASTE_START + text + PASTE_END + b" typed after")
        screen.wait_for(b"end of the paste typed after", timeout_s=30.0, start=mark)
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=15.0) == 0
    assert len(pty_server.records.list()) == before  # nothing was sent


def test_unknown_escape_sequences_type_nothing(pty_server: DemoModelServer) -> None:  # noqa: F811
    before = len(pty_server.records.list())
    with desk_in_pty(pty_server) as (proc, screen):
        screen.write(b"reply with exactly: a\x1b[999~b\x1b[57~c\r")
        record = pty_server.records.wait_for_record(
            lambda r: r.id > before and "exactly" in str(r.messages), 10.0
        )
        assert record is not None
        assert record.messages[-1]["content"] == "reply with exactly: abc"
        screen.write(b"\x11")
        assert proc.wait(timeout=10.0) == 0


EDITOR = """#!/bin/sh
cp "$1" "$1.seen"  # what the editor opened with
printf '%s|edited' "$(cat "$1")" > "$1"
"""


def test_keys_typed_before_ctrl_g_in_one_write_are_in_the_editor_those_after_follow_it(
    pty_server: DemoModelServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    editor = tmp_path / "edit.sh"
    editor.write_text(EDITOR.replace("$1.seen", str(tmp_path / "seen.txt")))
    editor.chmod(0o755)
    before = len(pty_server.records.list())
    with desk_in_pty(pty_server, {"VISUAL": str(editor)}) as (proc, screen):
        mark = screen.size
        screen.write(b"burst3 \x07after")  # Ctrl+G right behind the keys, more behind it
        screen.wait_for(b"burst3 |editedafter", timeout_s=10.0, start=mark)
        assert (tmp_path / "seen.txt").read_text() == "burst3 "  # not "burst3 after"
        screen.write(b"\r")
        record = pty_server.records.wait_for_record(  # not the server's count of a request
            lambda r: r.id > before and r.path.endswith("/chat/completions"), 10.0
        )
        assert record is not None and record.messages[-1]["content"] == "burst3 |editedafter"
        screen.write(b"\x11")
        assert proc.wait(timeout=10.0) == 0


@pytest.mark.parametrize("burst", [False, True], ids=["apart", "one-write"])
def test_esc_in_the_command_palette_closes_it_and_the_turn_runs_to_its_end(
    burst: bool,
    pty_server: DemoModelServer,  # noqa: F811
) -> None:
    pty_server.configure(max_tokens=60)  # two seconds at 30 tokens/s
    with desk_in_pty(pty_server) as (proc, screen):
        record = start_streaming(pty_server, screen)
        if burst:  # both read at once: the input thread reads the Esc before the app opens it
            screen.write(b"\x10\x1b")
        else:
            mark = screen.size
            screen.write(b"\x10")  # Ctrl+P
            screen.wait_for(b"Search for commands", timeout_s=10.0, start=mark)
            screen.write(b"\x1b")  # read by the input thread: the palette's key, not a stop
        done = pty_server.records.wait_for_record(
            lambda r: r.id == record.id and r.outcome != "running", timeout=30.0
        )
        assert done is not None and done.outcome == "completed"
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=10.0) == 0


def test_ctrl_c_read_with_the_words_before_it_empties_the_box_then_two_quit(
    pty_server: DemoModelServer,  # noqa: F811
) -> None:
    with desk_in_pty(pty_server) as (proc, screen):
        mark = screen.size
        screen.write(b"draft words\x03")  # one read: the words reach the box after the key
        screen.wait_for(b"emptied the prompt box", timeout_s=10.0, start=mark)
        assert proc.poll() is None  # a line dropped, no quit press
        screen.write(b"\x03")
        screen.wait_for(b"again to quit", timeout_s=10.0, start=mark)
        screen.write(b"\x03")
        assert proc.wait(timeout=10.0) == 0
