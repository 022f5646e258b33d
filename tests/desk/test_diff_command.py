"""``/diff`` in the desk: what the session's turns changed in the workspace, under a line that
counts it (the preview widget is loaded with the first one shown, not before the first frame)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.change_preview import ChangePreview
from tests.desk.kit import wait_until
from tests.desk.test_snapshots_edits import NOTES, edit_prompt, gateway_busy, make_gateway
from tests.desk.test_snapshots_tools_sessions import make_app, send
from tui_gateway.gateway import Gateway

pytestmark = pytest.mark.anyio


def desk_on_notes(server: DemoModelServer, tmp_path: Path) -> tuple[Path, Gateway, DeskApp]:
    """A workspace holding notes.md, a gateway on it (no approvals, a SQLite store) and a desk."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text(NOTES)
    gateway = make_gateway(server, work, SqliteStore(tmp_path / "desk.db"), approvals=False)
    return work, gateway, make_app(gateway)


def note_lines(app: DeskApp) -> list[str]:
    """The transcript's note lines, as drawn."""
    return [str(n.render()) for n in app.transcript.query(".note")]


async def test_diff_shows_what_the_sessions_turns_changed(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    work, gateway, app = desk_on_notes(fast_server, tmp_path)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await send(app, pilot, edit_prompt())
            await wait_until(pilot, lambda: "Friday" in (work / "notes.md").read_text())
            await wait_until(pilot, lambda: not gateway_busy(gateway), what="the turn's end")
            await send(app, pilot, "/diff")
            await wait_until(pilot, lambda: app.screen.query(ChangePreview), what="the diff")
            notes = [str(n.render()) for n in app.transcript.query(".note")]
            assert any("this session changed 1 file: notes.md" in n for n in notes), notes
    finally:
        gateway.shutdown(timeout_s=5.0)


async def test_undo_while_a_turn_runs_refuses_at_once_and_undoes_nothing(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    """As the README says: ``/undo`` does not wait for the running turn, it says why not."""
    work, gateway, app = desk_on_notes(fast_server, tmp_path)

    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await send(app, pilot, edit_prompt())
            await wait_until(pilot, lambda: "Friday" in (work / "notes.md").read_text())
            await wait_until(pilot, lambda: not gateway_busy(gateway), what="the turn's end")
            fast_server.configure(fault="stall", fault_after_tokens=3, fault_times=1)
            await send(app, pilot, "Tell me about stopping streams")
            await wait_until(pilot, lambda: gateway_busy(gateway), what="the stalled turn")
            await send(app, pilot, "/undo")
            refused = "✖ undo: a turn is running in this session: stop it or let it end, then undo"
            await wait_until(pilot, lambda: refused in note_lines(app), what="the refusal")
            assert gateway_busy(gateway)  # it did not wait for the turn
            assert "Friday" in (work / "notes.md").read_text()  # nothing undone
            await pilot.press("escape")
            await wait_until(pilot, lambda: not gateway_busy(gateway), what="the stop")
            await send(app, pilot, "/undo")
            await wait_until(pilot, lambda: (work / "notes.md").read_text() == NOTES, what="undo")
    finally:
        gateway.shutdown(timeout_s=5.0)


async def test_undo_of_a_turn_that_created_a_file_says_it_removed_it(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    work, gateway, app = desk_on_notes(fast_server, tmp_path)
    made = work / "made.txt"
    writes = [
        {"path": "made.txt", "content": "new\n"},
        {"path": "notes.md", "content": "# Plan\n"},
    ]

    try:
        async with app.run_test(size=(100, 30)) as pilot:
            for args in writes:  # two turns: undone one at a time, the newest first
                await send(app, pilot, "call tool write_file with " + json.dumps(args))
                path = work / str(args["path"])
                await wait_until(
                    pilot, lambda p=path, a=args: p.exists() and p.read_text() == a["content"]
                )
                await wait_until(pilot, lambda: not gateway_busy(gateway), what="the turn's end")
            await send(app, pilot, "/undo")
            await wait_until(pilot, lambda: (work / "notes.md").read_text() == NOTES, what="undo")
            await wait_until(pilot, lambda: any("↶" in n for n in note_lines(app)), what="its line")
            (first,) = [n for n in note_lines(app) if n.startswith("↶")]
            assert first.endswith(": restored notes.md")
            await send(app, pilot, "/undo")
            await wait_until(pilot, lambda: not made.exists(), what="the second undo")
            await wait_until(pilot, lambda: len([n for n in note_lines(app) if "↶" in n]) == 2)
            second = [n for n in note_lines(app) if n.startswith("↶")][-1]
            assert second.endswith(": removed made.txt") and "restored" not in second
    finally:
        gateway.shutdown(timeout_s=5.0)


async def test_an_undo_refused_for_a_file_changed_since_says_so_and_undoes_nothing(
    fast_server: DemoModelServer, tmp_path: Path
) -> None:
    work, gateway, app = desk_on_notes(fast_server, tmp_path)
    wrote = {"path": "notes.md", "content": "# Plan\n"}

    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await send(app, pilot, "call tool write_file with " + json.dumps(wrote))
            await wait_until(pilot, lambda: (work / "notes.md").read_text() == "# Plan\n")
            await wait_until(pilot, lambda: not gateway_busy(gateway), what="the turn's end")
            (work / "notes.md").write_text("# Plan\nmine\n")
            await send(app, pilot, "/undo")
            await wait_until(
                pilot, lambda: any("not undone" in n for n in note_lines(app)), what="why"
            )
            shown = note_lines(app)
            assert any(n.startswith("✖ not undone: the turn “call tool write_file") for n in shown)
            assert "✖ not restored: notes.md: changed outside desk since the turn" in shown
            assert any(n.startswith("the turn stays the next to undo") for n in shown)
            assert not any(n.startswith("↶") for n in shown)
            assert (work / "notes.md").read_text() == "# Plan\nmine\n"
            (work / "notes.md").write_text("# Plan\n")  # as the turn left it: undoable again
            await send(app, pilot, "/undo")
            await wait_until(pilot, lambda: (work / "notes.md").read_text() == NOTES, what="undo")
    finally:
        gateway.shutdown(timeout_s=5.0)
