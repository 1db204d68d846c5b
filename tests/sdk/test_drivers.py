"""The sync and async drivers perform one plan the same way (`runnel_client.effects`):
the same requests, the same retries, the same errors, and an early stop hangs up.

Both clients run over an `httpx.MockTransport` that scripts the server, so each test
runs the very same script through `RunnelClient` and `AsyncRunnelClient`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from runnel_client import AsyncRunnelClient, BackpressureError, Record, RunnelClient, RunnelError

BASE = "http://runnel.test"
Handler = Callable[[httpx.Request], httpx.Response]


def record(sequence: int) -> dict[str, Any]:
    return {"sequence": sequence, "content_type": "application/json", "appended_at": "t",
            "payload": sequence}


class Body(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body that says whether it was closed."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks, self.closed = chunks, False

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def both(handler: Handler, use: Callable[[Any], Any]) -> list[Any]:
    """`use(client)` with the sync client, then awaited with the async one (a coroutine
    or an async iterator, drained); what each gave, or the exception each raised."""
    transport = httpx.MockTransport(handler)
    outcomes: list[Any] = []
    with RunnelClient(BASE, "t", http=httpx.Client(base_url=BASE, transport=transport)) as sync:
        try:
            answer = use(sync)
            outcomes.append(list(answer) if isinstance(answer, Iterator) else answer)
        except Exception as error:
            outcomes.append(error)

    async def run_async() -> None:
        async with AsyncRunnelClient(BASE, "t", http=httpx.AsyncClient(
                base_url=BASE, transport=transport)) as client:
            try:
                answer = use(client)
                outcomes.append([item async for item in answer] if hasattr(answer, "__aiter__")
                                else await answer)
            except Exception as error:
                outcomes.append(error)

    asyncio.run(run_async())
    return outcomes


def test_both_drivers_retry_a_backpressured_append_with_the_same_body_then_give_up() -> None:
    bodies: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        return httpx.Response(429, headers={"Retry-After": "0"},
                              json={"code": "backpressure", "detail": "slow down"})

    outcomes = both(handler, lambda c: c.append("r", "s", [{"payload": 1}],
                                                backpressure_retries=2))
    assert [type(outcome) for outcome in outcomes] == [BackpressureError, BackpressureError]
    assert len(bodies) == 6 and len(set(bodies)) == 1
    assert json.loads(bodies[0]) == {"records": [{"payload": 1}]}


def test_a_transport_error_reaches_the_caller_of_a_call_unchanged() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused (on purpose)", request=request)

    outcomes = both(handler, lambda c: c.get_stream("r", "s"))
    assert [type(outcome) for outcome in outcomes] == [httpx.ConnectError] * 2


def test_a_download_that_does_not_match_its_digest_is_refused_by_both() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Length": "5", "X-Content-SHA256": "0" * 64},
                              content=b"hello")

    outcomes = both(handler, lambda c: c.download_object("r", "s", "obj"))
    assert all(isinstance(outcome, RunnelError) and outcome.code == "download_mismatch"
               for outcome in outcomes), outcomes


def test_an_upload_prepares_sends_the_body_and_commits_in_order_in_both() -> None:
    calls: list[tuple[str, str, bytes]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append((request.method, request.url.path.rsplit("/s/", 1)[1], request.read()))
        if request.url.path.endswith("/objects"):
            return httpx.Response(201, json={"object_id": "o1", "state": "prepared"})
        if request.url.path.endswith("/commit"):
            return httpx.Response(200, json={"sequence": 7})
        if request.method == "PUT":
            return httpx.Response(200, json={})
        return httpx.Response(200, json={"records": [{**record(7), "object": {
            "object_id": "o1"}}], "next_cursor": 7, "head": 7, "earliest": 1, "closed": False})

    outcomes = both(handler, lambda c: c.upload_object("r", "s", b"body"))
    assert [outcome.sequence for outcome in outcomes] == [7, 7]
    once = [("POST", "objects"), ("PUT", "objects/o1/body"), ("POST", "objects/o1/commit"),
            ("GET", "records")]
    assert [(method, path) for method, path, _ in calls] == once * 2
    assert [body for method, _, body in calls if method == "PUT"] == [b"body"] * 2


def test_stopping_a_follow_early_hangs_up_its_subscription_in_both() -> None:
    opened: list[Body] = []

    def handler(request: httpx.Request) -> httpx.Response:
        frames = [f"event: record\nid: {n}\ndata: {json.dumps(record(n))}\n\n".encode()
                  for n in (1, 2, 3)]
        opened.append(Body(frames))
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"},
                              stream=opened[-1])

    def first(client: Any) -> Any:
        follow = client.follow("r", "s")
        if isinstance(client, RunnelClient):
            item = next(follow)
            follow.close()
            return item

        async def take() -> Record:
            item = await anext(follow)
            await follow.aclose()
            return item
        return take()

    outcomes = both(handler, first)
    assert [item.sequence for item in outcomes] == [1, 1]
    assert [body.closed for body in opened] == [True, True]


@pytest.mark.parametrize("status", [403, 404])
def test_a_refused_subscription_raises_its_problem_in_both(status: int) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"code": "nope", "detail": "refused on purpose"})

    outcomes = both(handler, lambda c: c.follow("r", "s"))
    assert [(type(outcome), outcome.status) for outcome in outcomes] == [(RunnelError, status)] * 2
