"""A facade client for the tests: the protocol over httpx, with a tenant's token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

from tests.http.server import bearer, token

PREFIX = "/v1/stream/"


def client(url: str, tenant: str = "ds-tests", sub: str = "alice") -> httpx.Client:
    return httpx.Client(base_url=url + PREFIX, timeout=30,
                        headers=bearer(token(tenant=tenant, sub=sub)))


def sse_events(response: httpx.Response) -> Iterator[tuple[str, str]]:
    """(event, data) of each SSE event, data lines joined as an SSE reader joins them."""
    event, data = "", []
    for line in response.iter_lines():
        if line == "":
            if event:
                yield event, "\n".join(data)
            event, data = "", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)


def control(data: str) -> dict[str, Any]:
    value = json.loads(data)
    assert isinstance(value, dict)
    return value
