"""``desk gateway|serve|run`` subcommands, ``desk --help``, and the desk over ``--gateway-cmd``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from demo_model.server import DemoModelServer
from desk.__main__ import main
from desk.app import DeskApp
from desk.config import ConnectionInfo, parse_options
from desk.widgets import AssistantReply
from tests.desk.kit import submit_and_get_reply, wait_until
from tui_gateway.wire.client import RemoteGateway

pytestmark = pytest.mark.anyio


def desk_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "desk", *args]


def test_desk_run_prints_the_reply_and_exits_zero() -> None:
    done = subprocess.run(
        desk_cmd("run", "--demo", "reply with exactly: hi"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hi"


def test_subcommand_dispatch_returns_its_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--no-such-flag", "x"]) == 2
    assert main(["gateway"]) == 2  # only --stdio is served
    assert "desk" in capsys.readouterr().err


def test_help_mentions_the_subcommands_and_gateway_cmd(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for text in ("desk gateway --stdio", "desk serve", "desk run", "--gateway-cmd"):
        assert text in out


def test_gateway_cmd_is_parsed() -> None:
    options = parse_options(["--gateway-cmd", "desk gateway --stdio --demo"], {})
    assert options.gateway_cmd == "desk gateway --stdio --demo"


@pytest.fixture
def remote(demo_server: DemoModelServer) -> Iterator[RemoteGateway]:
    command = desk_cmd("gateway", "--stdio", "--base-url", demo_server.base_url, "--model", "demo")
    gateway = RemoteGateway(command)
    try:
        yield gateway
    finally:
        gateway.shutdown(timeout_s=5.0)
        assert gateway.returncode is not None


async def test_desk_over_a_gateway_in_a_child_process(
    remote: RemoteGateway, demo_server: DemoModelServer
) -> None:
    ready = remote.ready
    assert ready.base_url == demo_server.base_url and not ready.demo
    shown = ConnectionInfo(ready.model, ready.base_url, is_demo=ready.demo, source="--gateway-cmd")
    app = DeskApp(remote, shown, handle_signals=False)
    async with app.run_test(size=(120, 40)) as pilot:
        reply = await submit_and_get_reply(app, pilot, "reply with exactly: over the wire")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the first reply")
        assert reply.outcome == "completed" and reply.text == "over the wire"
        long_reply: AssistantReply = await submit_and_get_reply(
            app, pilot, "Explain how a stop reaches the model server"
        )
        await wait_until(pilot, lambda: long_reply.text, what="streaming")
        await pilot.press("escape")
        await wait_until(pilot, lambda: long_reply.outcome is not None, what="the stop")
        assert long_reply.outcome == "interrupted"
        assert "you" in long_reply.note.lower() or "stopped" in long_reply.note.lower()
        assert app.running_turn is None
