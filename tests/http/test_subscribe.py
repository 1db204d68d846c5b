"""Following a stream over Server-Sent Events, against a real server (SPEC §4)."""

from __future__ import annotations

import asyncio
import json
import subprocess

import httpx
from pydantic import SecretStr

from domain.identifiers import StreamKey
from entrypoints.composition.container import NodeContainer, open_node
from entrypoints.composition.settings import Settings
from tests.http.server import SECRET, RunnelServer, token
from tests.http.support import (
    GUARD_SECONDS,
    append,
    assert_problem,
    count_records,
    create_stream,
    has_event,
    read_events,
    records_of,
)

SERVER_ENV = {"RUNNEL_KEEPALIVE_SECONDS": "0.5"}


def subscribe_url(run_id: str, stream_id: str = "s") -> str:
    return f"/runs/{run_id}/streams/{stream_id}/subscribe"


async def closed_stream_with(api: httpx.AsyncClient, run_id: str, n: int) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", list(range(1, n + 1)))
    await api.post(f"/runs/{run_id}/streams/s/close")


async def test_resuming_with_last_event_id_gives_exactly_the_records_above_it(
        api: httpx.AsyncClient, run_id: str) -> None:
    await closed_stream_with(api, run_id, 6)
    events = await read_events(api, subscribe_url(run_id), headers={"Last-Event-ID": "2"},
                               until=has_event("end"))
    assert records_of(events) == [3, 4, 5, 6]
    assert [json.loads(e.data)["payload"] for e in events if e.event == "record"] == [3, 4, 5, 6]
    assert events[-1].event == "end"
    assert json.loads(events[-1].data) == {"reason": "closed", "last_sequence": 6}


async def test_the_after_query_wins_over_last_event_id_and_neither_means_zero(
        api: httpx.AsyncClient, run_id: str) -> None:
    await closed_stream_with(api, run_id, 5)
    by_query = await read_events(api, subscribe_url(run_id), params={"after": "3"},
                                 headers={"Last-Event-ID": "1"}, until=has_event("end"))
    assert records_of(by_query) == [4, 5]
    # The header is not even parsed when the query is there.
    garbage_header = await read_events(api, subscribe_url(run_id), params={"after": "4"},
                                       headers={"Last-Event-ID": "nonsense"},
                                       until=has_event("end"))
    assert records_of(garbage_header) == [5]
    from_zero = await read_events(api, subscribe_url(run_id), until=has_event("end"))
    assert records_of(from_zero) == [1, 2, 3, 4, 5]


async def test_record_frames_carry_the_envelope_of_a_page_read(api: httpx.AsyncClient,
                                                              run_id: str) -> None:
    await closed_stream_with(api, run_id, 3)
    events = await read_events(api, subscribe_url(run_id), until=has_event("end"))
    page = (await api.get(f"/runs/{run_id}/streams/s/records")).json()["records"]
    assert [json.loads(e.data) for e in events if e.event == "record"] == page


async def test_a_reader_connected_before_appends_receives_them_live_then_end_after_close(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)

    async def produce() -> None:
        for n in range(1, 4):
            await append(api, run_id, "s", [n])
        await append(api, run_id, "s", [4, 5])
        await api.post(f"/runs/{run_id}/streams/s/close")

    producing: list[asyncio.Task[None]] = []
    events = await read_events(api, subscribe_url(run_id), until=has_event("end"),
                               on_open=lambda: producing.append(asyncio.create_task(produce())))
    await producing[0]
    assert records_of(events) == [1, 2, 3, 4, 5]
    assert json.loads(events[-1].data) == {"reason": "closed", "last_sequence": 5}


async def test_a_live_reader_resumed_mid_stream_misses_and_repeats_nothing(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1, 2, 3])
    first = await read_events(api, subscribe_url(run_id), until=count_records(2))
    assert records_of(first) == [1, 2]

    async def more() -> None:
        await append(api, run_id, "s", [4, 5])

    tasks: list[asyncio.Task[None]] = []
    second = await read_events(api, subscribe_url(run_id), headers={"Last-Event-ID": "2"},
                               until=count_records(3),
                               on_open=lambda: tasks.append(asyncio.create_task(more())))
    await tasks[0]
    assert records_of(second) == [3, 4, 5]


async def test_keepalive_pings_are_comments_between_frames(api: httpx.AsyncClient,
                                                           run_id: str) -> None:
    await create_stream(api, run_id)
    lines: list[str] = []
    async with asyncio.timeout(GUARD_SECONDS), api.stream(
            "GET", subscribe_url(run_id)) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            lines.append(line)
            if line == ": ping":
                break
    assert lines[0] == ": ping"
    assert not any(line.startswith("data:") for line in lines)


async def test_bad_and_future_cursors_are_problems_before_any_frame(api: httpx.AsyncClient,
                                                                    run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [1])
    for headers, params in (({"Last-Event-ID": "abc"}, {}), ({}, {"after": "-3"}),
                            ({"Last-Event-ID": "1" * 25}, {})):
        response = await api.get(subscribe_url(run_id), headers=headers, params=params)
        assert_problem(response, 400, "invalid_cursor")
    future = await api.get(subscribe_url(run_id), headers={"Last-Event-ID": "2"})
    assert_problem(future, 400, "future_cursor")
    assert_problem(await api.get(subscribe_url(run_id, "ghost")), 404, "not_found")


async def test_a_pruned_cursor_is_410_before_streaming(api: httpx.AsyncClient, run_id: str,
                                                       database: str) -> None:
    # No pruning worker runs in this server (--no-workers): a second, in-process node on the
    # same database applies the stream's retention, as a worker would.
    await create_stream(api, run_id, retention={"max_records": 2})
    await append(api, run_id, "s", [1, 2, 3, 4, 5])
    node = Settings(database_url=database, jwt_secret=SecretStr(SECRET), workers=False)
    async with open_node(NodeContainer(settings=node)) as opened:
        removed = await opened.service.retention.prune(StreamKey("t1", run_id, "s"))
    assert removed.records == 3

    response = await api.get(subscribe_url(run_id), params={"after": "0"})
    body = assert_problem(response, 410, "cursor_pruned")
    assert {k: body[k] for k in ("requested", "earliest", "latest", "reason")} == {
        "requested": 0, "earliest": 4, "latest": 5, "reason": "resync"}
    page = await api.get(f"/runs/{run_id}/streams/s/records", params={"after": "1"})
    assert assert_problem(page, 410, "cursor_pruned")["requested"] == 1
    kept = await read_events(api, subscribe_url(run_id), headers={"Last-Event-ID": "3"},
                             until=count_records(2))
    assert records_of(kept) == [4, 5]


async def test_curl_n_receives_the_frames_verbatim(server: RunnelServer, api: httpx.AsyncClient,
                                                  run_id: str) -> None:
    await closed_stream_with(api, run_id, 2)
    result = await asyncio.to_thread(
        subprocess.run,
        ["curl", "-N", "-s", "--max-time", str(int(GUARD_SECONDS)),
         "-H", f"Authorization: Bearer {token()}", "-H", "Last-Event-ID: 1",
         server.api + subscribe_url(run_id)],
        capture_output=True, text=True, check=True)
    frames = [frame for frame in result.stdout.replace("\r\n", "\n").split("\n\n") if frame]
    assert len(frames) == 2
    record = dict(line.split(": ", 1) for line in frames[0].splitlines())
    assert record["event"] == "record"
    assert record["id"] == "2"
    assert json.loads(record["data"])["payload"] == 2
    assert frames[1].splitlines() == ["event: end",
                                      'data: {"reason":"closed","last_sequence":2}']
