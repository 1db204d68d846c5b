"""What a node checks before it starts: the database answers (retried with backoff for a
bounded time), its schema fits this binary, and no `RUNNEL_*` variable is misspelt.

Rules:
- only a configured database is checked here; the embedded default is started by
  the node itself, and answers once it has started;
- a database that does not answer is retried with capped, jittered backoff for
  `RUNNEL_STARTUP_TIMEOUT_SECONDS`; then the node refuses with one line;
- every refusal is one line, and the CLI exits 2 on it (no traceback);
- an unknown `RUNNEL_*` variable is a warning naming the closest setting: a typo
  such as `RUNNEL_DATABSE_URL` would otherwise start the embedded default silently.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
import random
from collections.abc import Mapping

import asyncpg

from adapters.postgres.migrations import SchemaMismatch, ensure_current
from adapters.postgres.pool import as_unavailable
from entrypoints.composition.settings import Settings

log = logging.getLogger("runnel.startup")

PREFIX = "RUNNEL_"
IGNORED = frozenset({"RUNNEL_TEST_PG_DSN", "RUNNEL_TOKEN", "RUNNEL_URL"})
"""Variables of the test suite and of the SDK's examples, not of a node."""


class StartupRefused(Exception):
    """The node must not start; the message is the one line that says why."""


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One warning per `RUNNEL_*` variable that names no setting."""
    known = {PREFIX + name.upper() for name in Settings.model_fields}
    warnings = []
    for variable in sorted(environ):
        if not variable.startswith(PREFIX) or variable in known or variable in IGNORED:
            continue
        close = difflib.get_close_matches(variable, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        warnings.append(f"unknown setting {variable} is ignored{hint}")
    return warnings


async def preflight(settings: Settings) -> None:
    """Wait for a configured database to answer and, with `auto_migrate` off, check that
    it is at this binary's schema; raises `StartupRefused`."""
    if settings.storage != "postgres" or settings.database_url is None:
        return
    await _wait_for(settings.database_url, settings)
    if not settings.auto_migrate:
        try:
            await ensure_current(settings.database_url)
        except SchemaMismatch as mismatch:
            raise StartupRefused(str(mismatch)) from None


async def _wait_for(dsn: str, settings: Settings) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.startup_timeout_seconds
    delay = 0.2
    while True:
        try:
            connection = await asyncpg.connect(dsn, timeout=settings.db_connect_timeout_seconds)
        except Exception as error:
            unavailable = as_unavailable(error)
            if unavailable is None:  # not an outage: a wrong password, database or DSN
                raise StartupRefused(f"the database refused the connection: {error}") from None
            if loop.time() + delay > deadline:
                raise StartupRefused(
                    f"the database did not answer within {settings.startup_timeout_seconds:g} s "
                    f"({type(error).__name__}); is RUNNEL_DATABASE_URL right?") from None
            log.warning("the database does not answer yet (%s); retrying in %.1f s",
                        type(error).__name__, delay)
            await asyncio.sleep(delay)
            delay = min(5.0, delay * 2) * random.uniform(0.8, 1.2)
            continue
        await connection.close()
        return
