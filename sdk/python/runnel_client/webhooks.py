"""Signed input webhooks, as Runnel sends them and a workflow engine verifies them.

Runnel signs each webhook the Standard Webhooks 1.0 way (ADR 0022):

- `webhook-id`: the event id, the same on every redelivery (so is `Idempotency-Key`);
- `webhook-timestamp`: when this attempt was signed, in integer Unix seconds;
- `webhook-signature`: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<raw body>">`; a
  header may list several signatures separated by spaces, one of them must match.

The key is the secret's bytes: `whsec_<base64>` (as Standard Webhooks libraries take it)
is base64-decoded, any other secret is used as its UTF-8 bytes.

Rules of `verify_webhook`:
- it checks the raw body as received, before any JSON parsing;
- a timestamp further than `tolerance_seconds` from now, in either direction, is
  refused: a captured request cannot be replayed later. Within the window a replay
  carries the same `webhook-id`, so deduplicating by event id absorbs it;
- signatures are compared in constant time, against every secret given (pass the old
  and the new secret while rotating);
- the body's `event_id` must be the signed `webhook-id`.

This module uses only the standard library; the server signs with `webhook_headers`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SECRET_PREFIX = "whsec_"
SIGNATURE_VERSION = "v1"
DEFAULT_TOLERANCE_SECONDS = 300
_TIMESTAMP = re.compile(r"[0-9]{1,12}")


class WebhookVerificationError(Exception):
    """A webhook that must not be trusted; `reason` says why (`missing_header`,
    `bad_timestamp`, `timestamp_outside_window`, `bad_signature`, `bad_body`)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass(frozen=True)
class InputWebhook:
    """One input record, as the workflow engine receives it. `(tenant, run_id)` names
    the run: the same run id in two tenants is two different runs."""

    event_id: str
    tenant: str
    run_id: str
    stream_id: str
    sequence: int
    record: Mapping[str, Any] = field(default_factory=dict)


def webhook_key(secret: str | bytes) -> bytes:
    """The HMAC key of a secret: `whsec_<base64>` decoded, otherwise its UTF-8 bytes."""
    if isinstance(secret, bytes):
        return secret
    if secret.startswith(SECRET_PREFIX):
        try:
            return base64.b64decode(secret[len(SECRET_PREFIX):], validate=True)
        except binascii.Error as error:
            raise ValueError(f"a {SECRET_PREFIX} secret must be base64 after the prefix") \
                from error
    return secret.encode()


def sign(secret: str | bytes, event_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 signature>` of `<event_id>.<timestamp>.<body>`."""
    signed = f"{event_id}.{timestamp}.".encode() + body
    digest = hmac.new(webhook_key(secret), signed, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode()}"


def webhook_headers(secret: str | bytes, event_id: str, timestamp: int,
                    body: bytes) -> dict[str, str]:
    """The headers that sign `body`."""
    return {"webhook-id": event_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": sign(secret, event_id, timestamp, body)}


def verify_webhook(secret: str | bytes | Sequence[str | bytes], headers: Mapping[str, str],
                   body: bytes, *, tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
                   now: float | None = None) -> InputWebhook:
    """The event of a webhook signed with `secret` (or one of several), or
    `WebhookVerificationError`. `headers` may be any mapping (names in any case)."""
    found = {name.lower(): value for name, value in headers.items()}
    event_id, stamp, signatures = (found.get(name) for name in (
        "webhook-id", "webhook-timestamp", "webhook-signature"))
    if not event_id or not stamp or not signatures:
        raise WebhookVerificationError(
            "missing_header", "webhook-id, webhook-timestamp and webhook-signature are needed")
    if _TIMESTAMP.fullmatch(stamp) is None:
        raise WebhookVerificationError("bad_timestamp", "webhook-timestamp is not Unix seconds")
    timestamp = int(stamp)
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        raise WebhookVerificationError(
            "timestamp_outside_window",
            f"signed {int(current - timestamp)} s from now, beyond ±{tolerance_seconds:g} s")
    secrets = [secret] if isinstance(secret, str | bytes) else list(secret)
    offered = [entry.encode() for entry in signatures.split(" ") if entry]
    if not any(hmac.compare_digest(sign(key, event_id, timestamp, body).encode(), candidate)
               for key in secrets for candidate in offered):
        raise WebhookVerificationError("bad_signature", "no signature matches the secret")
    return _event(event_id, body)


def _event(event_id: str, body: bytes) -> InputWebhook:
    try:
        document = json.loads(body)
        event = InputWebhook(document["event_id"], document["tenant"], document["run_id"],
                             document["stream_id"], document["sequence"],
                             document.get("record", {}))
    except (ValueError, TypeError, KeyError) as error:
        raise WebhookVerificationError("bad_body", "not a Runnel input event") from error
    if event.event_id != event_id:
        raise WebhookVerificationError("bad_body", "event_id differs from webhook-id")
    return event
