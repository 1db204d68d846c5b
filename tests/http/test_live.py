"""Best-effort live mode over HTTP (SPEC §9): the `POST …/live` side channel and
`mode: best_effort` streams, against a real server.

Frames are read raw (line by line) so a test can see that `event: live` carries no `id:`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.http.support import GUARD_SECONDS, append, create_stream


@dataclass
class Frame:
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def event(self) -> str:
        return self.fields.get("event", "message")

    @property
    def data(self) -> Any:
        return json.loads(self.fields["data"])


class Subscriber:
    """One subscription read in the background, raw frame by raw frame."""

    def __init__(self, api: httpx.AsyncClient, run_id: str, stream_id: str,
                 live: bool) -> None:
        self.frames: list[Frame] = []
        self.opened = asyncio.Event()
        self._changed = asyncio.Event()
        params = {"live": "true"} if live else {}
        self._task = asyncio.create_task(self._read(
            api, f"/runs/{run_id}/streams/{stream_id}/subscribe", params))

    async def _read(self, api: httpx.AsyncClient, url: str, params: dict[str, str]) -> None:
        async with api.stream("GET", url, params=params) as response:
            assert response.status_code == 200, await response.aread()
            self.opened.set()
            frame = Frame()
            async for line in response.aiter_lines():
                if line == "":
                    if frame.fields:
                        self.frames.append(frame)
                        self._changed.set()
                    frame = Frame()
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    frame.fields[name] = value.removeprefix(" ")

    async def wait_for(self, condition: Callable[[list[Frame]], bool]) -> list[Frame]:
        async with asyncio.timeout(GUARD_SECONDS):
            while not condition(self.frames):
                if self._task.done():
                    self._task.result()
                    raise AssertionError(f"subscription ended early: {self.frames}")
                self._changed.clear()
                waiter = asyncio.create_task(self._changed.wait())
                await asyncio.wait([waiter, self._task], return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
        return self.frames

    async def finished(self) -> None:
        """Once the server has ended the response."""
        await asyncio.shield(self._task)

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


async def subscribe(api: httpx.AsyncClient, run_id: str, stream_id: str = "s", *,
                    live: bool) -> Subscriber:
    subscriber = Subscriber(api, run_id, stream_id, live)
    async with asyncio.timeout(GUARD_SECONDS):
        await subscriber.opened.wait()
    return subscriber


def live_frames(frames: list[Frame]) -> list[Frame]:
    return [frame for frame in frames if frame.event == "live"]


def has(event: str) -> Callable[[list[Frame]], bool]:
    return lambda frames: any(frame.event == event for frame in frames)


async def publish(api: httpx.AsyncClient, run_id: str, body: dict[str, Any],
                  stream_id: str = "s") -> httpx.Response:
    return await api.post(f"/runs/{run_id}/streams/{stream_id}/live", json=body)


async def test_live_chunks_reach_only_live_subscribers(api: httpx.AsyncClient,
                                                       run_id: str) -> None:
    await create_stream(api, run_id)
    live = await subscribe(api, run_id, live=True)
    plain = await subscribe(api, run_id, live=False)
    try:
        response = await publish(api, run_id, {"chunks": ["Hel", {"t": "lo"}],
                                               "source": "model_turn", "attempt": 2,
                                               "index": 7})
        assert (response.status_code, response.json()) == (202, {"accepted": 2})
        # No wait for the chunks: they arrive before the close's `end` (ADR 0056).
        await append(api, run_id, "s", ["after"])
        await api.post(f"/runs/{run_id}/streams/s/close")

        frames = await live.wait_for(lambda f: len(live_frames(f)) >= 2 and has("end")(f))
        chunks = live_frames(frames)
        assert all("id" not in frame.fields for frame in chunks)
        bodies = [frame.data for frame in chunks]
        assert [{k: b[k] for k in ("data", "source", "attempt", "index")} for b in bodies] == [
            {"data": "Hel", "source": "model_turn", "attempt": 2, "index": 7},
            {"data": {"t": "lo"}, "source": "model_turn", "attempt": 2, "index": 8}]
        assert isinstance(bodies[0]["seq"], int) and bodies[1]["seq"] > bodies[0]["seq"]

        plain_frames = await plain.wait_for(has("end"))
        assert [frame.event for frame in plain_frames] == ["record", "end"]
        assert plain_frames[0].fields["id"] == "1"
    finally:
        await live.stop()
        await plain.stop()


async def test_an_oversize_chunk_arrives_as_the_truncation_marker(api: httpx.AsyncClient,
                                                                 run_id: str) -> None:
    await create_stream(api, run_id)
    big = "x" * 7200
    live = await subscribe(api, run_id, live=True)
    try:
        response = await publish(api, run_id, {"chunks": [big, "small"]})
        assert response.status_code == 202
        frames = live_frames(await live.wait_for(lambda f: len(live_frames(f)) >= 2))
        assert frames[0].data["data"] == {"_truncated": True, "bytes": len(json.dumps(big))}
        assert frames[1].data["data"] == "small"
    finally:
        await live.stop()


async def test_publishing_with_no_reader_is_accepted_and_stores_nothing(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    response = await publish(api, run_id, {"chunks": [1, 2, 3]})
    assert (response.status_code, response.json()) == (202, {"accepted": 3})
    page = (await api.get(f"/runs/{run_id}/streams/s/records")).json()
    assert (page["records"], page["head"]) == ([], 0)
    # A reader that connects afterwards does not get them: only the later chunk.
    live = await subscribe(api, run_id, live=True)
    try:
        await publish(api, run_id, {"chunks": ["later"]})
        frames = live_frames(await live.wait_for(lambda f: len(live_frames(f)) >= 1))
        assert [frame.data["data"] for frame in frames] == ["later"]
    finally:
        await live.stop()


async def test_a_bad_live_body_is_refused(api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    assert (await publish(api, run_id, {"chunks": []})).status_code == 422
    assert (await publish(api, run_id, {"chunks": [1], "attempt": 0})).status_code == 422
    assert (await publish(api, run_id, {"chunk": [1]})).status_code == 400
    assert (await publish(api, run_id, {"chunks": [1]}, "ghost")).status_code == 404


async def test_a_best_effort_stream_sends_appends_live_and_stores_none(
        api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id, "be", mode="best_effort")
    live = await subscribe(api, run_id, "be", live=True)
    try:
        response = await api.post(f"/runs/{run_id}/streams/be/records",
                                  json={"records": [{"payload": {"n": 1}},
                                                    {"payload": {"n": 2}}]})
        assert (response.status_code, response.json()) == (202, {"accepted": 2})
        frames = live_frames(await live.wait_for(lambda f: len(live_frames(f)) >= 2))
        assert [frame.data["data"] for frame in frames] == [{"n": 1}, {"n": 2}]
        assert all("id" not in frame.fields for frame in frames)
        assert not [frame for frame in live.frames if frame.event == "record"]
    finally:
        await live.stop()
    page = (await api.get(f"/runs/{run_id}/streams/be/records")).json()
    assert (page["records"], page["head"]) == ([], 0)


async def test_a_reader_that_falls_behind_loses_chunks_and_sees_the_gap_in_seq(
        api: httpx.AsyncClient, run_id: str) -> None:
    # One request of 1000 chunks is handed to the reader's bounded buffer (256) at once,
    # faster than any reader drains it: the excess is dropped for that reader only, the
    # producer is answered in full, and `seq` shows the reader what it missed.
    await create_stream(api, run_id)
    live = await subscribe(api, run_id, live=True)
    try:
        response = await publish(api, run_id, {"chunks": list(range(1000))})
        assert (response.status_code, response.json()) == (202, {"accepted": 1000})
        await publish(api, run_id, {"chunks": ["after"]})
        frames = live_frames(await live.wait_for(
            lambda f: any(frame.data["data"] == "after" for frame in live_frames(f))))
    finally:
        await live.stop()
    seqs = [frame.data["seq"] for frame in frames]
    data = [frame.data["data"] for frame in frames]
    assert seqs == sorted(set(seqs))
    assert len(frames) < 1001 and data[-1] == "after"
    assert data[:-1] == sorted(set(data[:-1]) & set(range(1000)))  # in order, none twice
    assert seqs[-1] - seqs[-2] > 1  # the gap is visible
