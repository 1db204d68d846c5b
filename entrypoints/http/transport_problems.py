"""The answers the transport writes itself, before or without the app (ADR 0021).

Rules:
- each is a whole HTTP/1.1 response carrying a problem document (`too_many_connections`,
  `headers_too_large`, `request_timeout`), then `Connection: close`;
- a 503 says `Retry-After: 1`: the refusal is a transient capacity limit;
- an event stream the stream pool has no room for is refused by the app in front of the
  real one, with the same 503 problem (`refuse_stream`).
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any


def limits_problem(status: int, code: str, detail: str, **extra: Any) -> bytes:
    """A whole HTTP/1.1 response carrying a problem document, then `Connection: close`."""
    body = json.dumps({"type": f"urn:runnel:problem:{code}", "title": HTTPStatus(status).phrase,
                       "status": status, "detail": detail, "code": code, **extra}).encode()
    retry = b"retry-after: 1\r\n" if status == 503 else b""
    return b"".join([
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode(),
        b"content-type: application/problem+json\r\n", b"referrer-policy: no-referrer\r\n",
        retry,
        f"content-length: {len(body)}\r\n".encode(), b"connection: close\r\n\r\n", body])


TOO_MANY = limits_problem(503, "too_many_connections",
                          "this server has no room for another connection; retry shortly")


async def refuse_stream(send: Any) -> None:
    """The app's answer to a subscription the stream pool has no room for."""
    body = json.loads(TOO_MANY.split(b"\r\n\r\n", 1)[1])
    payload = json.dumps({**body, "detail": "this server has no room for another event "
                          "stream; retry shortly"}).encode()
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/problem+json"), (b"retry-after", b"1"),
        (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})
