"""The fault suite's load: producers that retry one key until it is acknowledged, and
subscribers that reconnect with `Last-Event-ID`, all recording a history for the checker.

Rules:
- every producer and subscriber may use any node: a request that cannot reach one
  (refused, reset, timed out) goes to the next, so killing a node is survivable;
- an append attempt is `ok` only on a 2xx with its sequence; a 4xx is `failed` (a
  definite refusal: nothing was stored); anything else, a 5xx or no answer at all,
  is `unknown`, and the producer retries the same key;
- a subscriber records each (re)connect with the cursor it sends, and each record
  frame with the key and tenant the producer wrote into the payload;
- the load stops producing when told; subscribers then run until they have
  received the stream's head (or a deadline passes), and the final read pages
  through the whole stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.chaos.checker import Anomaly, check

TIMEOUT = httpx.Timeout(10.0, connect=2.0)


@dataclass
class Tally:
    """What a run did, beside the anomalies: one row of the fault table."""

    acked: int = 0
    unknown: int = 0
    failed: int = 0
    server_errors: int = 0
    reconnects: int = 0
    seconds: float = 0.0


@dataclass
class Load:
    nodes: list[str]
    """API base URLs, e.g. `http://127.0.0.1:8080/api/workflow-streams`."""
    token: str
    tenant: str
    run: str = "chaos"
    stream: str = "s"
    producers: int = 8
    subscribers: int = 4
    pins: dict[str, Any] = field(default_factory=dict)
    """More of the stream's definition, e.g. `{"direction": "input"}`."""
    history: list[dict[str, Any]] = field(default_factory=list)
    tally: Tally = field(default_factory=Tally)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _received: dict[str, int] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return f"/runs/{self.run}/streams/{self.stream}"

    async def create(self) -> None:
        async with self._client() as client:
            for node in self._rotation(0):
                try:
                    response = await client.post(
                        node + f"/runs/{self.run}/streams",
                        json={"stream_id": self.stream, "content_class": "output.text",
                              "credit": {"max_unread_items": 100_000}, **self.pins})
                except httpx.TransportError:
                    continue
                assert response.status_code in (200, 201), response.text
                return
        raise AssertionError("no node answered the create")

    async def run_for(self, seconds: float, fault: Any = None) -> list[Anomaly]:
        """Produce for `seconds`, with `fault()` (a coroutine function) injected halfway;
        then let subscribers reach head, read the stream and check the history."""
        started = time.monotonic()
        producers = [asyncio.create_task(self._produce(n)) for n in range(self.producers)]
        readers = [asyncio.create_task(self._subscribe(n)) for n in range(self.subscribers)]
        await asyncio.sleep(seconds / 2)
        if fault is not None:
            await fault()
        await asyncio.sleep(seconds / 2)
        self._stop.set()
        await asyncio.gather(*producers)
        self.tally.seconds = time.monotonic() - started
        head = await self._final()
        await self._until_received(readers, head)
        return check(self.history)

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(headers={"Authorization": f"Bearer {self.token}"},
                                 timeout=TIMEOUT)

    def _rotation(self, start: int) -> list[str]:
        return [self.nodes[(start + n) % len(self.nodes)] for n in range(len(self.nodes))]

    async def _produce(self, number: int) -> None:
        async with self._client() as client:
            count = 0
            while not self._stop.is_set():
                key = f"p{number}-{count}"
                await self._append_until_acked(client, number, key)
                count += 1

    async def _append_until_acked(self, client: httpx.AsyncClient, number: int,
                                  key: str) -> None:
        body = {"records": [{"payload": {"key": key, "tenant": self.tenant},
                             "idempotency_key": key}]}
        attempt = 0
        while True:
            node = self.nodes[(number + attempt) % len(self.nodes)]
            attempt += 1
            event = {"kind": "append", "tenant": self.tenant, "stream": self.stream,
                     "producer": f"p{number}", "key": key, "sent": time.monotonic()}
            try:
                response = await client.post(node + self.path + "/records", json=body)
            except httpx.TransportError:
                response = None
            event["answered"] = time.monotonic()
            if response is not None and response.status_code in (200, 201):
                event |= {"outcome": "ok", "sequence": response.json()["sequences"][0]}
                self.history.append(event)
                self.tally.acked += 1
                return
            if response is not None:
                event["code"] = _code(response)
            if response is not None and 400 <= response.status_code < 500:
                event["outcome"] = "failed"
                self.tally.failed += 1
            else:
                event["outcome"] = "unknown"
                self.tally.unknown += 1
                if response is not None and response.status_code >= 500 \
                        and _code(response) not in _EXPECTED_503:
                    self.tally.server_errors += 1
            self.history.append(event)
            await asyncio.sleep(0.05 * min(attempt, 10))

    async def _subscribe(self, number: int) -> None:
        name = f"sub{number}"
        connection = 0
        self._received[name] = 0
        async with self._client() as client:
            while True:
                node = self.nodes[(number + connection) % len(self.nodes)]
                connection += 1
                label = f"{name}/c{connection}"
                self.history.append({"kind": "reconnect", "subscriber": name,
                                     "connection": label, "tenant": self.tenant,
                                     "stream": self.stream, "cursor": self._received[name]})
                with contextlib.suppress(httpx.TransportError, httpx.HTTPStatusError):
                    await self._follow(client, node, name, label)
                self.tally.reconnects += 1
                await asyncio.sleep(0.1)

    async def _follow(self, client: httpx.AsyncClient, node: str, name: str,
                      label: str) -> None:
        """One connection, until it ends; `_received[name]` follows the frames."""
        headers = {"Last-Event-ID": str(self._received[name]), "Accept": "text/event-stream"}
        async with client.stream("GET", node + self.path + "/subscribe", headers=headers,
                                 timeout=httpx.Timeout(None, connect=2.0)) as response:
            response.raise_for_status()
            event, data = "", ""
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    event = line.partition(":")[2].strip()
                elif line.startswith("data:"):
                    data = line.partition(":")[2].strip()
                elif not line and event == "record":
                    record = json.loads(data)
                    payload = record["payload"]
                    self.history.append({
                        "kind": "frame", "subscriber": name, "connection": label,
                        "tenant": self.tenant, "stream": self.stream,
                        "sequence": record["sequence"], "key": payload["key"],
                        "data_tenant": payload["tenant"]})
                    self._received[name] = max(self._received[name], record["sequence"])
                    event, data = "", ""
                elif not line:
                    event, data = "", ""

    async def _final(self) -> int:
        """Page through the whole stream at any node that answers; returns its head."""
        records: list[dict[str, Any]] = []
        async with self._client() as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    page = await client.get(self.nodes[len(records) % len(self.nodes)]
                                            + self.path + "/records",
                                            params={"after": len(records), "limit": 1000})
                except httpx.TransportError:
                    page = None
                if page is None or page.status_code != 200:
                    assert time.monotonic() < deadline, "no node serves the final read"
                    await asyncio.sleep(0.2)
                    continue
                body = page.json()
                records += [{"sequence": r["sequence"], "key": r["payload"]["key"],
                             "data_tenant": r["payload"]["tenant"]} for r in body["records"]]
                if not body["records"] or body["next_cursor"] >= body["head"]:
                    self.history.append({"kind": "final", "tenant": self.tenant,
                                         "stream": self.stream, "head": body["head"],
                                         "records": records})
                    return int(body["head"])

    async def _until_received(self, readers: Sequence[asyncio.Task[None]], head: int,
                              deadline_seconds: float = 60) -> None:
        deadline = time.monotonic() + deadline_seconds
        while time.monotonic() < deadline:
            reached = {e["subscriber"] for e in self.history
                       if e["kind"] == "frame" and e["sequence"] >= head}
            if len(reached) == self.subscribers:
                break
            await asyncio.sleep(0.1)
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)


_EXPECTED_503 = {"store_unavailable", "shutting_down", "not_ready", "too_many_connections",
                 "insufficient_storage"}
"""5xx answers that are promises kept (an outage said as such), not server errors."""


def _code(response: httpx.Response) -> str | None:
    try:
        code = response.json().get("code")
    except ValueError:
        return None
    return code if isinstance(code, str) else None


def row(fault: str, load: Load, anomalies: list[Anomaly], recovery: str = "-") -> str:
    counts = {kind: sum(a.kind == kind for a in anomalies)
              for kind in ("lost", "duplicate", "unordered", "skipped")}
    rate = load.tally.acked / load.tally.seconds if load.tally.seconds else 0.0
    return (f"| {fault} | {rate:.0f} | {load.tally.acked} | {counts['lost']} | "
            f"{counts['duplicate']} | {counts['unordered'] + counts['skipped']} | "
            f"{load.tally.unknown} | {recovery} | {load.tally.server_errors} |")


HEADER = ("| fault | appends/s | acked | lost | duplicate | gaps | unknown outcomes | "
          "stall or recovery | 5xx |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
