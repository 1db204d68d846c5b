"""Object producers for the fault suite: prepare → upload → commit, each step retried
until it is answered, recording a history the checker reads as appends.

Rules:
- a producer's object `k` has the idempotency key `k` and a body derived from it, so a
  retry of any step is the same request;
- a step answered 2xx moves on; a 5xx or no answer is retried (prepare, upload and
  abort are harmless to repeat); a commit not answered 2xx is `unknown` and retried,
  and one answered 409 (the store did not confirm the body) goes back to the upload;
- every few objects one is aborted once uploaded, and at the end each producer leaves
  one uploaded but not committed (a live intent whose body the sweep must keep);
- a commit attempt is recorded as an `append` event (key, outcome, sequence), so the
  checker sees commits as it sees appends: none lost, moved or duplicated.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.chaos.load import TIMEOUT, Tally, _code

ABORT_EVERY = 5
EXPECTED_503 = {"store_unavailable", "object_store_unavailable"}
"""5xx answers that say an outage as such (a promise kept, not a server error)."""


def body_of(key: str) -> bytes:
    """Between 1 KiB and about 48 KiB, different for every key."""
    seed = hashlib.sha256(key.encode()).digest()
    return seed * (32 + seed[0] * 6)


@dataclass
class Uploaded:
    key: str
    object_id: str
    sha256: str


@dataclass
class ObjectLoad:
    node: str
    """One API base URL."""
    token: str
    tenant: str
    run: str = "chaos"
    stream: str = "objs"
    producers: int = 4
    history: list[dict[str, Any]] = field(default_factory=list)
    tally: Tally = field(default_factory=Tally)
    committed: dict[str, Uploaded] = field(default_factory=dict)
    """Acknowledged commits, by idempotency key."""
    live: list[Uploaded] = field(default_factory=list)
    """Uploaded, never committed nor aborted: bodies a live intent owns."""
    aborted: list[Uploaded] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def path(self) -> str:
        return f"{self.node}/runs/{self.run}/streams/{self.stream}"

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(headers={"Authorization": f"Bearer {self.token}"},
                                 timeout=TIMEOUT)

    async def create(self) -> None:
        async with self.client() as client:
            response = await client.post(f"{self.node}/runs/{self.run}/streams", json={
                "stream_id": self.stream, "content_class": "output.text"})
            assert response.status_code in (200, 201), response.text

    async def produce(self, number: int) -> None:
        async with self.client() as client:
            count = 0
            while not self.stop.is_set():
                key = f"obj{number}-{count}"
                uploaded = await self._upload(client, key)
                if count % ABORT_EVERY == ABORT_EVERY - 1:
                    await self._until_answered(client, "POST", f"/objects/"
                                               f"{uploaded.object_id}/abort")
                    self.aborted.append(uploaded)
                else:
                    await self._commit(client, uploaded)
                count += 1
            self.live.append(await self._upload(client, f"obj{number}-live"))

    async def _upload(self, client: httpx.AsyncClient, key: str) -> Uploaded:
        body = body_of(key)
        digest = hashlib.sha256(body).hexdigest()
        prepared = await self._until_answered(client, "POST", "/objects", json={
            "idempotency_key": key, "sha256": digest, "size": len(body),
            "content_type": "application/octet-stream"})
        uploaded = Uploaded(key, prepared.json()["object_id"], digest)
        await self._until_answered(client, "PUT", f"/objects/{uploaded.object_id}/body",
                                   content=body)
        return uploaded

    async def _commit(self, client: httpx.AsyncClient, uploaded: Uploaded) -> None:
        while True:
            event: dict[str, Any] = {"kind": "append", "tenant": self.tenant,
                                     "stream": self.stream, "producer": uploaded.key
                                     .partition("-")[0], "key": uploaded.key,
                                     "sent": time.monotonic()}
            response = await self._send(client, "POST",
                                        f"/objects/{uploaded.object_id}/commit")
            event["answered"] = time.monotonic()
            if response is not None and response.status_code in (200, 201):
                self.history.append(event | {"outcome": "ok",
                                             "sequence": response.json()["sequence"]})
                self.committed[uploaded.key] = uploaded
                self.tally.acked += 1
                return
            event["outcome"] = "unknown"
            self.tally.unknown += 1
            self.history.append(event)
            if response is not None and response.status_code == 409:
                # The store did not confirm the body (its answer lost): upload again.
                await self._until_answered(client, "PUT",
                                           f"/objects/{uploaded.object_id}/body",
                                           content=body_of(uploaded.key))
            await asyncio.sleep(0.05)

    async def _until_answered(self, client: httpx.AsyncClient, method: str, path: str,
                              **request: Any) -> httpx.Response:
        """For the steps that are harmless to repeat: prepare, upload and abort."""
        attempt = 0
        while True:
            attempt += 1
            response = await self._send(client, method, path, **request)
            if response is not None and response.status_code < 300:
                return response
            assert response is None or response.status_code >= 500, (
                method, path, response.status_code, response.text)
            await asyncio.sleep(0.05 * min(attempt, 10))

    async def _send(self, client: httpx.AsyncClient, method: str, path: str,
                    **request: Any) -> httpx.Response | None:
        try:
            response = await client.request(method, self.path + path, **request)
        except httpx.TransportError:
            return None
        if response.status_code >= 500 and _code(response) not in EXPECTED_503:
            self.tally.server_errors += 1
        return response
