"""Log lines name no run and no stream (SPEC §8 `log_region`): a real server with its access
log on writes the keyed pseudonym that `runnel log-id` prints, never the ids themselves."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from entrypoints.observability.log_ids import LogIds
from tests.http.server import SECRET, bearer, running_server, token

RUN = "run-named-in-no-log"
STREAM = "stream-named-in-no-log"


def test_the_access_log_carries_pseudonyms_not_ids(
        database: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    env = {"RUNNEL_DATABASE_URL": database, "RUNNEL_STORAGE": "postgres"}
    data_dir = tmp_path_factory.mktemp("logs")
    with running_server(env, data_dir, extra_args=("--access-log",)) as server:
        headers = bearer(token())
        created = httpx.post(f"{server.api}/runs/{RUN}/streams", headers=headers, json={
            "stream_id": STREAM, "content_class": "output.text"})
        assert created.status_code == 201, created.text
        found = httpx.get(f"{server.api}/runs/{RUN}/streams/{STREAM}", headers=headers)
        assert found.status_code == 200
        missing = httpx.get(f"{server.api}/runs/{RUN}/streams/{STREAM}-x", headers=headers)
        assert missing.status_code == 404
    log = server.log.read_text()
    assert RUN not in log and STREAM not in log
    cli = subprocess.run([sys.executable, "-m", "entrypoints.commands", "log-id", RUN, STREAM],
                         env={**os.environ, "RUNNEL_JWT_SECRET": SECRET}, check=True,
                         capture_output=True, text=True)
    run_hash, stream_hash = cli.stdout.split()
    assert f"/runs/{run_hash}/streams/{stream_hash}" in log
    assert (run_hash, stream_hash) == (LogIds(SECRET).pseudonym(RUN),
                                       LogIds(SECRET).pseudonym(STREAM))


def test_pseudonyms_are_keyed_and_scrub_fields_and_paths() -> None:
    ids, other = LogIds("secret-one"), LogIds("secret-two")
    assert ids.pseudonym("r1") == ids.pseudonym("r1") != other.pseudonym("r1")
    text = ids.scrub("GET /api/workflow-streams/runs/r1/streams/s9/records failed: "
                     "StreamKey(tenant='t', run_id='r1', stream_id='s9')")
    assert "r1" not in text.replace(ids.pseudonym("r1"), "")
    assert f"run_id='{ids.pseudonym('r1')}'" in text
    assert f"/streams/{ids.pseudonym('s9')}/records" in text
