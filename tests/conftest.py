"""Shared fixtures: the project's own model server on loopback, a private home for desk's files,
a throwaway PostgreSQL cluster, and thread bookkeeping."""

from __future__ import annotations

import os
import signal
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import settings

from agent.provider.client import ProviderConfig
from agent.store.postgres import PostgresStore
from demo_model.server import DemoModelServer
from tests.pg_cluster import (
    REQUIRE_ENV,
    Cluster,
    NoPostgres,
    OpenHost,
    remove_shared,
    shared_cluster,
)
from tests.pg_proxy import Proxy
from tests.rewrite_once import compile_project, rewrite_test_modules
from tests.support import running_demo

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # The suite started in the background of a shell without job control (or under nohup):
    # SIGINT came ignored, and every desk a test starts would inherit that (the Ctrl+C tests
    # then wait for an exit that never comes). A handler is reset to the default on exec.
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile("desk", deadline=None)
settings.load_profile("desk")
"""No hypothesis test has a deadline: an example's time says nothing on a loaded machine (a
test that sets its own ``settings`` keeps this default)."""


@pytest.fixture
def demo_server() -> Iterator[DemoModelServer]:
    """A fresh demo model server (one slot, fast tokens) for one test."""
    with running_demo(400.0) as server:
        yield server


@pytest.fixture
def provider(demo_server: DemoModelServer) -> ProviderConfig:
    """Provider settings pointing at ``demo_server``."""
    return ProviderConfig(base_url=demo_server.base_url, model=demo_server.config.model)


CHILD_SITE = Path(__file__).resolve().parent / "child_site"
"""The folder whose ``sitecustomize`` every Python process a test starts imports first."""


@pytest.fixture(scope="session", autouse=True)
def child_site() -> Iterator[None]:
    """The Python processes the tests start (they inherit the environment) import
    :mod:`tests.child_site.sitecustomize` first: they run without trio, as in a desk install.
    Set in the process that runs the tests, once they run (an xdist worker, or the only
    process), never in the main process before it starts the workers: hypothesis loads trio's
    plugin there."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(CHILD_SITE), before) if p)
    yield
    if before is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = before


XDG_DIRS = ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
"""Where desk keeps its database, config, token and unsaved writes: private to each test."""


@pytest.fixture(autouse=True)
def private_xdg_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Path]:
    """Every test, and every desk it starts in a subprocess (they inherit the environment),
    reads and writes its own XDG folders, never the person's real database or config."""
    root = tmp_path_factory.mktemp("xdg")
    dirs = {
        name: root / name.removeprefix("XDG_").removesuffix("_HOME").lower() for name in XDG_DIRS
    }
    for name, path in dirs.items():
        path.mkdir()
        monkeypatch.setenv(name, str(path))
    # A desk a test starts (its own session, in a pty) would lower the priority of the demo
    # model serving it from this process, and so of the whole test run: not in tests
    monkeypatch.setenv("DESK_SERVER_NICE", "0")
    return dirs


PROJECT_PACKAGES = (
    "agent",
    "asgi_server",
    "contract",
    "demo_model",
    "desk",
    "tui_gateway",
    "tests",
)
"""The folders whose bytecode the main process writes before the workers start."""

RUN_FOLDER = pytest.StashKey[Path]()
"""The main process's folder for this run (the shared PostgreSQL cluster's lock and address)."""

RUN_FOLDER_INPUT = "desk_run_folder"
"""The same folder, as an xdist worker is told it."""


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the main process (or the only one, -n 0)
        config.stash[RUN_FOLDER] = Path(tempfile.mkdtemp(prefix="desk-tests-"))
        workers = config.getoption("numprocesses", None)
        if isinstance(workers, int) and workers > 0:  # before they start
            tests = Path(__file__).resolve().parent
            compile_project(tests.parent, PROJECT_PACKAGES)
            rewrite_test_modules(config, tests)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: each worker learns the run's folder."""
    node.workerinput[RUN_FOLDER_INPUT] = str(node.config.stash[RUN_FOLDER])


def pytest_unconfigure(config: pytest.Config) -> None:
    """The main process, once every worker is done: the shared cluster goes."""
    if not hasattr(config, "workerinput") and RUN_FOLDER in config.stash:
        remove_shared(config.stash[RUN_FOLDER])


def _run_folder(config: pytest.Config) -> Path:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return Path(workerinput[RUN_FOLDER_INPUT])
    return config.stash[RUN_FOLDER]


@pytest.fixture(scope="session")
def pg_cluster(pytestconfig: pytest.Config) -> Cluster:
    """The run's PostgreSQL cluster, one for every worker (see :mod:`tests.pg_cluster`): a test
    keeps to a schema (:func:`schema`) or a database (:func:`pg_database`) of its own.

    Without the server binaries its tests skip, with the reason; with ``DESK_REQUIRE_POSTGRES=1``
    (CI) they fail instead, so a CI machine without PostgreSQL can never pass them unseen.
    """
    try:
        return shared_cluster(_run_folder(pytestconfig))
    except NoPostgres as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{exc} ({REQUIRE_ENV}=1)")
        pytest.skip(str(exc))


@pytest.fixture
def pg_database(pg_cluster: Cluster) -> Iterator[str]:
    """The URL of a new, empty database of :func:`pg_cluster`, dropped after the test."""
    name = f"desk_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield pg_cluster.url_of(name)
    finally:
        with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def schema(pg_cluster: Cluster) -> Iterator[str]:
    """A schema of its own for the test (dropped after)."""
    name = f"h_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.fixture
def open_host(pg_cluster: Cluster, schema: str) -> Iterator[OpenHost]:
    """Opens PostgreSQL stores on the test's schema, each as the host its owner string names;
    all are closed at the end. Pass ``url=`` to reach the cluster another way (a proxy)."""
    opened: list[PostgresStore] = []

    def open_one(owner: str, **options: Any) -> PostgresStore:
        url = options.pop("url", pg_cluster.url)
        options.setdefault("reconnect_s", 10.0)
        store = PostgresStore(url, schema=schema, owner=owner, **options)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


@pytest.fixture
def proxy(pg_cluster: Cluster) -> Iterator[Proxy]:
    """A proxy in front of the cluster (see :mod:`tests.pg_proxy`)."""
    p = Proxy(pg_cluster.port)
    yield p
    p.close()
