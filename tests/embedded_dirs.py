"""A data directory for the embedded Postgres outside pytest's base temporary directory.

As root, the server runs as its own user, which must pass through every parent of
`pgdata`: the package opens them to everyone when it starts the server, and any pytest
session that starts meanwhile (another test run on the machine) closes its base directory
again (0700), which fails a start, or a stop, at random. `/tmp` stays open.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def embedded_dir() -> Iterator[Path]:
    """A fresh, not yet existing data directory; removed afterwards."""
    parent = Path(tempfile.mkdtemp(prefix="runnel-embedded-"))
    try:
        yield parent / "data"
    finally:
        shutil.rmtree(parent, ignore_errors=True)
