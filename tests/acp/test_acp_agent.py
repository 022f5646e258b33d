"""``desk acp`` driven by the official SDK's client side, against the demo model.

A session streams a reply, a tool call asks the client's permission, a cancel mid-stream is
answered ``cancelled`` and booked as the person's stop from the editor (``acp.cancel``), a new
process loads the session and replays it, and a client that closes stdin mid-turn is the
system's stop (``acp.disconnect``): the agent exits and leaves no process behind.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from tests.mcp.conftest import time_command
from tests.support import cut_short, poll_until
from tests.wire.kit import ROOT, child_env

if TYPE_CHECKING:  # imported in the tests: collecting them loads no SDK
    from acp import schema as s

STORY = "tell me a story about a lighthouse"


class Editor:
    """The client side: keeps every update, answers permission requests with ``answer``."""

    def __init__(self, answer: str = "once") -> None:
        self.answer = answer
        self.updates: list[tuple[str, Any]] = []
        self.asked: list[s.ToolCallUpdate] = []
        self.notes: list[tuple[str, dict[str, Any]]] = []
        self.changed = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: s.ToolCallUpdate, options: list[Any], **_: Any
    ) -> s.RequestPermissionResponse:
        from acp import schema as s

        self.asked.append(tool_call)
        assert {o.kind for o in options} == {"allow_once", "allow_always", "reject_once"}
        return s.RequestPermissionResponse(
            outcome=s.AllowedOutcome(outcome="selected", option_id=self.answer)
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.notes.append((method, params))

    def on_connect(self, conn: Any) -> None:
        pass

    def text(self, session_id: str, kind: type[Any] | None = None) -> str:
        """What the agent said in the session (``kind``: the updates read, its message chunks
        unless told)."""
        from acp import schema as s

        kind = kind or s.AgentMessageChunk
        return "".join(
            u.content.text for sid, u in self.updates if sid == session_id and isinstance(u, kind)
        )

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
        async def loop() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(loop(), timeout)


def agent_argv(provider: ProviderConfig, db: Path) -> list[str]:
    return [
        "-m",
        "tui_gateway.acp",
        "--base-url",
        provider.base_url,
        "--model",
        provider.model,
        "--db",
        str(db),
    ]


def spawn(editor: Editor, provider: ProviderConfig, db: Path, stderr: Any = None) -> Any:
    from acp.stdio import spawn_agent_process

    return spawn_agent_process(
        editor,
        sys.executable,
        *agent_argv(provider, db),
        env=child_env(),
        cwd=ROOT,
        transport_kwargs={"shutdown_timeout": 30.0, "stderr": stderr},
    )


def turn_rows(db: Path, session_id: str) -> list[Any]:
    store = SqliteStore(db)
    try:
        return store.turns.list_turns(session_id)
    finally:
        store.close()


async def _first_process(
    provider: ProviderConfig, demo: DemoModelServer, db: Path, cwd: Path
) -> tuple[str, Editor]:
    from acp import schema as s

    editor = Editor()
    async with spawn(editor, provider, db) as (conn, process):
        hello = await conn.initialize(protocol_version=1)
        caps = hello.agent_capabilities
        assert caps is not None and caps.load_session
        assert caps.prompt_capabilities is not None and caps.prompt_capabilities.embedded_context
        new = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        sid = new.session_id
        assert new.modes is not None and new.modes.current_mode_id == "ask"

        done = await conn.prompt(
            session_id=sid,
            prompt=[s.TextContentBlock(type="text", text="reply with exactly: hi ACP")],
        )
        assert done.stop_reason == "end_turn"
        assert editor.text(sid) == "hi ACP"
        assert any(method == "desk/context" for method, _ in editor.notes), editor.notes

        tool = 'call tool shell with {"command": "echo from the editor"}'
        done = await conn.prompt(
            session_id=sid, prompt=[s.TextContentBlock(type="text", text=tool)]
        )
        assert done.stop_reason == "end_turn"
        [asked] = editor.asked
        assert asked.title.startswith("echo from the editor") and asked.kind == "execute"
        started = [u for _, u in editor.updates if isinstance(u, s.ToolCallStart)]
        assert started and started[-1].tool_call_id == asked.tool_call_id
        finished = [u for _, u in editor.updates if isinstance(u, s.ToolCallProgress)]
        assert finished[-1].status == "completed"
        assert "from the editor" in finished[-1].content[0].content.text

        demo.configure(tokens_per_second=40.0)
        before = len(editor.updates)
        story = asyncio.ensure_future(
            conn.prompt(session_id=sid, prompt=[s.TextContentBlock(type="text", text=STORY)])
        )
        await editor.wait_for(
            lambda: any(isinstance(u, s.AgentMessageChunk) for _, u in editor.updates[before:])
        )
        await conn.cancel(session_id=sid)
        stopped = await asyncio.wait_for(story, 20.0)
        assert stopped.stop_reason == "cancelled"
        cut_short(demo)
        demo.configure(tokens_per_second=400.0)
    assert process.returncode == 0
    return sid, editor


async def _second_process(
    provider: ProviderConfig, db: Path, cwd: Path, sid: str, stderr: Any
) -> tuple[Editor, int, list[int]]:
    from acp import schema as s

    editor = Editor()
    async with spawn(editor, provider, db, stderr) as (conn, process):
        await conn.initialize(protocol_version=1)
        loaded = await conn.load_session(cwd=str(cwd), session_id=sid, mcp_servers=[])
        assert loaded is not None
        replayed = editor.text(sid, s.UserMessageChunk)
        assert "reply with exactly: hi ACP" in replayed and STORY in replayed
        assert editor.text(sid).startswith("hi ACP")
        calls = [u for _, u in editor.updates if isinstance(u, s.ToolCallStart)]
        assert [c.title for c in calls] == ["echo from the editor"]

        await conn.set_session_mode(session_id=sid, mode_id="allow")
        sleeper = 'call tool shell with {"command": "sleep 60"}'
        running = asyncio.ensure_future(
            conn.prompt(session_id=sid, prompt=[s.TextContentBlock(type="text", text=sleeper)])
        )
        agent = psutil.Process(process.pid)

        def sleeping() -> bool:
            try:
                return any("sleep" in " ".join(c.cmdline()) for c in _alive(agent))
            except psutil.Error:  # a process ended while it was read
                return False

        started = await asyncio.to_thread(poll_until, sleeping, 30.0)
        assert started, "the shell call never started"
        descendants = [c.pid for c in agent.children(recursive=True)]
        assert process.stdin is not None
        process.stdin.close()  # the editor goes away mid-turn
        code = await asyncio.wait_for(process.wait(), 30.0)
        running.cancel()
    return editor, code, descendants


def _alive(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children(recursive=True)
    except psutil.Error:
        return []


def test_an_editor_drives_desk_over_acp(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    sid, editor = asyncio.run(_first_process(provider, demo_server, db, tmp_path))
    rows = turn_rows(db, sid)
    assert [r.exit_reason for r in rows] == ["completed", "completed", "interrupted_by_user"]
    assert rows[-1].stop_surface == "acp.cancel"

    with (tmp_path / "stderr").open("w") as stderr:
        _editor, code, descendants = asyncio.run(
            _second_process(provider, db, tmp_path, sid, stderr)
        )
    assert code == 0
    said = (tmp_path / "stderr").read_text().splitlines()
    assert len([line for line in said if "could not send to the client" in line]) <= 1
    assert descendants, "the shell call ran no process"
    assert poll_until(lambda: not any(psutil.pid_exists(p) and _running(p) for p in descendants))
    last = turn_rows(db, sid)[-1]
    assert last.exit_reason == "interrupted_by_system(acp.disconnect)"


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_the_editors_mcp_server_and_the_modes(provider: ProviderConfig, tmp_path: Path) -> None:
    from acp import schema as s

    async def drive() -> tuple[Editor, list[str], bool]:
        from acp import schema as s

        editor = Editor()
        time_server = s.McpServerStdio(name="time", command=time_command(), args=[], env=[])
        reasons = []
        async with spawn(editor, provider, tmp_path / "desk.db") as (conn, process):
            await conn.initialize(protocol_version=1)
            new = await conn.new_session(cwd=str(tmp_path), mcp_servers=[time_server])
            sid = new.session_id
            agent = psutil.Process(process.pid)

            def serving() -> bool:  # desk started the editor's MCP server, under its guard
                try:
                    return any("mcp-server-time" in " ".join(c.cmdline()) for c in _alive(agent))
                except psutil.Error:
                    return False

            started = await asyncio.to_thread(poll_until, serving, 60.0)
            calls = (("echo allowed", "allow"), ("echo refused", "read-only"))
            for command, mode in calls:
                await conn.set_session_mode(session_id=sid, mode_id=mode)
                text = f'call tool shell with {{"command": "{command}"}}'
                done = await conn.prompt(
                    session_id=sid, prompt=[s.TextContentBlock(type="text", text=text)]
                )
                reasons.append(done.stop_reason)
        return editor, reasons, started

    editor, reasons, started = asyncio.run(drive())
    assert started, "the editor's MCP server was not started"
    assert reasons == ["end_turn", "end_turn"]
    assert editor.asked == []  # the modes answered, the editor was never asked
    allowed, refused = [u for _, u in editor.updates if isinstance(u, s.ToolCallProgress)]
    assert allowed.status == "completed" and "allowed" in allowed.content[0].content.text
    assert refused.status == "failed"


class Undecided(Editor):
    """An editor whose person never answers a permission request."""

    async def request_permission(
        self, session_id: str, tool_call: s.ToolCallUpdate, options: list[Any], **_: Any
    ) -> s.RequestPermissionResponse:
        self.asked.append(tool_call)
        self.changed.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_a_cancel_as_the_prompt_arrives_and_during_a_permission_request(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    demo_server.configure(tokens_per_second=40.0)

    async def drive() -> tuple[str, list[str]]:
        from acp import schema as s
        from acp.stdio import spawn_agent_process

        editor = Undecided()
        sent: dict[str, asyncio.Event] = {"session/prompt": asyncio.Event()}

        def outgoing(event: Any) -> None:
            method = event.message.get("method")
            if event.direction.value == "outgoing" and method in sent:
                sent[method].set()

        spawned = spawn_agent_process(
            editor,
            sys.executable,
            *agent_argv(provider, db),
            env=child_env(),
            cwd=ROOT,
            transport_kwargs={"shutdown_timeout": 30.0, "stderr": None},
            observers=[outgoing],
        )
        reasons = []
        async with spawned as (conn, _process):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            text = [s.TextContentBlock(type="text", text=STORY)]
            early = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text))
            await sent["session/prompt"].wait()  # the cancel is the very next line
            await conn.cancel(session_id=sid)
            reasons.append((await asyncio.wait_for(early, 20.0)).stop_reason)

            tool = [s.TextContentBlock(type="text", text='call tool shell with {"command": "ls"}')]
            asking = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=tool))
            await editor.wait_for(lambda: bool(editor.asked))
            await conn.cancel(session_id=sid)
            reasons.append((await asyncio.wait_for(asking, 20.0)).stop_reason)
        return sid, reasons

    sid, reasons = asyncio.run(drive())
    assert reasons == ["cancelled", "cancelled"]
    rows = turn_rows(db, sid)
    assert [(r.exit_reason, r.stop_surface) for r in rows] == [
        ("interrupted_by_user", "acp.cancel"),
        ("interrupted_by_user", "acp.cancel"),
    ]
