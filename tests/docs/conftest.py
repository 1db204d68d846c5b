"""The docs tests' one server: `make run`'s, shared by every test of the session that needs
it (the README and every document in `docs/` run against it)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.make_run import MakeRun


@pytest.fixture(scope="session")
def make_run() -> Iterator[MakeRun]:
    """Its data directory is outside pytest's base temporary directory, as
    `tests/embedded_dirs.py` explains."""
    parent = Path(tempfile.mkdtemp(prefix="runnel-docs-"))
    server = MakeRun.start(parent / "data")
    try:
        if server.banner() is None:
            pytest.fail(f"`runnel serve` did not start:\n{server.printed()}")
        yield server
    finally:
        server.stop()
        shutil.rmtree(parent, ignore_errors=True)
