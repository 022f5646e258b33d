"""A desk killed with SIGKILL in any phase of a compression leaves a consistent store: the
transcript is the one before or the one after, never a mix, and the lease expires."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agent.compression.plan import SUMMARY_MARKER
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from tests.compression.kit import long_transcript

CHILD = textwrap.dedent(
    """
    import sys
    from agent.compression import Compressor
    from agent.compression.backend import StoreBackend
    from agent.provider.client import ChatClient, ProviderConfig
    from agent.store import SqliteStore

    db, session, url = sys.argv[1:4]
    store = SqliteStore(db)
    compressor = Compressor(
        ChatClient(ProviderConfig(base_url=url, model="demo")),
        StoreBackend(store),
        session,
        store.transcript.load_history(session),
        window_tokens=4000,
        listener=lambda p: print(p.phase, flush=True),
    )
    print("outcome", compressor.run().status, flush=True)
    """
)


@pytest.mark.parametrize("phase", ["lease", "prepare", "summarize", "commit", "done"])
def test_sigkill_in_any_phase_leaves_the_store_consistent(
    phase: str, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    store = SqliteStore(db)
    session = store.sessions.create_session(title="t", model="demo", messages=long_transcript()).id
    before = store.transcript.load_history(session)
    store.close()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), session, demo_server.base_url],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.stdout is not None
    for line in child.stdout:  # each phase is printed as it begins
        if line.split()[0] == phase:
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(10)
    child.stdout.close()

    later = SqliteStore(db, clock=lambda: time.time() + 121.0)  # past any lease's expiry
    try:
        assert later.integrity_check() == "ok"
        after = later.transcript.load_history(session)
        if after != before:  # the commit landed whole: head, one summary, tail
            summaries = [m for m in after if m.content.startswith(SUMMARY_MARKER)]
            assert len(summaries) == 1
            assert after[:3] == before[:3] and after[-6:] == before[-6:]
        lease = later.leases.get_lease(session)
        assert lease is None or lease.expires_at <= time.time() + 120.5
        assert later.leases.acquire_lease(session, "next-desk/1", 120.0), "the lease never expired"
    finally:
        later.close()
