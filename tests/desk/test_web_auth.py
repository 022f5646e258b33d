"""``desk web`` lets in only who has its token, for its own address, from its own pages.

No browser here: plain HTTP requests to a real ``desk web`` on a free port. No desk process is
started (none of these requests opens the WebSocket).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.desk.web_kit import DeskWeb, start_desk_web
from tests.support import running_demo


@pytest.fixture
def web(tmp_path: Path) -> Iterator[DeskWeb]:
    server = start_desk_web(
        ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"], tmp_path / "token", tmp_path
    )
    try:
        yield server
    finally:
        server.stop()


def test_the_page_needs_the_token_and_the_url_token_becomes_a_cookie(web: DeskWeb) -> None:
    with httpx.Client(base_url=web.url, follow_redirects=False) as client:
        bare = client.get("/")
        assert bare.status_code == 401
        assert bare.headers["www-authenticate"].startswith("Basic")
        assert client.get("/?token=wrong").status_code == 401
        assert client.get("/static/js/textual.js").status_code == 401

        opened = client.get(f"/?token={web.token}&fontsize=14")
        assert opened.status_code == 303
        assert opened.headers["location"] == "/?fontsize=14"  # the token leaves the address
        cookie = opened.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie

        page = client.get("/?fontsize=14")  # the cookie now
        assert page.status_code == 200
        assert web.token not in page.text
        assert "https://" not in page.text  # nothing is fetched from the internet
        assert f'data-session-websocket-url="ws://{web.url.removeprefix("http://")}/ws"' in (
            page.text
        )
        assert client.get("/static/js/textual.js").status_code == 200


def test_the_token_as_the_browsers_password(web: DeskWeb) -> None:
    good = base64.b64encode(f"anyone:{web.token}".encode()).decode()
    bad = base64.b64encode(b"anyone:guess").decode()
    assert httpx.get(web.url, headers={"Authorization": f"Basic {good}"}).status_code == 200
    assert httpx.get(web.url, headers={"Authorization": f"Basic {bad}"}).status_code == 401


def test_other_hosts_and_other_sites_pages_are_refused(web: DeskWeb) -> None:
    port = web.url.rsplit(":", 1)[1]
    rebound = httpx.get(f"{web.url}/?token={web.token}", headers={"Host": f"evil.example:{port}"})
    assert rebound.status_code == 421
    with httpx.Client(base_url=web.url) as client:
        client.get(f"/?token={web.token}")
        socket = client.get(
            "/ws",
            headers={
                "Origin": "http://evil.example",
                "Connection": "Upgrade",
                "Upgrade": "websocket",
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": base64.b64encode(b"0123456789abcdef").decode(),
            },
        )
        assert socket.status_code == 403
    assert web.desks() == []  # no desk was started for any of them


def test_a_bad_desk_flag_exits_2_before_listening(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "desk", "web", "--port", "0", "--escdelay", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("desk web: ")


def test_a_served_desk_refuses_to_read_its_servers_token(tmp_path: Path) -> None:
    from desk.web.handoff import TOKEN_FILE_ENV
    from tests.desk.test_pty_stop import desk_in_pty

    token = tmp_path / "web.token"
    token.write_text("s3cret-web-token\n")
    with running_demo(400) as server:
        env = {TOKEN_FILE_ENV: str(token)}
        args = ("--db", str(tmp_path / "desk.db"))
        with desk_in_pty(server, env, cwd=tmp_path, extra_args=args) as (proc, screen):
            ready = screen.size
            prompt = "call tool read_file with " + json.dumps({"path": "web.token"})
            screen.write(prompt.encode() + b"\r")
            screen.wait_for(b"That is what the tool reported", timeout_s=30.0, start=ready)
            written = screen.since(ready)
            screen.write(b"\x11")  # Ctrl+Q
            assert proc.wait(timeout=20.0) == 0
    assert b"refused" in written
    assert b"s3cret-web-token" not in written
