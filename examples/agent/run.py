"""`make example`: the agent example on the embedded default, in one command.

Starts an embedded Postgres under `.agent-example/` (it survives restarts), a DBOS system
database on it, `runnel serve` on port 8091 with `RUNNEL_WAIT_SERVICE=dbos`, and the
example's process (the `conversation` workflow and its page) on port 8090. Open
http://127.0.0.1:8090/ and ask something; ^C stops everything.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx

from adapters.postgres.embedded import start_embedded

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / ".agent-example"
RUNNEL_PORT, PAGE_PORT = 8091, 8090
DBOS_DATABASE = "runnel_agent_dbos"


async def ensure_database(admin_dsn: str, name: str) -> None:
    connection = await asyncpg.connect(admin_dsn)
    try:
        if not await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()


def secret() -> str:
    path = DATA / "jwt-secret"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(48))
        path.chmod(0o600)
    return path.read_text().strip()


def main() -> int:
    DATA.mkdir(exist_ok=True)
    embedded = start_embedded(DATA / "postgres")
    asyncio.run(ensure_database(embedded.admin_dsn, DBOS_DATABASE))
    parts = urlsplit(embedded.admin_dsn)
    dbos_dsn = urlunsplit(parts._replace(path=f"/{DBOS_DATABASE}"))
    jwt_secret = secret()
    url = f"http://127.0.0.1:{RUNNEL_PORT}"
    env = {**os.environ, "RUNNEL_DATABASE_URL": embedded.dsn, "RUNNEL_JWT_SECRET": jwt_secret,
           "RUNNEL_DATA_DIR": str(DATA / "runnel"), "RUNNEL_WAIT_SERVICE": "dbos",
           "RUNNEL_DBOS_DATABASE_URL": dbos_dsn, "RUNNEL_PROCESSES": "1"}
    runnel = subprocess.Popen([sys.executable, "-m", "entrypoints.commands", "serve",
                               "--port", str(RUNNEL_PORT)], env=env, cwd=ROOT)
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        return subprocess.call([sys.executable, "-m", "examples.agent.app", "--runnel-url", url,
                                "--secret", jwt_secret, "--dbos-url", dbos_dsn,
                                "--port", str(PAGE_PORT)], cwd=ROOT)
    except KeyboardInterrupt:
        return 0
    finally:
        runnel.terminate()
        runnel.wait(30)
        embedded.stop()


if __name__ == "__main__":
    sys.exit(main())
