"""`GET /runs/{run_id}/subscribe` over a real `runnel serve` on Postgres: every stream of
the run the caller may read, later streams included, one subscription; a compound cursor
resumes each stream exactly; a malformed or oversize one is 400; unreadable streams and
other tenants never show (ADR 0073)."""

from __future__ import annotations

import json

import httpx
from httpx_sse import ServerSentEvent

from tests.http.server import bearer, token
from tests.http.support import (
    append,
    assert_problem,
    create_stream,
    has_event,
    read_events,
)

BOB = bearer(token(sub="bob"))
ONLY_ALICE = {"authorization": {"readers": ["alice"], "writers": ["*"]}}


def records(events: list[ServerSentEvent]) -> list[tuple[str, int]]:
    return [(json.loads(event.data)["stream_id"], json.loads(event.data)["sequence"])
            for event in events if event.event == "record"]


def count(n: int):  # type: ignore[no-untyped-def]
    return lambda events: len(records(events)) >= n


async def test_every_readable_stream_and_a_later_one_arrive_and_secrets_never_show(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "a")
    await create_stream(api, run_id, "b")
    await create_stream(api, run_id, "secret", **ONLY_ALICE)
    await append(api, run_id, "a", [1, 2])
    await append(api, run_id, "b", [1])
    await append(api, run_id, "secret", ["hidden"])

    async def later() -> None:
        await create_stream(api, run_id, "late")
        await append(api, run_id, "late", ["new"])
        await create_stream(api, run_id, "late-secret", **ONLY_ALICE)
        await append(api, run_id, "late-secret", ["hidden"])
        await append(api, run_id, "a", [3])

    events = await read_events(api, f"/runs/{run_id}/subscribe", headers=BOB,
                               until=count(5), on_open=later)
    seen = records(events)
    assert [seq for stream, seq in seen if stream == "a"] == [1, 2, 3]
    assert sorted(seen) == [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("late", 1)]
    assert all("secret" not in (event.data + event.id) for event in events)
    last = [event for event in events if event.event == "record"][-1]
    assert last.id == "a=3,b=1,late=1"
    # Alice, who may read everything, gets the secret streams too.
    hers = await read_events(api, f"/runs/{run_id}/subscribe", until=count(7))
    assert ("secret", 1) in records(hers) and ("late-secret", 1) in records(hers)


async def test_resuming_from_last_event_id_loses_and_repeats_nothing(
        api: httpx.AsyncClient, run_id: str) -> None:
    for stream_id in ("a", "b", "c"):
        await create_stream(api, run_id, stream_id)
        await append(api, run_id, stream_id, list(range(5)))
    url = f"/runs/{run_id}/subscribe"
    first = await read_events(api, url, until=count(7))
    resumed_from = [event for event in first if event.event == "record"][-1].id
    rest = await read_events(api, url, headers={"Last-Event-ID": resumed_from},
                             until=count(8))
    together = records(first) + records(rest)
    assert sorted(together) == sorted((s, n) for s in "abc" for n in range(1, 6))
    assert len(together) == 15
    query = await read_events(api, url, params={"after": "a=5,b=5,c=4"}, until=count(1))
    assert records(query) == [("c", 5)]


async def test_closed_streams_end_alone_and_erasing_the_run_ends_the_subscription(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "a")
    await create_stream(api, run_id, "b")
    await append(api, run_id, "a", [1])
    await api.post(f"/runs/{run_id}/streams/a/close")
    admin = bearer(token(sub="root", scopes=("streams:admin",)))

    async def erase() -> None:
        response = await api.delete(f"/runs/{run_id}", headers=admin)
        assert response.status_code == 200, response.text

    events = await read_events(api, f"/runs/{run_id}/subscribe",
                               until=has_event("run_end"), on_open=erase)
    ends = [json.loads(event.data) for event in events if event.event == "end"]
    assert {end["stream_id"] for end in ends} == {"a", "b"}
    assert {"stream_id": "a", "reason": "closed", "last_sequence": 1} in ends
    assert events[-1].event == "run_end"
    assert json.loads(events[-1].data) == {"reason": "erased", "cursor": "a=1"}


async def test_a_read_only_principal_follows_only_the_streams_it_may_read(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "public")
    await create_stream(api, run_id, "for-dave",
                        authorization={"readers": ["dave"], "writers": ["*"]})
    await create_stream(api, run_id, "secret", **ONLY_ALICE)
    for stream_id in ("public", "for-dave", "secret"):
        await append(api, run_id, stream_id, [stream_id])
    dave = bearer(token(sub="dave", scopes=("streams:read",)))
    events = await read_events(api, f"/runs/{run_id}/subscribe", headers=dave,
                               params={"after": "secret=1"}, until=count(2))
    assert sorted(records(events)) == [("for-dave", 1), ("public", 1)]
    assert all("secret" not in event.id for event in events)
    filtered = await read_events(api, f"/runs/{run_id}/subscribe", headers=dave,
                                 params={"streams": "public,secret"}, until=count(1))
    assert records(filtered) == [("public", 1)]
    writer_only = bearer(token(sub="dave", scopes=("streams:write",)))
    assert_problem(await api.get(f"/runs/{run_id}/subscribe", headers=writer_only),
                   403, "forbidden")


async def test_another_tenant_and_an_unknown_run_are_not_found(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "a")
    stranger = bearer(token(tenant="t2"))
    assert_problem(await api.get(f"/runs/{run_id}/subscribe", headers=stranger),
                   404, "not_found")
    assert_problem(await api.get(f"/runs/{run_id}-none/subscribe"), 404, "not_found")
    bound = bearer(token(runs=("another-run",)))
    assert_problem(await api.get(f"/runs/{run_id}/subscribe", headers=bound),
                   404, "not_found")


async def test_malformed_huge_and_future_cursors_are_refused_before_the_stream(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "a")
    url = f"/runs/{run_id}/subscribe"
    for bad in ("5", "a=x", "a=1,a=2", "a=-1", "a b=1", "a=1,"):
        assert_problem(await api.get(url, headers={"Last-Event-ID": bad}),
                       400, "invalid_cursor")
        assert_problem(await api.get(url, params={"after": bad}), 400, "invalid_cursor")
    oversize = ",".join(f"s{index}=1" for index in range(65))
    body = assert_problem(await api.get(url, headers={"Last-Event-ID": oversize}),
                          400, "cursor_too_large")
    assert body["max_streams"] == 64
    assert_problem(await api.get(url, params={"after": "x" * 5000}), 400, "cursor_too_large")
    huge = await api.get(url, headers={"Last-Event-ID": "a=1," * 20_000})
    assert huge.status_code == 431
    assert_problem(await api.get(url, params={"after": "a=9"}), 400, "future_cursor")
    assert_problem(await api.get(url, params={"streams": "a,,b"}), 400, "invalid_identifier")


async def test_live_chunks_come_with_live_true_only_and_name_their_stream(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "a")
    await create_stream(api, run_id, "fast", mode="best_effort")
    url = f"/runs/{run_id}/subscribe"

    async def publish() -> None:
        for stream_id in ("a", "fast"):
            response = await api.post(f"/runs/{run_id}/streams/{stream_id}/live",
                                      json={"chunks": [f"{stream_id}-chunk"]})
            assert response.status_code == 202, response.text
        await append(api, run_id, "a", ["stored"])

    events = await read_events(api, url, params={"live": "true"}, on_open=publish,
                               until=lambda events: len(records(events)) >= 1 and sum(
                                   event.event == "live" for event in events) >= 2)
    lives = [json.loads(event.data) for event in events if event.event == "live"]
    assert {(chunk["stream_id"], chunk["data"]) for chunk in lives} == {
        ("a", "a-chunk"), ("fast", "fast-chunk")}
    assert all(event.id == "" for event in events if event.event == "live")

    async def publish_again() -> None:
        for stream_id in ("a", "fast"):
            await api.post(f"/runs/{run_id}/streams/{stream_id}/live",
                           json={"chunks": ["unseen"]})
        await append(api, run_id, "a", ["stored again"])

    quiet = await read_events(api, url, params={"after": "a=1"}, on_open=publish_again,
                              until=count(1))
    # Without live=true, a stored stream's chunks never come (a best-effort stream's may:
    # it has nothing else), and its chunk was published before its record.
    assert "a" not in [json.loads(e.data)["stream_id"] for e in quiet if e.event == "live"]
    assert records(quiet) == [("a", 2)]


async def test_a_run_wider_than_a_cursor_is_refused_unless_narrowed(
        api: httpx.AsyncClient, run_id: str) -> None:
    for index in range(65):
        await create_stream(api, run_id, f"s{index:02d}")
    url = f"/runs/{run_id}/subscribe"
    body = assert_problem(await api.get(url), 400, "too_many_streams_to_follow")
    assert body["limit"] == 64
    await append(api, run_id, "s07", ["x"])
    narrowed = await read_events(api, url, params={"streams": "s07,s08"}, until=count(1))
    assert records(narrowed) == [("s07", 1)]


async def test_a_subscribe_token_of_one_stream_opens_no_run_subscription(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "a")
    minted = await api.post(f"/runs/{run_id}/streams/a/subscribe-token", json={})
    assert minted.status_code == 201, minted.text
    anonymous = httpx.AsyncClient(base_url=api.base_url, timeout=30)
    async with anonymous:
        refused = await anonymous.get(f"/runs/{run_id}/subscribe",
                                      params={"access_token": minted.json()["token"]})
    assert_problem(refused, 401, "unauthenticated")
