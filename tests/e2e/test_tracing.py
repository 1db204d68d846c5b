"""Optional OpenTelemetry (ADR 0031; the `otel` extra, installed by `make install`): a real
`runnel serve` with `RUNNEL_OTEL=true` honours an incoming `traceparent` and writes the trace
on its log lines; in process, the server span is named by route template and its attributes
name no run, no stream and no token."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import httpx
import pytest
from litestar.testing import AsyncTestClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr

from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_app
from entrypoints.http.request_ids import RequestIds
from entrypoints.observability import tracing, tracing_sdk
from entrypoints.observability.log_ids import LogIds
from tests.http.server import bearer, running_server, token

SECRET = "tracing-secret-0123456789abcdef0123456"
RUN = "run-named-in-no-span"


def test_a_traceparent_is_honoured_and_its_trace_is_on_the_log_lines(
        database: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    env = {"RUNNEL_DATABASE_URL": database, "RUNNEL_STORAGE": "postgres", "RUNNEL_OTEL": "true",
           "OTEL_TRACES_EXPORTER": "none", "RUNNEL_LOG_FORMAT": "json"}
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    with running_server(env, tmp_path_factory.mktemp("tracing"),
                        extra_args=("--access-log",)) as server:
        answer = httpx.get(f"{server.api}/runs/{RUN}/streams", headers={
            **bearer(token()), "traceparent": f"00-{trace_id}-{parent}-01",
            "X-Request-ID": "traced-1"})
        assert answer.status_code == 404  # a run with no stream; routed all the same
        untraced = httpx.get(server.url + "/healthz", headers={"X-Request-ID": "untraced-1"})
        assert untraced.status_code == 200
    entries = [json.loads(line) for line in server.log.read_text().splitlines()]
    assert any(e["logger"] == "runnel.tracing" and "tracing on" in e["message"]
               for e in entries)
    access = {e["request_id"]: e for e in entries if e["logger"] == "uvicorn.access"}
    assert access["traced-1"]["trace_id"] == trace_id
    assert len(access["traced-1"]["span_id"]) == 16 and access["traced-1"]["span_id"] != parent
    # Without a traceparent the server starts a trace of its own.
    assert access["untraced-1"]["trace_id"] not in (trace_id, "0" * 32)


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(tracing_sdk.ScrubAttributes(tracing._Scrubber(LogIds(SECRET))))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "_ENABLED", True)
    yield provider, exporter
    provider.shutdown()


async def test_the_server_span_names_the_route_and_no_id_or_token(
        spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    settings = Settings(storage="memory", jwt_secret=SecretStr(SECRET), workers=False)
    api_token = token(secret=SECRET)
    app = tracing_sdk.asgi_middleware(
        RequestIds(create_app(settings)),
        tracing._Scrubber(LogIds(SECRET)), tracer_provider=provider)
    async with AsyncTestClient(app) as client:
        answer = await client.get(f"/api/workflow-streams/runs/{RUN}/streams",
                                  params={"token": api_token}, headers=bearer(api_token))
        assert answer.status_code == 404  # a run with no stream; routed all the same
    (span,) = [s for s in exporter.get_finished_spans() if s.kind.name == "SERVER"]
    assert span.name == "GET /api/workflow-streams/runs/{run_id}/streams"
    assert span.attributes is not None
    assert span.attributes["http.route"] == "/api/workflow-streams/runs/{run_id}/streams"
    text = json.dumps(dict(span.attributes))
    assert LogIds(SECRET).pseudonym(RUN) in text, text
    assert RUN not in text and api_token.split(".")[2] not in text
