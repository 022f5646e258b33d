"""Through the gateway: with sandbox = workspace-write the approval card names the sandbox, and
the approved shell call writes in the workspace but not outside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.tools.sandbox import bwrap_problem
from contract.events import ApprovalRequest, ToolComplete
from demo_model import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=str(bwrap_problem()))


def test_the_card_names_the_sandbox_and_the_call_stays_in_the_workspace(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    outside = tmp_path / "outside.txt"
    config = GatewayConfig(provider=provider, cwd=workspace, sandbox="workspace-write")
    gateway = Gateway(config)
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        command = f"echo in > in.txt; echo out > {outside} || echo refused"
        prompt = "call tool shell with " + json.dumps({"command": command})
        turn = gateway.prompt_submit(session, prompt).turn_id
        assert log.wait_for(lambda _e: bool(log.of_type(ApprovalRequest)), 30)
        (request,) = log.of_type(ApprovalRequest)
        assert request.reason == "sandbox: workspace-write, no network"
        assert gateway.approval_respond(session, request.request_id, "once")
        assert log.complete(turn, 60).status == "completed"
        (done,) = log.of_type(ToolComplete)
        assert done.exit_code == 0  # the write outside went to the call's own /tmp...
        assert (workspace / "in.txt").read_text() == "in\n" and not outside.exists()  # ...only
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
