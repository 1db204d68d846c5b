"""Who may read a node's metrics on the API port (`RUNNEL_METRICS_TOKEN`, ADR 0061).

Rules:
- `/metrics` on the API port answers only `Authorization: Bearer <the metrics token>`,
  compared in constant time; an API token, an admin's included, is not one: metrics are
  the node's, across every tenant, and no tenant's token reads them;
- without the setting it answers nobody (401 saying which setting to set): the API port
  faces clients, and an address of its own is what `runnel worker`'s port is;
- a refusal is 401 `unauthenticated`, shows no figure and never repeats what was sent.
"""

from __future__ import annotations

import hmac

from domain.errors import Unauthenticated


class MetricsAccess:
    def __init__(self, token: str | None) -> None:
        self._expected = None if token is None else f"Bearer {token}".encode()

    def check(self, authorization: str | None) -> None:
        """Raises `Unauthenticated` unless `authorization` carries the metrics token."""
        if self._expected is None:
            raise Unauthenticated("/metrics on the API port needs RUNNEL_METRICS_TOKEN, which "
                                  "this node does not set")
        given = (authorization or "").strip().encode()
        if not hmac.compare_digest(given, self._expected):
            raise Unauthenticated("/metrics takes the metrics token (RUNNEL_METRICS_TOKEN) "
                                  "as a bearer token, and no other")
