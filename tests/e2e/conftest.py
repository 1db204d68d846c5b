"""End-to-end fixtures: several real server processes on one fresh Postgres database."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.pg import create_database, drop_database, pg_template, run_sync

__all__ = ["pg_template"]


@pytest.fixture(scope="module")
def database(pg_template: str) -> Iterator[str]:
    """A fresh database for the module's servers, dropped afterwards."""
    dsn = run_sync(lambda: create_database(template=pg_template, prefix="runnel_e2e"))
    try:
        yield dsn
    finally:
        run_sync(lambda: drop_database(dsn))


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:10]}"

