"""Runnel from inside DBOS workflows: input records in, durable and live chunks out (ADR 0043).

Needs the `dbos` package (`pip install 'runnel-client[dbos]'`). Two halves:

- **In.** A server with `RUNNEL_WAIT_SERVICE=dbos` sends each input record to the workflow
  `workflow_id_for(tenant, run_id)` on topic `stream_id`, keyed by its event id (so DBOS
  keeps one copy). `InputReader` reads one input stream in a workflow: events in sequence
  order, each once, whatever order redeliveries arrived in.
- **Out.** `StepWriter`, made inside a step, gives each durable chunk an idempotency key
  from its position in the run: the workflow id, the step id and the call's ordinal in the
  step. A replayed or re-driven workflow, or a retried step, re-sends the same keys and the
  stream keeps the first copy, so the chunk's body may be non-deterministic. Live chunks
  go through the SDK's `LivePublisher` (a 256-chunk queue, one request per burst, dropped
  when full, never blocking the step) with the envelope `{source, attempt, index}`, the
  attempt taken from DBOS's retry count of the step. `finish()` stores the step's record
  under the key equal to the live `source`, which settles the live text (ADR 0019).
"""

from __future__ import annotations

import hashlib
from typing import Any

from dbos import DBOS

from runnel_client.aio import AsyncRunnelClient
from runnel_client.dbos_ids import run_of, workflow_id_for
from runnel_client.live import LivePublisher

__all__ = ["InputReader", "StepWriter", "run_of", "workflow_id_for"]

KEY_MAX = 200
"""The server's limit on an idempotency key's length."""
SOURCE_MAX = 128
"""The server's limit on a live chunk's `source` (the key of the step's `finish()` record)."""


class InputReader:
    """One input stream's events inside a DBOS workflow: `next()` returns the event of the
    next sequence (a dict: `event_id`, `tenant`, `run_id`, `stream_id`, `sequence`,
    `record`), holding any that arrived early, dropping any already returned; `None` when
    nothing arrived within `timeout_seconds`. Every `recv` is a DBOS step, so a recovered
    workflow reads the same events again in the same order.

    `after` is the last sequence already handled (0: from the stream's first record)."""

    def __init__(self, stream_id: str, after: int = 0) -> None:
        self.stream_id = stream_id
        self.position = after
        self._early: dict[int, dict[str, Any]] = {}

    def next(self, timeout_seconds: float = 60) -> dict[str, Any] | None:
        while self.position + 1 not in self._early:
            event = DBOS.recv(self.stream_id, timeout_seconds)
            if event is None:
                return None
            self._hold(event)
        return self._take()

    async def next_async(self, timeout_seconds: float = 60) -> dict[str, Any] | None:
        while self.position + 1 not in self._early:
            event = await DBOS.recv_async(self.stream_id, timeout_seconds)
            if event is None:
                return None
            self._hold(event)
        return self._take()

    def _hold(self, event: dict[str, Any]) -> None:
        sequence = int(event["sequence"])
        if sequence > self.position:
            self._early.setdefault(sequence, event)

    def _take(self) -> dict[str, Any]:
        self.position += 1
        return self._early.pop(self.position)


class StepWriter:
    """A step's chunks to one output stream. Make it inside the DBOS step (or workflow) that
    writes: the ordinals restart at 0 each time the step body runs, so every run of the step
    derives the same keys. Make ONE writer per step and stream: a second one would derive
    the same keys, and the server would keep its chunks as duplicates of the first's.
    Raises RuntimeError outside a DBOS workflow."""

    def __init__(self, client: AsyncRunnelClient, run_id: str, stream_id: str) -> None:
        workflow_id = DBOS.workflow_id
        if workflow_id is None:
            raise RuntimeError("StepWriter needs a DBOS workflow or step context")
        self.client, self.run_id, self.stream_id = client, run_id, stream_id
        self.source = _fitted(f"{workflow_id}/{DBOS.step_id}", SOURCE_MAX)
        """The step's live `source`, and the key of its `finish()` record."""
        status = DBOS.step_status
        self.attempt = (status.current_attempt or 0) + 1 if status is not None else 1
        """1 for the step's first attempt, 2 for its first retry, …"""
        self._ordinal = 0
        self._live: LivePublisher | None = None

    def next_key(self) -> str:
        """The idempotency key of the step's next durable chunk."""
        key = _fitted(f"{self.source}/{self._ordinal}", KEY_MAX)
        self._ordinal += 1
        return key

    async def append(self, payload: Any) -> dict[str, Any]:
        """Store one durable chunk (the server's append answer); a repeat of this position
        by a replayed step returns the first copy's sequence."""
        return await self.client.append(self.run_id, self.stream_id,
                                        [{"payload": payload, "idempotency_key": self.next_key()}])

    async def finish(self, payload: Any) -> dict[str, Any]:
        """Store the step's record under the key `source`: readers drop the step's live text
        once it arrives. Flushes the live chunks first."""
        await self.aclose()
        return await self.client.append(self.run_id, self.stream_id,
                                        [{"payload": payload, "idempotency_key": self.source}])

    def live(self, chunk: Any) -> bool:
        """Queue one live chunk; never blocks; False when the queue was full and it dropped."""
        if self._live is None:
            self._live = LivePublisher(self.client, self.run_id, self.stream_id,
                                       source=self.source, attempt=self.attempt)
            self._live.start()
        return self._live.publish(chunk)

    async def aclose(self) -> None:
        """Send the live chunks still queued."""
        if self._live is not None:
            await self._live.aclose()
            self._live = None

    async def __aenter__(self) -> StepWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _fitted(text: str, limit: int) -> str:
    """`text` itself when it fits the server's `limit`, else a digest of it (69 chars)."""
    if len(text) <= limit:
        return text
    return "dbos-" + hashlib.sha256(text.encode()).hexdigest()
