"""`runnel worker` as a separate OS process on a test database, and a bounded poll."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from entrypoints.commands.worker import READY
from tests.integration.support import DEADLINE, REPO


async def eventually(condition: Callable[[], Awaitable[bool]]) -> None:
    """Poll until `condition` holds; bounded so a broken worker fails the test, not hangs it."""

    async def poll() -> None:
        while not await condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), DEADLINE)


async def start_worker(dsn: str, data_dir: Path, **settings: str) -> asyncio.subprocess.Process:
    """`runnel worker` on `dsn`, ready once it printed its ready line; `settings` are extra
    `RUNNEL_*` variables (lower-case names; no metrics port unless `worker_metrics_port`
    says one, so several workers may run at once). Its log goes to `data_dir/worker.log` (a pipe
    nobody drains could fill and stall the worker)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "RUNNEL_DATABASE_URL": dsn,
           "RUNNEL_DATA_DIR": str(data_dir), "RUNNEL_SWEEP_SECONDS": "0.05",
           "RUNNEL_STORAGE": "postgres", "RUNNEL_WORKER_METRICS_PORT": "0",
           **{f"RUNNEL_{name.upper()}": value for name, value in settings.items()}}
    env.pop("RUNNEL_OBJECT_STORE", None)
    log = data_dir / "worker.log"
    with log.open("w") as stderr:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "entrypoints.commands", "worker", cwd=REPO, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=stderr)
    assert child.stdout is not None
    line = await asyncio.wait_for(child.stdout.readline(), DEADLINE)
    if not line.decode().startswith(READY):
        child.kill()
        await child.wait()
        raise AssertionError(f"worker did not start: {line!r}\n{log.read_text()}")
    return child
