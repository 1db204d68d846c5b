"""One logging setup for every process (ADR 0031): real `runnel serve` and `runnel worker`
processes with `RUNNEL_LOG_FORMAT=json` write one JSON object per stderr line, every request
line carries the request's id, route, status and duration, the adapters' warnings are no
longer lost, ids are pseudonyms and no token is written; `RUNNEL_LOG_LEVEL` is honoured."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from entrypoints.observability.log_ids import LogIds
from tests.embedded_dirs import embedded_dir
from tests.http.server import BANNER_START, SECRET, RunnelServer, bearer, running_server, token
from tests.integration.worker_processes import start_worker
from tests.pg import database_name, run_sync

__all__ = ["embedded_dir"]

RUN = "run-named-in-no-json-line"
STREAM = "stream-named-in-no-json-line"
DEADLINE = 60.0  # an upper bound for a line to arrive; never asserted as a duration
FIELDS = {"ts", "level", "logger", "message"}
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
HEX_ID = re.compile(r"^[0-9a-f]{32}$")


def _json_lines(log: Path) -> list[dict[str, Any]]:
    lines = log.read_text().splitlines()
    assert lines, "nothing was logged"
    parsed = []
    for line in lines:
        entry = json.loads(line)  # every stderr line is one JSON object
        assert set(entry) >= FIELDS, line
        assert TS.match(entry["ts"]), line
        parsed.append(entry)
    return parsed


def _access(entries: list[dict[str, Any]], request_id: str) -> dict[str, Any]:
    found = [e for e in entries if e["logger"] == "uvicorn.access"
             and e.get("request_id") == request_id]
    assert len(found) == 1, (request_id, entries)
    return found[0]


def _wait_for_line(log: Path, text: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while text not in log.read_text():
        assert time.monotonic() < deadline, f"{text!r} never logged:\n{log.read_text()}"
        time.sleep(0.1)


async def _cut_listen_connection(dsn: str) -> int:
    connection = await asyncpg.connect(dsn)
    try:
        return len(await connection.fetch(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'runnel-listen' AND datname = $1", database_name(dsn)))
    finally:
        await connection.close()


def test_a_json_server_log_is_one_object_per_line_with_the_request_fields(
        database: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    env = {"RUNNEL_DATABASE_URL": database, "RUNNEL_STORAGE": "postgres",
           "RUNNEL_LOG_FORMAT": "json"}
    api_token = token(tenant="acme")
    jwt_as_id = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"  # safe characters, a JWT
    with running_server(env, tmp_path_factory.mktemp("json-logs"),
                        extra_args=("--access-log",)) as server:
        headers = bearer(api_token)
        streams = f"{server.api}/runs/{RUN}/streams"
        created = httpx.post(streams, json={"stream_id": STREAM, "content_class": "output.text"},
                             headers={**headers, "X-Request-ID": "client-chose-this.42"})
        assert created.status_code == 201, created.text
        assert created.headers["x-request-id"] == "client-chose-this.42"
        refused = {}
        for bad in ("has a space", "x" * 129, "semi;colon", jwt_as_id):
            answer = httpx.get(f"{streams}/{STREAM}", headers={**headers, "X-Request-ID": bad})
            assert answer.status_code == 200
            assert HEX_ID.match(answer.headers["x-request-id"]), answer.headers
            refused[bad] = answer.headers["x-request-id"]
        generated = httpx.get(f"{streams}/{STREAM}-missing", headers=headers)
        assert generated.status_code == 404
        assert generated.headers["x-request-id"] != refused["has a space"]
        assert httpx.post(f"{streams}/{STREAM}/close", headers=headers).status_code == 200
        minted = httpx.post(f"{streams}/{STREAM}/subscribe-token", headers=headers).json()
        events = httpx.get(f"{streams}/{STREAM}/subscribe",
                           params={"access_token": minted["token"]},
                           headers={"X-Request-ID": "sse-request"})
        assert events.status_code == 200
        assert events.headers["content-type"].startswith("text/event-stream")
        assert events.headers["x-request-id"] == "sse-request"
        assert run_sync(lambda: _cut_listen_connection(database)) == 1
        _wait_for_line(server.log, "LISTEN connection lost")
    entries = _json_lines(server.log)
    text = server.log.read_text()

    created_line = _access(entries, "client-chose-this.42")
    assert created_line["route"] == "/api/workflow-streams/runs/{run_id}/streams"
    assert created_line["status"] == 201 and created_line["tenant"] == "acme"
    assert isinstance(created_line["duration_ms"], float) and created_line["duration_ms"] >= 0
    assert created_line["level"] == "INFO"
    for bad, replaced in refused.items():
        assert _access(entries, replaced)["status"] == 200
        assert bad not in text
    missing = _access(entries, generated.headers["x-request-id"])
    assert missing["status"] == 404
    assert missing["route"] == "/api/workflow-streams/runs/{run_id}/streams/{stream_id}"
    assert _access(entries, "sse-request")["route"].endswith("/{stream_id}/subscribe")

    lost = [e for e in entries if "LISTEN connection lost" in e["message"]]
    assert lost and lost[0]["logger"] == "adapters.postgres.bus"
    assert lost[0]["level"] == "WARNING" and "request_id" not in lost[0]

    ids = LogIds(SECRET)
    assert RUN not in text and STREAM not in text
    assert f"/runs/{ids.pseudonym(RUN)}/streams/{ids.pseudonym(STREAM)}" in text
    for secret in (api_token, minted["token"]):
        for piece in (secret, secret.split(".")[1], secret.split(".")[2]):
            assert piece not in text
    assert "access_token=[redacted]" in text


def test_every_line_of_a_json_server_on_the_embedded_default_is_json(
        embedded_dir: Path) -> None:
    """stdout and stderr are both log streams to a supervisor: the banner is one JSON line
    too (printed as text only to a terminal), and the embedded Postgres's initdb and
    pg_ctl say nothing past the log. A first start, then a restart on the same cluster."""
    for attempt in ("first start", "restart"):
        server = RunnelServer.start({"RUNNEL_DATABASE_URL": None, "RUNNEL_STORAGE": None,
                                     "RUNNEL_JWT_SECRET": None, "RUNNEL_LOG_FORMAT": "json"},
                                    embedded_dir, extra_args=("--access-log",))
        try:
            assert httpx.get(server.url + "/readyz").status_code == 200
            missing_token = httpx.get(f"{server.api}/runs/{RUN}/streams")
            assert missing_token.status_code == 401
            secret = (embedded_dir / "jwt-secret").read_text().strip()
            headers = bearer(token(tenant="dev", secret=secret))
            bad = httpx.post(f"{server.api}/runs/{RUN}/streams", headers=headers,
                             content=b"{not json", timeout=30)
            assert bad.status_code in (400, 422), bad.text
            created = httpx.post(f"{server.api}/runs/{RUN}/streams", headers=headers,
                                 json={"stream_id": STREAM, "content_class": "x"}, timeout=30)
            assert created.status_code in (200, 201), created.text
        finally:
            server.stop()
        printed = "".join(server.stdout_lines).splitlines()
        for line in printed:
            json.loads(line)
        entries = _json_lines(server.log)
        banner = [e for e in entries if e["message"].startswith(BANNER_START)]
        assert len(banner) == 1, (attempt, entries)
        assert "eyJ" not in server.log.read_text() + "".join(printed)  # no dev token logged
        assert any(e["logger"] == "uvicorn.access" and e.get("status") == 401
                   for e in entries), entries


def test_log_level_warning_silences_info_and_text_lines_have_timestamps(
        database: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    env = {"RUNNEL_DATABASE_URL": database, "RUNNEL_STORAGE": "postgres",
           "RUNNEL_LOG_LEVEL": "warning", "RUNNEL_NOT_A_SETTING": "x"}
    with running_server(env, tmp_path_factory.mktemp("quiet-logs"),
                        extra_args=("--access-log",)) as server:
        assert httpx.get(server.url + "/healthz").status_code == 200
        assert httpx.get(f"{server.api}/runs/r/streams").status_code == 401
    lines = server.log.read_text().splitlines()
    assert lines, "the warning was not logged"
    for line in lines:
        stamp, level, _ = line.split(" ", 2)
        assert TS.match(stamp), line
        assert level in {"WARNING", "ERROR", "CRITICAL"}, line
    assert any("unknown setting RUNNEL_NOT_A_SETTING" in line for line in lines)


def test_a_text_server_log_has_timestamps_and_request_ids(
        database: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    env = {"RUNNEL_DATABASE_URL": database, "RUNNEL_STORAGE": "postgres"}
    with running_server(env, tmp_path_factory.mktemp("text-logs"),
                        extra_args=("--access-log",)) as server:
        assert httpx.get(server.url + "/healthz",
                         headers={"X-Request-ID": "text-1"}).status_code == 200
    lines = server.log.read_text().splitlines()
    assert all(TS.match(line.split(" ", 1)[0]) for line in lines), lines
    access = [line for line in lines if " uvicorn.access: " in line]
    assert all(re.search(r" request_id=[A-Za-z0-9._:-]+$", line) for line in access), access
    assert len([line for line in access if line.endswith(" request_id=text-1")]) == 1


async def test_the_worker_logs_json_too(database: str, tmp_path: Path) -> None:
    worker = await start_worker(database, tmp_path, log_format="json")
    try:
        worker.send_signal(signal.SIGTERM)
        await asyncio.wait_for(worker.wait(), DEADLINE)
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()
    entries = _json_lines(tmp_path / "worker.log")
    assert any(e["logger"] == "runnel.workers" and "workers started" in e["message"]
               for e in entries), entries
