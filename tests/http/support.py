"""Helpers for the HTTP tests: stream setup, and reading Server-Sent Events with a bound."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from httpx_sse import ServerSentEvent, aconnect_sse

from tests.http.server import METRICS

GUARD_SECONDS = 30.0
"""Only a guard against a hanging test (it then fails); no test asserts on time."""

PROBLEM = "application/problem+json"


async def create_stream(api: httpx.AsyncClient, run_id: str, stream_id: str = "s",
                        **pins: Any) -> dict[str, Any]:
    response = await api.post(f"/runs/{run_id}/streams",
                              json={"stream_id": stream_id, "content_class": "output.text",
                                    **pins})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def append(api: httpx.AsyncClient, run_id: str, stream_id: str,
                 payloads: list[Any]) -> list[int]:
    response = await api.post(f"/runs/{run_id}/streams/{stream_id}/records",
                              json={"records": [{"payload": p} for p in payloads]})
    assert response.status_code == 201, response.text
    sequences: list[int] = response.json()["sequences"]
    return sequences


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert {"type", "title", "detail"} <= set(body)
    return body


async def read_events(client: httpx.AsyncClient, url: str, *,
                      until: Callable[[list[ServerSentEvent]], bool],
                      headers: Mapping[str, str] | None = None,
                      params: Mapping[str, str] | None = None,
                      on_open: Callable[[], Any] | None = None) -> list[ServerSentEvent]:
    """Subscribe, collect events until `until(events)` holds or the server ends the stream.

    `on_open` (sync or async) runs once the response headers arrived, i.e. once the
    subscription is registered on the server.
    """
    events: list[ServerSentEvent] = []
    async with asyncio.timeout(GUARD_SECONDS), aconnect_sse(
            client, "GET", url, headers=dict(headers or {}), params=params) as source:
        assert source.response.status_code == 200, await source.response.aread()
        if on_open is not None:
            opened = on_open()
            if asyncio.iscoroutine(opened):
                await opened
        async for event in source.aiter_sse():
            events.append(event)
            if until(events):
                break
    return events


def records_of(events: list[ServerSentEvent]) -> list[int]:
    return [int(event.id) for event in events if event.event == "record"]


def count_records(n: int) -> Callable[[list[ServerSentEvent]], bool]:
    return lambda events: len(records_of(events)) >= n


def has_event(name: str) -> Callable[[list[ServerSentEvent]], bool]:
    return lambda events: any(event.event == name for event in events)


async def metric(server_url: str, name: str) -> float:
    """The value of an unlabelled sample on the server's /metrics."""
    async with httpx.AsyncClient() as client:
        text = (await client.get(server_url + "/metrics", headers=METRICS)).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"metric {name} not exposed")


async def wait_for_metric(server_url: str, name: str,
                          condition: Callable[[float], bool]) -> float:
    """Poll a metric until `condition` holds (fails the test after the guard)."""
    async with asyncio.timeout(GUARD_SECONDS):
        while True:
            value = await metric(server_url, name)
            if condition(value):
                return value
            await asyncio.sleep(0.05)
