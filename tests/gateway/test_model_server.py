"""The gateway's model server: a server that cannot be reached or refuses the key is a state,
asked again with a back-off; a prompt is refused with one line meanwhile and sent once it
answers; a model it does not list is refused with the ones it lists; ``/server URL`` moves the
gateway at run time. Real demo model servers on loopback, a closed port for "unreachable"."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from contract.errors import GatewayError
from contract.events import ContextWindowKnown
from contract.server_events import ServerState, ServerStatus
from tests.support import EventLog, running_demo
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.servers.model_server import ModelServer, status_line

DEADLINE_S = 20.0


def closed_port() -> int:
    """A loopback port nothing listens on (free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def watched(provider: ProviderConfig) -> tuple[Gateway, EventLog]:
    gateway = Gateway(GatewayConfig(provider=provider, tools=False))
    log = EventLog()
    gateway.subscribe(log)
    gateway.server.check()
    return gateway, log


def status_where(log: EventLog, state: ServerState, timeout: float = DEADLINE_S) -> ServerStatus:
    """The first ``server.status`` in ``state`` (waits for it)."""

    def found(_events: object) -> bool:
        return any(s.state == state for s in log.of_type(ServerStatus))

    assert log.wait_for(found, timeout), [s.state for s in log.of_type(ServerStatus)]
    return next(s for s in log.of_type(ServerStatus) if s.state == state)


@pytest.fixture
def port() -> int:
    return closed_port()


@pytest.fixture
def gateway_at_closed_port(port: int) -> Iterator[tuple[Gateway, EventLog]]:
    gateway, log = watched(ProviderConfig(base_url=f"http://127.0.0.1:{port}/v1", model=""))
    try:
        yield gateway, log
    finally:
        gateway.shutdown(timeout_s=5.0)


def test_an_unreachable_server_refuses_prompts_in_one_line_and_is_asked_again_until_it_answers(
    gateway_at_closed_port: tuple[Gateway, EventLog], port: int
) -> None:
    gateway, log = gateway_at_closed_port
    session = gateway.session_create()  # sessions work without a server
    down = status_where(log, ServerState.UNREACHABLE)
    assert down.message == "connection refused" and down.retry_s is not None
    assert down.problem == f"cannot reach the model server at http://127.0.0.1:{port}/v1: " + (
        "connection refused"
    )
    with pytest.raises(GatewayError) as refused:
        gateway.prompt_submit(session, "hello")
    assert refused.value.message == down.problem and "\n" not in refused.value.message

    with running_demo(0, port=port, model="served"):
        try:  # nobody asks: the back-off brings the answer
            ready = status_where(log, ServerState.READY)
            assert ready.models == ["served"] and ready.model == "served"  # none was chosen
            assert ready.attempts >= 2
            turn = gateway.prompt_submit(session, "reply with exactly: back")
            done = log.complete(turn.turn_id)
            assert done.status == "completed" and done.text == "back"
            windows = [w for w in log.of_type(ContextWindowKnown) if w.source == "server"]
            assert windows and windows[-1].tokens == 8192  # learned from the server, not assumed
        finally:
            gateway.shutdown(timeout_s=5.0)


def test_a_refused_key_is_a_state_and_a_one_line_refusal() -> None:
    with running_demo(30.0, api_key="right") as server:
        gateway, log = watched(
            ProviderConfig(base_url=server.base_url, model="demo", api_key="wrong")
        )
        try:
            refused = status_where(log, ServerState.REFUSED)
            assert refused.message == "401"
            assert refused.problem.startswith(f"the model server at {server.base_url} refused")
            with pytest.raises(GatewayError, match="refused the API key"):
                gateway.prompt_submit(gateway.session_create(), "hi")
        finally:
            gateway.shutdown(timeout_s=5.0)


def test_a_model_the_server_does_not_list_is_refused_with_the_ones_it_lists() -> None:
    with running_demo(0) as server:
        gateway, log = watched(ProviderConfig(base_url=server.base_url, model="gpt-9"))
        try:
            status_where(log, ServerState.READY)
            session = gateway.session_create()
            with pytest.raises(GatewayError) as refused:
                gateway.prompt_submit(session, "hi")
            assert refused.value.message == (
                f"the model server at {server.base_url} does not list model 'gpt-9'; "
                "it lists demo; /model NAME picks one"
            )
            with pytest.raises(GatewayError, match="does not list model 'nope'; it lists demo"):
                gateway.session_set_model(session, "nope")
            gateway.session_set_model(session, "demo")
            done = log.complete(gateway.prompt_submit(session, "reply with exactly: ok").turn_id)
            assert done.text == "ok"
            assert server.records.list()[-1].model == "demo"
        finally:
            gateway.shutdown(timeout_s=5.0)


def test_switching_to_another_server_at_run_time(
    gateway_at_closed_port: tuple[Gateway, EventLog],
) -> None:
    gateway, log = gateway_at_closed_port
    status_where(log, ServerState.UNREACHABLE)
    session = gateway.session_create()
    with pytest.raises(GatewayError, match="not a model server URL"):
        gateway.server.switch("localhost:8080")
    with running_demo(0) as server:
        switched = gateway.server.switch(server.base_url + "/")
        assert switched.state == ServerState.CHECKING and switched.base_url == server.base_url
        ready = status_where(log, ServerState.READY)
        assert ready.base_url == server.base_url and ready.models == ["demo"]
        done = log.complete(gateway.prompt_submit(session, "reply with exactly: moved").turn_id)
        assert done.text == "moved"
        assert gateway.provider_for(session).base_url == server.base_url


def test_a_gateway_that_was_never_asked_to_check_sends_as_before(port: int) -> None:
    gateway = Gateway(
        GatewayConfig(provider=ProviderConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m"))
    )
    log = EventLog()
    gateway.subscribe(log)
    try:
        done = log.complete(gateway.prompt_submit(gateway.session_create(), "hi").turn_id)
        assert done.exit_reason == "failed(ConnectFailed)"  # the turn says why, as before
        assert gateway.server.status().state == ServerState.CHECKING
    finally:
        gateway.shutdown(timeout_s=5.0)


def collect(into: list[ServerStatus]) -> Callable[..., None]:
    """An event hub's ``publish(session, payload, sticky=KEY)`` that keeps the statuses."""

    def publish(_session: object, status: ServerStatus, sticky: str = "") -> None:
        assert sticky == "server.status"
        into.append(status)

    return publish


def test_an_answer_about_the_server_before_a_switch_is_dropped() -> None:
    """Deterministic: the first server's answer arrives after the switch; only the second
    server's state is ever published after it."""
    asked: list[str] = []
    first_asked, release_first = threading.Event(), threading.Event()

    def ask(base_url: str, _key: str | None) -> tuple[int | None, list[str], str]:
        asked.append(base_url)
        if base_url.endswith(":1/v1"):
            first_asked.set()
            release_first.wait(10.0)
            return 200, ["old"], ""
        return 200, ["new"], ""

    published: list[ServerStatus] = []
    server = ModelServer(
        ProviderConfig(base_url="http://127.0.0.1:1/v1", model=""), collect(published), ask=ask
    )
    server.check()
    assert first_asked.wait(10.0)
    server.switch("http://127.0.0.1:2/v1")
    release_first.set()
    status = server.wait_answer(10.0)
    server.close()
    assert status.state == ServerState.READY and status.models == ["new"]
    assert server.provider.model == "new"  # the old server's "old" never became the default
    after_switch = published[[p.base_url for p in published].index("http://127.0.0.1:2/v1") :]
    assert all(p.base_url == "http://127.0.0.1:2/v1" for p in after_switch)
    assert all("old" not in p.models for p in published)


@settings(max_examples=25, deadline=None)
@given(order=st.permutations(["check", "switch", "use_model", "check", "switch"]))
def test_any_order_of_checks_and_switches_ends_on_the_last_server(order: list[str]) -> None:
    """Randomized: whatever the order, the last published state is the last chosen server's,
    and the thread answers about it."""
    ports = iter(range(2, 20))

    def ask(base_url: str, _key: str | None) -> tuple[int | None, list[str], str]:
        return 200, [base_url.rsplit(":", 1)[1].split("/")[0]], ""

    published: list[ServerStatus] = []
    server = ModelServer(
        ProviderConfig(base_url="http://127.0.0.1:1/v1", model="m"), collect(published), ask=ask
    )
    for step in order:
        if step == "check":
            server.check()
        elif step == "switch":
            server.switch(f"http://127.0.0.1:{next(ports)}/v1")
        else:
            server.use_model("chosen")
    final = server.wait_answer(10.0)
    server.close()
    assert final.state == ServerState.READY
    assert final.base_url == server.provider.base_url
    assert final.models == [server.provider.base_url.rsplit(":", 1)[1].split("/")[0]]
    assert published[-1].base_url == final.base_url


def test_a_prompt_sent_before_the_server_named_its_model_runs_and_is_saved_with_it(
    tmp_path: Path,
) -> None:
    # desk started without a model asks the server which one it runs; a prompt typed as desk
    # started (before that answer) ran with none, and its session was saved with none.
    with running_demo(400.0, model="served") as server:
        store = SqliteStore(tmp_path / "desk.db")
        gateway = Gateway(
            GatewayConfig(provider=ProviderConfig(base_url=server.base_url, model="")),
            store=store,
        )
        log = EventLog()
        gateway.subscribe(log)
        try:
            session = gateway.session_create()  # nobody asked the server yet
            done = log.complete(gateway.prompt_submit(session, "reply with exactly: early").turn_id)
            assert (done.status, done.text) == ("completed", "early")
            assert server.records.list()[-1].model == "served"
            turn = store.turns.get_turn(done.turn_id)
            saved = store.sessions.get_session(session)
            assert turn is not None and turn.model == "served"
            assert saved is not None and saved.model == "served"
        finally:
            assert gateway.shutdown(timeout_s=5).threads_left == []
            store.close()


def test_the_server_line_says_which_model_to_use_when_the_sessions_is_not_listed() -> None:
    url = "http://127.0.0.1:9/v1"
    one = ServerStatus(ServerState.READY, url, "tiny", models=["demo"])
    assert status_line(one, "tiny") == (
        f"the model server at {url} answers and lists demo, not tiny: /model demo to use it"
    )
    two = ServerStatus(ServerState.READY, url, "tiny", models=["a", "b"])
    assert status_line(two, "tiny").endswith("lists a, b, not tiny: /model NAME to use one of them")
    assert status_line(one, "demo").endswith("answers and lists demo; using demo")
    silent = ServerStatus(ServerState.READY, url, "tiny", models=[])  # lists nothing: any goes
    assert status_line(silent, "tiny").endswith("lists no models; using tiny")


def test_a_server_that_resets_the_connection_is_said_so_in_words() -> None:
    import struct

    import httpx

    from tui_gateway.servers.model_server import one_line

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def reset_one() -> None:
        conn, _ = listener.accept()
        conn.recv(1024)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()  # an RST, as a server going down mid-request sends

    resetter = threading.Thread(target=reset_one)
    resetter.start()
    try:
        with pytest.raises(httpx.HTTPError) as failed:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=10)
    finally:
        resetter.join(timeout=10)
        listener.close()
    assert one_line(failed.value) == "connection reset"


def test_a_model_set_after_the_last_turn_is_the_one_a_resume_goes_on_with(
    tmp_path: Path,
) -> None:
    # "/model other" said "this session now uses model other", and after a restart the
    # session was back on its last turn's model (which the server no longer lists): only a
    # turn saved the model
    db = tmp_path / "desk.db"
    with running_demo(0) as server:
        provider = ProviderConfig(base_url=server.base_url, model="demo")
        first = Gateway(GatewayConfig(provider=provider, tools=False), store=SqliteStore(db))
        log = EventLog()
        first.subscribe(log)
        try:
            session = first.session_create()
            turn = first.prompt_submit(session, "reply with exactly: one").turn_id
            assert log.complete(turn).text == "one"
            server.configure(model="other")  # the server now runs another model
            first.server.check()

            def lists_other(_events: object) -> bool:
                return any("other" in s.models for s in log.of_type(ServerStatus))

            assert log.wait_for(lists_other, DEADLINE_S)
            first.session_set_model(session, "other")
        finally:
            assert first.shutdown(timeout_s=10).threads_left == []
        again = Gateway(GatewayConfig(provider=provider, tools=False), store=SqliteStore(db))
        log = EventLog()
        again.subscribe(log)
        try:
            assert again.session_resume(session).model == "other"
            turn = again.prompt_submit(session, "reply with exactly: two").turn_id
            assert log.complete(turn).text == "two"
            assert server.records.list()[-1].model == "other"
        finally:
            assert again.shutdown(timeout_s=10).threads_left == []
