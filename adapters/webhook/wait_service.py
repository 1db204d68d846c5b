"""The webhook `WorkflowWaitService`: one signed POST per input event.

Rules:
- the body is the event as compact JSON (`event_id`, `tenant`, `run_id`, `stream_id`,
  `sequence`, `record`); `(tenant, run_id)` names the run, since the same run id in
  two tenants is two runs;
- every attempt is signed the Standard Webhooks way (`runnel_client/webhooks.py`, the one home
  of the scheme, which receivers verify with): `webhook-id` and `Idempotency-Key` carry
  `event_id`, stable across retries and processes, so the receiver deduplicates
  redeliveries; `webhook-timestamp` is the attempt's time, so a retry hours later is
  still inside the receiver's replay window; `webhook-signature` is `v1,<base64>`;
- only a 2xx answer counts as delivered; any other status, a timeout or a
  connection error raises, so the dispatcher retries the row with backoff;
- redirects are not followed (a 3xx is a failure: the URL is configuration).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import httpx
from runnel_client.webhooks import webhook_headers

from adapters.clock import SystemClock
from application.ports.clock import Clock
from application.ports.outboxes import InputEvent
from domain.canonical_json import compact_text

TIMEOUT_SECONDS = 10.0


class WebhookRejected(Exception):
    """The receiver answered with a non-2xx status; the delivery is retried."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"webhook answered {status}: {detail}")
        self.status = status


def event_body(event: InputEvent) -> dict[str, Any]:
    return {"event_id": event.event_id, "tenant": event.tenant, "run_id": event.run_id,
            "stream_id": event.stream_id, "sequence": event.sequence,
            "record": dict(event.record)}


def encoded_body(event: InputEvent) -> bytes:
    """The exact bytes that are signed and sent."""
    return compact_text(event_body(event)).encode()


class WebhookWaitService:
    """Implements `WorkflowWaitService`; holds one connection pool until `aclose()`."""

    def __init__(self, url: str, secret: str, timeout_seconds: float = TIMEOUT_SECONDS,
                 client: httpx.AsyncClient | None = None, clock: Clock | None = None) -> None:
        self._url = url
        self._secret = secret
        self._clock = clock or SystemClock()
        self._client = client or httpx.AsyncClient(timeout=timeout_seconds,
                                                   follow_redirects=False)

    async def publish(self, event: InputEvent) -> None:
        body = encoded_body(event)
        timestamp = int(self._clock.now().timestamp())
        headers = {"content-type": "application/json", "Idempotency-Key": event.event_id,
                   **webhook_headers(self._secret, event.event_id, timestamp, body)}
        response = await self._client.post(self._url, content=body, headers=headers)
        if not response.is_success:
            raise WebhookRejected(response.status_code, response.text[:200])

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> WebhookWaitService:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.aclose()
