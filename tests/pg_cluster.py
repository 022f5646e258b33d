"""A throwaway PostgreSQL cluster for the tests: ``initdb`` + ``pg_ctl`` in a temporary folder.

The cluster listens on a free port of 127.0.0.1 only (and a socket in its folder), trusts local
connections for the user ``desk``, and skips fsync (the tests check the store's logic and its
behaviour under faults, not the disk). When the tests run as root it runs as ``nobody`` (the
server refuses root), in a folder ``nobody`` owns. One cluster serves a whole pytest run, every
xdist worker included (:func:`shared_cluster`: the first worker to need it starts it under a
file lock, the others read where it listens); the tests keep apart by schema or database, one
of their own each. The run's main process stops it (``-m immediate``) and removes it at the end
(:func:`remove_shared`).

The binaries are found in ``$DESK_PG_BINDIR``, beside ``initdb`` on the ``PATH``, in
``pg_config --bindir``, or in the newest ``/usr/lib/postgresql/*/bin`` (Debian).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.store.postgres import PostgresStore

REQUIRE_ENV = "DESK_REQUIRE_POSTGRES"
"""Set to 1 (``.ci/run`` does) to fail, not skip, the PostgreSQL tests when no server is
installed."""

USER = "desk"
"""The cluster's superuser."""


OpenHost = Callable[..., PostgresStore]
"""Opens a store as one host (the ``open_host`` fixture): ``open_host("host-a:1:1", **options)``
with :class:`PostgresStore`'s options (``url=`` reaches the cluster another way)."""


class NoPostgres(RuntimeError):
    """No PostgreSQL server binaries on this machine (``initdb``, ``pg_ctl``)."""


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None."""
    candidates: list[Path] = []
    if os.environ.get("DESK_PG_BINDIR"):
        candidates.append(Path(os.environ["DESK_PG_BINDIR"]))
    found = shutil.which("initdb")
    if found:
        candidates.append(Path(os.path.realpath(found)).parent)
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, timeout=10, check=True
        )
        candidates.append(Path(out.stdout.strip()))
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    candidates.extend(debian)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Cluster:
    """A running throwaway cluster.

    Attributes:
        folder: its temporary folder (data, log, socket).
        port: its TCP port on 127.0.0.1.
        bindir: the server binaries used.
        run_as: the user the server runs as (None: the current one).
    """

    folder: Path
    port: int
    bindir: Path
    run_as: str | None

    @property
    def url(self) -> str:
        """The URL of its ``postgres`` database."""
        return self.url_of("postgres")

    def url_of(self, database: str) -> str:
        """The URL of one of its databases."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def _command(self, *args: str) -> list[str]:
        if self.run_as is None:
            return list(args)
        return ["runuser", "-u", self.run_as, "--", *args]

    def pg_ctl(self, *args: str, timeout_s: float = 60.0) -> None:
        """Run ``pg_ctl -D <data> args...`` (as the cluster's user).

        Raises:
            subprocess.CalledProcessError: it failed.
        """
        command = self._command(str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"))
        subprocess.run(
            [*command, *args],
            check=True,
            timeout=timeout_s,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            " -c max_connections=800"
        )
        self.pg_ctl("-w", "-l", str(self.folder / "log"), "-o", options, "start")

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server (``fast`` ends sessions cleanly; ``immediate`` is a crash)."""
        self.pg_ctl("-w", "-m", mode, "stop")

    def remove(self) -> None:
        """Stop the server if it runs, and delete its folder."""
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def to_json(self) -> str:
        """Where it is, for the other processes of the run (:meth:`from_json` reads it)."""
        fields = {"folder": str(self.folder), "port": self.port, "bindir": str(self.bindir)}
        return json.dumps({**fields, "run_as": self.run_as})

    @classmethod
    def from_json(cls, text: str) -> Cluster:
        """The cluster :meth:`to_json` described."""
        data = json.loads(text)
        return cls(Path(data["folder"]), int(data["port"]), Path(data["bindir"]), data["run_as"])


SHARED_FILE = "cluster.json"
"""In a run's folder: the shared cluster's :meth:`Cluster.to_json`, once it started."""


def shared_cluster(run_folder: Path) -> Cluster:
    """The run's one cluster: started by the first process that asks, found by the others.

    Args:
        run_folder: a folder of this pytest run, the same for all its processes.

    Raises:
        NoPostgres: the server binaries are not installed.
        subprocess.CalledProcessError: ``initdb`` or ``pg_ctl`` failed.
    """
    with open(run_folder / "cluster.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        described = run_folder / SHARED_FILE
        if described.exists():
            return Cluster.from_json(described.read_text())
        cluster = start_cluster()
        described.write_text(cluster.to_json())
        return cluster


def remove_shared(run_folder: Path) -> None:
    """Stop and delete the run's cluster if one started, then the run's folder."""
    described = run_folder / SHARED_FILE
    if described.exists():
        Cluster.from_json(described.read_text()).remove()
    shutil.rmtree(run_folder, ignore_errors=True)


def start_cluster() -> Cluster:
    """Make and start a cluster in a new temporary folder.

    Raises:
        NoPostgres: the server binaries are not installed.
        subprocess.CalledProcessError: ``initdb`` or ``pg_ctl`` failed.
    """
    bindir = find_bindir()
    if bindir is None:
        raise NoPostgres(
            "no PostgreSQL server here (initdb, pg_ctl): install the 'postgresql' package"
        )
    folder = Path(tempfile.mkdtemp(prefix="desk-pg-"))
    run_as = None
    if os.geteuid() == 0:
        run_as = "nobody"
        nobody = pwd.getpwnam(run_as)
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    cluster = Cluster(folder, free_port(), bindir, run_as)
    try:
        initdb = cluster._command(
            str(bindir / "initdb"),
            "-D",
            str(folder / "data"),
            "-A",
            "trust",
            "-U",
            USER,
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        subprocess.run(
            initdb, check=True, timeout=120, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        cluster.start()
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return cluster
