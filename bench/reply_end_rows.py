"""Does a fast reply's end show? The real ``desk`` in tmux, a reply streamed one token per event.

    .venv/bin/python bench/reply_end_rows.py [--runs 10] [--rate 20000] [--hog 2] [--paragraphs 6]

Each run starts a fresh ``desk`` (fresh config and session folders) in a 120x40 tmux window on a
socket of its own, points it at a small model server in this process that answers every chat
request with the same reply (paragraphs, then a code block, a table and a closing paragraph
that ends with ``END-MARK``), one token (about four characters) per SSE event at ``--rate``
events a second, and sends a prompt. Once the server sent the whole reply and the screen
stopped changing (or after 10 s) it reads the window (``tmux capture-pane -p``): a run passes
if ``END-MARK`` shows. The reply is long enough that the transcript's scrollbar appears as it
ends. ``--hog N`` runs N busy processes on the cores meanwhile (``bench/load.py``). Prints one
line per run and a JSON summary. ``DESK_COMMAND`` runs another desk (e.g. another tree's
``.venv/bin/desk``).

Figures (2 cores, ``--hog 2``, load average 5.1 after and 3.9 before): before the
fix 1 of 10 runs showed the end, the transcript laying the reply out at one width and then the
other for as long as it was watched; after, 10 of 10.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import hogs  # noqa: E402

SOCKET = "desk-reply-end"
"""The tmux socket (``--socket`` overrides)."""
END = "END-MARK"


def reply_text(paragraphs: int) -> str:
    """The reply: ``paragraphs`` paragraphs, a code block, a table, a closing paragraph."""
    prose = [
        f"Paragraph {i}: the stream goes on with words about cuts, pieces and widths, "
        "so that each paragraph wraps to two rows of the transcript at a hundred and "
        "twenty columns, and the reply grows past the height of the window."
        for i in range(1, paragraphs + 1)
    ]
    code = "```python\ndef total(rows):\n    return sum(row.cost for row in rows)\n```"
    table = "| name | rows | cost |\n|---|---|---|\n| alpha | 12 | 3.5 |\n| beta | 40 | 9.25 |"
    return "\n\n".join([*prose, code, table, f"That is all for now. {END}"])


def tokens(text: str, size: int = 4) -> list[str]:
    """``text`` cut into ``size``-character tokens."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def _event(delta: dict[str, object], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "tiny",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Server:
    """An OpenAI-compatible chat server on loopback answering with :func:`reply_text`."""

    def __init__(self, text: str, rate: float) -> None:
        self._tokens = tokens(text)
        self._rate = rate
        self.done = threading.Event()
        """Set when a whole reply was sent."""
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.port = 0
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            method, path = lines[0].decode().split()[:2]
            length = [h for h in lines if h.lower().startswith(b"content-length:")]
            if length:
                await reader.readexactly(int(length[0].split(b":")[1]))
            if method != "POST":
                body = json.dumps(
                    {"object": "list", "data": [{"id": "tiny", "object": "model"}]}
                    if "models" in path
                    else {"status": "ok"}
                ).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
                return
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            )
            writer.write(_chunked(_event({"role": "assistant", "content": ""})))
            start = time.monotonic()
            for i, token in enumerate(self._tokens):
                wait = i / self._rate - (time.monotonic() - start)
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(_chunked(_event({"content": token})))
                await writer.drain()
            writer.write(_chunked(_event({}, "stop") + b"data: [DONE]\n\n") + b"0\r\n\r\n")
            await writer.drain()
            self.done.set()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            writer.close()

    def stop(self) -> None:
        """Stop serving."""
        self._loop.call_soon_threadsafe(self._loop.stop)


def tmux(*args: str) -> str:
    """Run ``tmux -L SOCKET ARGS`` and return its output."""
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False
    ).stdout


def tmux_alive() -> bool:
    """True while the tmux server on the socket still runs."""
    done = subprocess.run(["tmux", "-L", SOCKET, "has-session"], capture_output=True, check=False)
    return done.returncode == 0


def settled_pane(timeout_s: float) -> str:
    """The window's text once it stayed the same for half a second (or after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    last, since = "", time.monotonic()
    while time.monotonic() < deadline:
        pane = tmux("capture-pane", "-p", "-t", "t")
        if pane != last:
            last, since = pane, time.monotonic()
        elif time.monotonic() - since > 0.5:
            break
        time.sleep(0.05)
    return last


def one_run(desk: str, server: Server) -> bool:
    """One fresh desk, one prompt; True if the reply's end marker shows."""
    home = tempfile.mkdtemp(prefix="desk-reply-end-")
    server.done.clear()
    env = (
        f"env -u TEXTUAL -u COLUMNS -u LINES TERM=xterm-256color COLORTERM=truecolor "
        f"XDG_CONFIG_HOME={home}/config XDG_DATA_HOME={home}/data"
    )
    command = f"cd {home} && {env} {desk} --base-url http://127.0.0.1:{server.port}/v1"
    tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", command)
    try:
        deadline = time.monotonic() + 30
        while "tiny" not in tmux("capture-pane", "-p", "-t", "t"):
            if time.monotonic() > deadline:
                raise RuntimeError("desk did not start:\n" + tmux("capture-pane", "-p", "-t", "t"))
            time.sleep(0.1)
        tmux("send-keys", "-t", "t", "Show me the totals", "Enter")
        if not server.done.wait(30):
            raise RuntimeError("no reply was sent")
        pane = settled_pane(10)
        shown = END in pane
        if not shown:
            print(pane, file=sys.stderr)
        return shown
    finally:
        tmux("kill-server")
        while tmux_alive():
            time.sleep(0.1)
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    global SOCKET
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rate", type=float, default=20_000.0, help="SSE events per second")
    ap.add_argument("--hog", type=int, default=2, help="busy processes meanwhile")
    ap.add_argument("--paragraphs", type=int, default=6)
    ap.add_argument("--socket", default=SOCKET, help="tmux socket name (-L)")
    args = ap.parse_args()
    SOCKET = args.socket
    desk = os.environ.get("DESK_COMMAND") or str(Path(sys.executable).with_name("desk"))
    server = Server(reply_text(args.paragraphs), args.rate)
    results = []
    try:
        with hogs(args.hog):
            for run in range(1, args.runs + 1):
                shown = one_run(desk, server)
                results.append(shown)
                print(f"run {run}: {'end shown' if shown else 'END MISSING'}", flush=True)
    finally:
        server.stop()
    summary = {
        "runs": len(results),
        "end_shown": sum(results),
        "rate": args.rate,
        "hog": args.hog,
        "load_average": os.getloadavg(),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
