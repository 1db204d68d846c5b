"""The SDK's own cost of following: records/s through `follow()` against the same SSE
body read raw with httpx-sse and `json.loads` (the least any client does), in the same
run. No server, no network: an `httpx.MockTransport` answers with the whole body, so the
figures measure the client (the plan, its driver, `FollowState`), not the server. Prints
figures; never passes or fails on them.

Usage: `.venv/bin/python -m bench.sdk_follow [--records 20000] [--rounds 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable

import httpx
from httpx_sse import aconnect_sse, connect_sse
from runnel_client import AsyncRunnelClient, RunnelClient

BASE = "http://runnel.bench"
PATH = "/api/workflow-streams/runs/r/streams/s/subscribe"


def body(records: int) -> bytes:
    frames = [f"id: {n}\nevent: record\ndata: " + json.dumps({
        "sequence": n, "content_type": "application/json", "appended_at": "t",
        "payload": {"n": n, "text": "x" * 40}}) + "\n\n" for n in range(1, records + 1)]
    return ("".join(frames) + 'event: end\ndata: {"reason": "closed"}\n\n').encode()


def transport(content: bytes) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(
        200, headers={"Content-Type": "text/event-stream"}, content=content))


def sync_raw(content: bytes) -> int:
    with httpx.Client(base_url=BASE, transport=transport(content)) as http, connect_sse(
            http, "GET", PATH) as source:
        return sum(1 for event in source.iter_sse()
                   if event.event == "record" and json.loads(event.data))


def sync_sdk(content: bytes) -> int:
    http = httpx.Client(base_url=BASE, transport=transport(content))
    with RunnelClient(BASE, "t", http=http) as client:
        return sum(1 for _ in client.follow("r", "s"))


def async_raw(content: bytes) -> int:
    async def run() -> int:
        async with httpx.AsyncClient(base_url=BASE, transport=transport(content)) as http, \
                aconnect_sse(http, "GET", PATH) as source:
            return len([event async for event in source.aiter_sse()
                        if event.event == "record" and json.loads(event.data)])
    return asyncio.run(run())


def async_sdk(content: bytes) -> int:
    async def run() -> int:
        http = httpx.AsyncClient(base_url=BASE, transport=transport(content))
        async with AsyncRunnelClient(BASE, "t", http=http) as client:
            return len([record async for record in client.follow("r", "s")])
    return asyncio.run(run())


def rate(read: Callable[[bytes], int], content: bytes, records: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        assert read(content) == records
        best = min(best, time.perf_counter() - started)
    return records / best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    content = body(options.records)
    for name, raw, sdk in (("sync", sync_raw, sync_sdk), ("async", async_raw, async_sdk)):
        baseline = rate(raw, content, options.records, options.rounds)
        followed = rate(sdk, content, options.records, options.rounds)
        print(f"{name:5} raw httpx-sse + json {baseline:10,.0f} records/s   "
              f"follow() {followed:10,.0f} records/s   ({followed / baseline:.0%} of raw)")


if __name__ == "__main__":
    main()
