"""The webhook `WorkflowWaitService`: one POST per input event.

Rules:
- the body is the event as JSON (`event_id`, `run_id`, `stream_id`, `sequence`,
  `record`); the `Idempotency-Key` header carries `event_id`, which is stable
  across retries and processes, so the receiver deduplicates redeliveries;
- only a 2xx answer counts as delivered; any other status, a timeout or a
  connection error raises, so the dispatcher retries the row with backoff;
- redirects are not followed (a 3xx is a failure: the URL is configuration).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import httpx

from application.ports import InputEvent

TIMEOUT_SECONDS = 10.0


class WebhookRejected(Exception):
    """The receiver answered with a non-2xx status; the delivery is retried."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"webhook answered {status}: {detail}")
        self.status = status


def event_body(event: InputEvent) -> dict[str, Any]:
    return {"event_id": event.event_id, "run_id": event.run_id, "stream_id": event.stream_id,
            "sequence": event.sequence, "record": dict(event.record)}


class WebhookWaitService:
    """Implements `WorkflowWaitService`; holds one connection pool until `aclose()`."""

    def __init__(self, url: str, timeout_seconds: float = TIMEOUT_SECONDS,
                 client: httpx.AsyncClient | None = None) -> None:
        self._url = url
        self._client = client or httpx.AsyncClient(timeout=timeout_seconds,
                                                   follow_redirects=False)

    async def publish(self, event: InputEvent) -> None:
        response = await self._client.post(self._url, json=event_body(event),
                                           headers={"Idempotency-Key": event.event_id})
        if not response.is_success:
            raise WebhookRejected(response.status_code, response.text[:200])

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> WebhookWaitService:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.aclose()
