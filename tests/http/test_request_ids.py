"""Request ids in process (ADR 0031): the app as the server runs it (`create_asgi_app`), with a
dependency that fails, shows that a 5xx problem body names the request id that every log line
of that request carries, and that an `X-Request-ID` is kept only when it is safe."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from pydantic import SecretStr

from entrypoints.auth.token_redaction import RedactTokens
from entrypoints.composition.container import NodeHost
from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_asgi_app
from entrypoints.http.request_ids import accepted_request_id
from entrypoints.observability.log_format import JsonFormatter
from entrypoints.observability.log_ids import LogIds, ScrubIds
from tests.http.server import bearer, token
from tests.http.support import assert_problem

SECRET = "request-ids-secret-0123456789abcdef01"
RUN = "run-of-the-failing-request"


class _FailingDefinitions:
    """Stream definitions whose every use fails as an unforeseen bug would."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the service failed in {name} for run_id='{RUN}'")


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonFormatter())
        self.addFilter(RedactTokens())
        self.addFilter(ScrubIds(LogIds(SECRET)))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def log_lines() -> Iterator[_Lines]:
    handler = _Lines()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


async def test_a_500_names_the_request_id_its_log_lines_carry(log_lines: _Lines) -> None:
    settings = Settings(storage="memory", jwt_secret=SecretStr(SECRET), workers=False)
    host = NodeHost(settings)
    headers = bearer(token(tenant="acme", secret=SECRET))
    async with AsyncTestClient(create_asgi_app(settings, host=host)) as client:
        with host.swap(lambda node: replace(node, service=replace(
                node.service, definitions=_FailingDefinitions()))):
            failed = await client.post(f"/api/workflow-streams/runs/{RUN}/streams", json={
                "stream_id": "s", "content_class": "output.text"},
                headers={**headers, "X-Request-ID": "the-failing-one"})
            fresh = await client.get(f"/api/workflow-streams/runs/{RUN}/streams",
                                     headers=headers)
        refused = await client.get(f"/api/workflow-streams/runs/{RUN}/streams")

    body = assert_problem(failed, 500, "internal_error")
    assert body["request_id"] == failed.headers["x-request-id"] == "the-failing-one"
    assert RUN not in failed.text and "service failed" not in failed.text
    other = assert_problem(fresh, 500, "internal_error")
    assert other["request_id"] == fresh.headers["x-request-id"] != "the-failing-one"
    assert len(other["request_id"]) == 32
    assert "request_id" not in assert_problem(refused, 401, "unauthenticated")
    assert refused.headers["x-request-id"]

    entries = [json.loads(line) for line in log_lines.lines]
    errors = [e for e in entries if e["logger"] == "runnel.http" and e["level"] == "ERROR"]
    assert [e["request_id"] for e in errors] == ["the-failing-one", other["request_id"]]
    first = errors[0]
    assert first["tenant"] == "acme"
    assert first["route"] == "/api/workflow-streams/runs/{run_id}/streams"
    assert "RuntimeError" in first["exc"] and RUN not in first["exc"]
    assert LogIds(SECRET).pseudonym(RUN) in first["exc"]


async def test_a_503_names_its_request_id_too() -> None:
    settings = Settings(storage="memory", jwt_secret=SecretStr(SECRET), workers=False)
    host = NodeHost(settings)
    async with AsyncTestClient(create_asgi_app(settings, host=host)) as client:

        async def unreachable() -> None:
            raise ConnectionRefusedError("store down")

        with host.swap(lambda node: replace(node, backend=replace(node.backend,
                                                                  probe=unreachable))):
            answer = await client.get("/readyz", headers={"X-Request-ID": "probe-1"})
    assert assert_problem(answer, 503, "not_ready")["request_id"] == "probe-1"


@pytest.mark.parametrize("given", [
    b"abc", b"0f8e2c", b"Root.1-2_3:4", b"x" * 128,
    b"5b6c6f6e-0c2c-4d55-9d8a-3f1d2f7e9a10",
])
def test_a_safe_request_id_is_kept(given: bytes) -> None:
    assert accepted_request_id(given) == given.decode()


@pytest.mark.parametrize("given", [
    None, b"", b"x" * 129, b"has space", b"a/runs/r1", b"a,b", b"caf\xc3\xa9", b"line\nbreak",
    b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl", b"token=abc",
])
def test_anything_else_is_replaced_by_a_fresh_id(given: bytes | None) -> None:
    fresh = accepted_request_id(given)
    assert len(fresh) == 32 and int(fresh, 16) >= 0
    assert fresh != accepted_request_id(given)
