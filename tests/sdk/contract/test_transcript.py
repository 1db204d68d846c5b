"""The same script of requests, sent to `InMemoryRunnel` and to a real server, gets the same
answers: status, content type and body, byte for byte once what is meant to differ
(timestamps, request ids) is masked. Any drift of the double shows here as a diff."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from entrypoints.testing import InMemoryRunnel
from tests.http.server import RunnelServer
from tests.sdk.contract.conftest import Target, in_memory_target, server_target

VOLATILE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$")
DEFINITION = {"stream_id": "s", "content_class": "output.text", "consumers": ["ui"],
              "credit": {"max_unread_items": 3}}


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: "<id>" if key == "request_id" else _masked(item)
                for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    if isinstance(value, str) and VOLATILE.match(value):
        return "<time>"
    return value


def _answer(response: httpx.Response) -> tuple[int, str, Any, str | None]:
    body = response.json() if response.content else None
    return (response.status_code, response.headers.get("content-type", ""), _masked(body),
            response.headers.get("retry-after"))


async def _script(target: Target, run_id: str) -> list[Any]:
    stream = f"/runs/{run_id}/streams/s"
    transcript: list[Any] = []
    async with target.async_http() as http, \
            target.async_http(target.mint(tenant="t2")) as other:
        steps: list[tuple[httpx.AsyncClient, str, str, Any]] = [
            (http, "POST", f"/runs/{run_id}/streams", DEFINITION),
            (http, "POST", f"/runs/{run_id}/streams", DEFINITION),
            (http, "POST", f"/runs/{run_id}/streams", {**DEFINITION, "consumers": []}),
            (http, "POST", f"{stream}/records", {"records": [
                {"payload": {"text": "héllo"}, "idempotency_key": "turn-1"},
                {"data": "AAEC", "content_type": "application/octet-stream"}]}),
            (http, "POST", f"{stream}/records", {"records": [
                {"payload": {"text": "héllo"}, "idempotency_key": "turn-1"}]}),
            (http, "POST", f"{stream}/records", {"records": [{"payload": 3},
                                                             {"payload": 4}]}),
            (http, "POST", f"{stream}/records", {"records": [{"paylod": 5}]}),
            (http, "POST", f"{stream}/records", {"records": [{"payload": "x" * 70_000}]}),
            (http, "POST", f"{stream}/records", {"records": []}),
            (http, "POST", f"{stream}/records", {"recs": []}),
            (http, "GET", f"{stream}/records?after=1&limit=1", None),
            (http, "GET", f"{stream}/records?after=7", None),
            (http, "POST", f"{stream}/consumers/ui/ack", {"sequence": 2}),
            (http, "POST", f"{stream}/consumers/ui/ack", {"sequence": 1}),
            (http, "POST", f"{stream}/consumers/ui/ack", {"sequence": 9}),
            (http, "POST", f"{stream}/consumers/nobody/ack", {"sequence": 1}),
            (http, "POST", f"{stream}/records", {"records": [{"payload": 3}]}),
            (http, "POST", f"{stream}/live", {"chunks": ["a"], "source": "turn-2"}),
            (other, "GET", f"{stream}/records", None),
            (http, "GET", f"/runs/{run_id}/streams/ghost", None),
            (http, "GET", stream, None),
            (http, "POST", f"{stream}/close", None),
            (http, "POST", f"{stream}/close", None),
            (http, "POST", f"{stream}/records", {"records": [{"payload": 6}]}),
            (http, "GET", f"/runs/{run_id}/streams", None),
        ]
        for client, method, path, body in steps:
            response = await client.request(method, path, json=body)
            transcript.append((method, path.replace(run_id, "<run>"), _answer(response)))
        async with aconnect_sse(http, "GET", f"{stream}/subscribe",
                                headers={"Last-Event-ID": "2"}) as source:
            frames = [(event.event, event.id, _masked(json.loads(event.data)))
                      async for event in source.aiter_sse()
                      if event.data]  # not a `: ping`
        transcript.append(("subscribe", source.response.status_code, frames))
    return transcript


async def test_the_double_and_the_server_answer_a_script_alike(
        in_memory: InMemoryRunnel, server: RunnelServer, run_id: str) -> None:
    double = await _script(in_memory_target(in_memory), run_id)
    real = await _script(server_target(server), run_id)
    assert double == real
    codes = [(status, body.get("code") if isinstance(body, dict) else None)
             for _, _, (status, _, body, _) in real[:-1]]
    assert codes == [
        (201, None), (200, None), (409, "definition_conflict"), (201, None), (200, None),
        (429, "backpressure"), (422, "invalid_record"), (413, "too_large"),
        (422, "invalid_record"), (400, "invalid_request"), (200, None), (400, "future_cursor"),
        (200, None), (409, "ack_regression"), (400, "ack_beyond_head"),
        (404, "consumer_not_found"), (201, None), (202, None), (404, "not_found"),
        (404, "not_found"), (200, None), (200, None), (200, None), (409, "stream_closed"),
        (200, None)]
    assert [frame[0] for frame in real[-1][2]] == ["record", "end"]
