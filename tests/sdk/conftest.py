"""The client tests run the SDK against real `runnel serve` processes, with the HTTP
tests' fixtures (one server per `SERVER_ENV`, a fresh run id per test)."""

from __future__ import annotations

from tests.http.conftest import api, database, run_id, server, servers
from tests.pg import pg_template

__all__ = ["api", "database", "pg_template", "run_id", "server", "servers"]
