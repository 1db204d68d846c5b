"""A server of a test's own, on its own database, that can be restarted in place: the same
database and the same port, so clients (and a browser page) reconnect to the same URL."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from tests.http.server import RunnelServer
from tests.pg import create_database, drop_database, run_sync

DEFAULT_ENV = {"RUNNEL_KEEPALIVE_SECONDS": "1", "RUNNEL_STORAGE": "postgres"}


class RestartableServer:
    def __init__(self, dsn: str, data_dir: Path, env: Mapping[str, str],
                 workers: bool = False) -> None:
        self.dsn = dsn
        self._data_dir = data_dir
        self._env = {**DEFAULT_ENV, "RUNNEL_DATABASE_URL": dsn, **env}
        self._workers = workers
        self.server = RunnelServer.start(self._env, data_dir, workers)
        self.port = urlsplit(self.server.url).port
        self.restarts = 0

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def api(self) -> str:
        return self.server.api

    def stop(self) -> None:
        self.server.stop()

    def start(self) -> None:
        """Start again on the same port and database (after `stop`)."""
        self.server = RunnelServer.start(self._env, self._data_dir, self._workers,
                                         extra_args=("--port", str(self.port)))
        self.restarts += 1

    def kill(self) -> None:
        """End the process at once (SIGKILL), as a crash would: open subscriptions are cut
        without waiting for the graceful shutdown."""
        self.server.process.kill()
        self.server.process.wait()

    def restart(self) -> None:
        """A crash and a restart: the same database, the same port."""
        self.kill()
        self.start()


@contextmanager
def restartable_server(template: str, data_dir: Path, env: Mapping[str, str] | None = None,
                       workers: bool = False) -> Iterator[RestartableServer]:
    dsn = run_sync(lambda: create_database(template=template, prefix="runnel_restart"))
    try:
        server = RestartableServer(dsn, data_dir, env or {}, workers)
        try:
            yield server
        finally:
            server.stop()
    finally:
        run_sync(lambda: drop_database(dsn))
