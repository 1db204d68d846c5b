"""The TypeScript SDK's tests (sdk/typescript, ADR 0068) run against one real `runnel serve`
on Postgres, with workers (retention prunes within a second) and an object store on disk,
whose CORS list names the origin the React page is served from (ADR 0062)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.http.restart import RestartableServer, restartable_server
from tests.pg import pg_template

__all__ = ["pg_template"]

PACKAGE = Path(__file__).parents[2] / "sdk" / "typescript"
SERVER_ENV = {"RUNNEL_OBJECT_STORE": "fs", "RUNNEL_SWEEP_SECONDS": "1"}


class PageOrigin:
    """A web app's origin: a static server of one directory on a port of its own."""

    def __init__(self, directory: Path) -> None:
        class Files(SimpleHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

        self.directory = directory
        files = partial(Files, directory=str(directory))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), files)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def built(path: str) -> Path:
    """A file of the built package; fails, naming the make target, when it is missing."""
    target = PACKAGE / path
    if not target.exists():
        pytest.fail(f"{target} is missing: run `make typescript-sdk` (make test does)")
    return target


@pytest.fixture(scope="session")
def page_origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageOrigin]:
    origin = PageOrigin(tmp_path_factory.mktemp("page"))
    try:
        yield origin
    finally:
        origin.close()


@pytest.fixture(scope="session")
def runnel(pg_template: str, tmp_path_factory: pytest.TempPathFactory,
           page_origin: PageOrigin) -> Iterator[RestartableServer]:
    env = {**SERVER_ENV, "RUNNEL_CORS_ORIGINS": page_origin.url}
    with restartable_server(pg_template, tmp_path_factory.mktemp("runnel"), env,
                            workers=True) as server:
        yield server
