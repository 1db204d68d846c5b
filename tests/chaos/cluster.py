"""A Postgres cluster of the fault suite's own, so that it can be crashed, filled up and
failed over without touching the shared test server.

Rules:
- the server never runs as root: under root (CI) every Postgres binary runs through
  `runuser -u postgres --`, and the cluster's directory belongs to that user;
- it listens on a free loopback port only (no Unix socket: one lock file fewer);
  `synchronous_commit` stays on, so a commit returns only once its WAL is written to
  the kernel. `fsync` is off: these faults kill processes, never the machine, and
  the kernel keeps every write of a killed process (with fsync, each crash recovery
  would first sync the whole data directory, seconds on a busy machine);
- `stop_immediately()` is `pg_ctl stop -m immediate` (no checkpoint: the next start
  runs crash recovery); `crash()` sends SIGKILL to the postmaster and every one of its
  processes at once, as when a machine or container dies; `start()` starts it again on
  the same port;
- `standby()` makes a streaming standby with `pg_basebackup -R` and turns it into the
  primary's SYNCHRONOUS standby: from then on a commit on the primary returns only once
  the standby has flushed it; `promote()` makes it a primary.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import asyncpg

BIN = Path(os.environ.get("RUNNEL_PG_BIN", "/usr/lib/postgresql/15/bin"))
SERVER_USER = "postgres"
"""The OS user the server runs as when the suite runs as root."""

_SETTINGS = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = ''
max_connections = 200
shared_buffers = 32MB
wal_level = replica
max_wal_senders = 5
hot_standby = on
log_min_messages = warning
fsync = off
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def available() -> str | None:
    """Why this machine cannot run a cluster of its own, or None when it can."""
    if not (BIN / "initdb").exists():
        return f"no Postgres binaries in {BIN} (set RUNNEL_PG_BIN)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without `runuser` to start Postgres as another user"
    return None


def _as_server_user(command: Sequence[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", SERVER_USER, "--", *command]
    return list(command)


def give_to_server_user(path: Path) -> None:
    """Make `path` the server's (under root; otherwise it is the user's already)."""
    if os.geteuid() == 0:
        shutil.chown(path, SERVER_USER, SERVER_USER)


class Cluster:
    """One Postgres server in a temporary directory (see the module rules)."""

    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = root
        self.data = root / "data"
        self.port = port or free_port()
        self.log = root / "server.log"

    @classmethod
    def create(cls) -> Cluster:
        """initdb a new cluster (not started)."""
        cluster = cls(_new_root())
        _run(["initdb", "-D", str(cluster.data), "-U", "postgres", "--auth=trust",
              "--no-sync", "-E", "UTF8", "--locale=C"])
        cluster._configure("postgresql.conf")
        return cluster

    @classmethod
    @contextlib.contextmanager
    def running(cls) -> Iterator[Cluster]:
        """A new cluster, started, and destroyed afterwards whatever happened."""
        cluster = cls.create()
        try:
            cluster.start()
            yield cluster
        finally:
            cluster.destroy()

    def _configure(self, name: str) -> None:
        with (self.data / name).open("a") as conf:
            conf.write(_SETTINGS.format(port=self.port))

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    # -- life cycle ----------------------------------------------------------

    def start(self) -> None:
        _run(["pg_ctl", "start", "-w", "-t", "120", "-D", str(self.data), "-l", str(self.log)])

    def stop_immediately(self) -> None:
        _run(["pg_ctl", "stop", "-m", "immediate", "-w", "-t", "60", "-D", str(self.data)])

    def crash(self) -> None:
        """SIGKILL to the postmaster and all its processes, at once; returns once none
        is left running."""
        postmaster = self.postmaster_pid()
        processes = [postmaster, *_children(postmaster)]
        for pid in processes:
            _kill(pid)
        deadline = time.monotonic() + 60
        while any(_running(pid) for pid in processes):
            assert time.monotonic() < deadline, f"processes {processes} survived SIGKILL"
            time.sleep(0.02)
        if Path(f"/proc/{postmaster}").exists():
            # A zombie nobody reaped yet (an init that does not reap, in a container):
            # a new postmaster would take its lock file for a live server's.
            (self.data / "postmaster.pid").unlink(missing_ok=True)

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def destroy(self) -> None:
        """Stop it, however it is, and remove its directory."""
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(OSError, ValueError, IndexError):
                self.crash()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- replication ---------------------------------------------------------

    def standby(self) -> Cluster:
        """A streaming standby of this (running) cluster, started, and made synchronous:
        returns once the primary reports it `sync`."""
        standby = Cluster(_new_root())
        _run(["pg_basebackup", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
              "-D", str(standby.data), "-R", "-X", "stream", "-c", "fast", "--no-sync"])
        # The copied postgresql.conf names the primary's port: later lines win.
        standby._configure("postgresql.auto.conf")
        standby.start()
        self._sql("ALTER SYSTEM SET synchronous_standby_names = '*'",
                  "ALTER SYSTEM SET synchronous_commit = 'on'", "SELECT pg_reload_conf()")
        deadline = time.monotonic() + 60
        while self._sql("SELECT sync_state FROM pg_stat_replication") != ["sync"]:
            assert time.monotonic() < deadline, "the standby never became synchronous"
            time.sleep(0.1)
        return standby

    def promote(self) -> None:
        _run(["pg_ctl", "promote", "-w", "-t", "60", "-D", str(self.data)])

    def _sql(self, *statements: str) -> list[str]:
        """Run statements through psql; the output lines of the last one."""
        output = ""
        for statement in statements:
            output = _run(["psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", str(self.port),
                           "-U", "postgres", "-d", "postgres", "-c", statement])
        return [line for line in output.splitlines() if line]

    # -- databases -----------------------------------------------------------

    async def create_database(self, name: str, tablespace: str | None = None) -> str:
        """A new database (optionally in `tablespace`); its DSN."""
        connection = await asyncpg.connect(self.dsn())
        try:
            clause = f' TABLESPACE "{tablespace}"' if tablespace else ""
            await connection.execute(f'CREATE DATABASE "{name}"{clause}')
        finally:
            await connection.close()
        return self.dsn(name)


def _new_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="runnel-pg-"))
    give_to_server_user(root)
    return root


def _run(command: Sequence[str]) -> str:
    executable = [str(BIN / command[0]), *command[1:]]
    done = subprocess.run(_as_server_user(executable), capture_output=True, text=True,
                          timeout=180, cwd="/")
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): "
                           f"{done.stdout}{done.stderr}")
    return done.stdout


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            found.append(int(entry.name))
    return found


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
