"""The object protocol survives a crash: a server killed (-9) between upload and commit
leaves an uploaded intent and its body, and the commit succeeds after the restart.

The server runs with no object-store settings at all, so this is also the default
wiring: bodies go to the filesystem under `RUNNEL_DATA_DIR/objects`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.http.objects_support import absolute, digest, objects_url, pins
from tests.http.restart import RestartableServer, restartable_server
from tests.http.server import bearer, token

BODY = b"survives a crash " * 40_000


@pytest.fixture
def node(pg_template: str, tmp_path: Path) -> Iterator[RestartableServer]:
    with restartable_server(pg_template, tmp_path / "node") as server:
        yield server


def test_an_uploaded_object_can_be_committed_after_a_crash(node: RestartableServer,
                                                           tmp_path: Path) -> None:
    run_id = "crash-run"
    with httpx.Client(base_url=node.api, headers=bearer(token()), timeout=30) as api:
        created = api.post(f"/runs/{run_id}/streams",
                           json={"stream_id": "s", "content_class": "output.text"})
        assert created.status_code == 201, created.text
        prepared = api.post(objects_url(run_id), json=pins(BODY)).json()
        upload = api.put(absolute(node.server, prepared["upload_url"]), content=BODY)
        assert upload.status_code == 200, upload.text

    node.server.process.kill()  # SIGKILL: no shutdown hook runs
    node.server.process.wait()
    bodies = [path for path in (tmp_path / "node" / "objects").rglob("*") if path.is_file()]
    assert len(bodies) == 1
    assert not bodies[0].name.endswith(".partial")
    node.start()

    with httpx.Client(base_url=node.api, headers=bearer(token()), timeout=30) as api:
        object_url = f"{objects_url(run_id)}/{prepared['object_id']}"
        assert api.get(object_url).json()["state"] == "uploaded"
        commit = api.post(object_url + "/commit")
        assert commit.status_code == 201, commit.text
        assert commit.json() == {"sequence": 1, "state": "committed"}
        download = api.get(object_url + "/body")
        assert download.status_code == 200
        assert digest(download.content) == digest(BODY)
