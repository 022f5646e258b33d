"""``python -m demo_model`` runs alone, prints its URL, and exits cleanly on a signal."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_cli_serves_and_exits_on_signal(sig: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "demo_model", "--port", "0", "--tps", "2000", "--slots", "2"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        root = base_url.removesuffix("/v1")
        assert httpx.get(root + "/health", timeout=5).json() == {"status": "ok"}
        assert len(httpx.get(root + "/slots", timeout=5).json()) == 2
        reply = httpx.post(
            base_url + "/chat/completions",
            json={"messages": [{"role": "user", "content": "reply with exactly: pong"}]},
            timeout=5,
        )
        assert reply.json()["choices"][0]["message"]["content"] == "pong"
        process.send_signal(sig)
        assert process.wait(timeout=10) == 0
        assert process.stderr is not None
        assert process.stderr.read() == ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
