"""Health, readiness, metrics, the OpenAPI document, and the problem shape of framework errors."""

from __future__ import annotations

import httpx

from tests.http.server import METRICS, RunnelServer
from tests.http.support import append, assert_problem, create_stream, metric

STREAM_ROUTES = {
    "/api/workflow-streams/runs/{run_id}/streams": {"get", "post"},
    "/api/workflow-streams/runs/{run_id}/streams/{stream_id}": {"get"},
    "/api/workflow-streams/runs/{run_id}/streams/{stream_id}/records": {"get", "post"},
    "/api/workflow-streams/runs/{run_id}/streams/{stream_id}/subscribe": {"get"},
    "/api/workflow-streams/runs/{run_id}/streams/{stream_id}/consumers/{consumer_id}/ack":
        {"post"},
    "/api/workflow-streams/runs/{run_id}/streams/{stream_id}/close": {"post"},
    "/api/workflow-streams/runs/{run_id}/streams/{stream_id}/legal-hold": {"put"},
    "/api/workflow-streams/runs/{run_id}": {"delete"},
}


async def test_health_and_readiness(server: RunnelServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        assert (await client.get("/readyz")).json() == {"status": "ready"}


async def test_metrics_count_appends_records_bytes_and_route_latency(
        api: httpx.AsyncClient, server: RunnelServer, run_id: str) -> None:
    records_before = await metric(server.url, "runnel_records_appended_total")
    bytes_before = await metric(server.url, "runnel_record_bytes_appended_total")
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["abc", "de"])
    assert await metric(server.url, "runnel_records_appended_total") == records_before + 2
    # Bytes as credit counts them: compact JSON, '"abc"' and '"de"'.
    assert await metric(server.url, "runnel_record_bytes_appended_total") == bytes_before + 9
    async with httpx.AsyncClient() as client:
        response = await client.get(server.url + "/metrics", headers=METRICS)
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    for name in ("runnel_appends_total", "runnel_sse_readers", "runnel_reader_wakes_total",
                 "runnel_reader_gaps_total", "runnel_backpressure_rejections_total"):
        assert f"# TYPE {name.removesuffix('_total')}" in text, name
    assert ('runnel_http_request_duration_seconds_count{method="POST",'
            'route="/api/workflow-streams/runs/{run_id}/streams/{stream_id}/records",'
            'status="201"}') in text


async def test_backpressure_rejections_are_counted(api: httpx.AsyncClient, server: RunnelServer,
                                                   run_id: str) -> None:
    await create_stream(api, run_id, credit={"max_unread_items": 1}, consumers=["ui"])
    await append(api, run_id, "s", [1])
    before = await metric(server.url, "runnel_backpressure_rejections_total")
    refused = await api.post(f"/runs/{run_id}/streams/s/records",
                             json={"records": [{"payload": 2}]})
    assert refused.status_code == 429
    assert await metric(server.url, "runnel_backpressure_rejections_total") == before + 1


async def test_openapi_documents_every_route_and_subscribe_as_an_event_stream(
        server: RunnelServer) -> None:
    document = httpx.get(server.url + "/schema/openapi.json").json()
    paths = document["paths"]
    for path, methods in STREAM_ROUTES.items():
        assert methods <= set(paths[path]), path
    subscribe = paths["/api/workflow-streams/runs/{run_id}/streams/{stream_id}/subscribe"]["get"]
    assert "text/event-stream" in subscribe["responses"]["200"]["content"]
    parameters = {p["name"] for p in subscribe["parameters"]}
    assert {"after", "Last-Event-ID", "access_token", "live"} <= parameters
    records = paths["/api/workflow-streams/runs/{run_id}/streams/{stream_id}/records"]
    assert "access_token" not in {p["name"] for p in records["get"].get("parameters", [])}
    assert "application/problem+json" in records["post"]["responses"]["429"]["content"]
    assert records["post"]["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AppendBody"}
    assert document["components"]["securitySchemes"]["BearerToken"]["scheme"] == "bearer"
    assert httpx.get(server.url + "/schema").status_code == 200


async def test_unknown_routes_and_methods_are_problems(server: RunnelServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        assert_problem(await client.get("/api/workflow-streams/nothing"), 404, "not_found")
        assert_problem(await client.delete("/healthz"), 405, "method_not_allowed")


async def test_oversized_headers_are_refused_before_any_work(server: RunnelServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        over_app_limit = await client.get("/healthz", headers={"x-padding": "p" * 9000})
        assert_problem(over_app_limit, 431, "headers_too_large")
        # Refused before routing: an unknown path, or a body, changes nothing, and the
        # answer still carries what every response carries.
        unknown = await client.post("/no-such-path", headers={"x-padding": "p" * 9000},
                                    json={"records": [{"payload": 1}]})
        assert assert_problem(unknown, 431, "headers_too_large")["limit"] > 0
        assert unknown.headers["referrer-policy"] == "no-referrer"
        assert unknown.headers["x-request-id"]
        # Far beyond it, whichever refuses first (the HTTP parser bounds what it buffers while
        # headers trickle in; the app checks what arrived), the request is never served.
        far_over = await client.get("/healthz", headers={"x-padding": "p" * 40_000})
        assert far_over.status_code in (400, 431)
