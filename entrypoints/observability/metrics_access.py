"""Who may read a node's metrics on the API port (`RUNNEL_METRICS_TOKEN`, ADR 0061).

Rules:
- with the setting, `/metrics` on the API port answers only `Authorization: Bearer <the
  metrics token>`, compared in constant time; an API token, an admin's included, is not
  one: metrics are the node's, across every tenant, and no tenant's token reads them;
- without it, `/metrics` needs no token (the contract's default); `runnel serve` warns at
  start when such a node listens beyond loopback;
- a refusal is 401 `unauthenticated`, shows no figure and never repeats what was sent.
"""

from __future__ import annotations

import hmac

from domain.errors import Unauthenticated


class MetricsAccess:
    OPEN_WARNING = ("/metrics answers anyone who reaches {host}: set RUNNEL_METRICS_TOKEN "
                    "(32 bytes at least) so that only the operator's scraper reads it")

    def __init__(self, token: str | None) -> None:
        self._expected = None if token is None else f"Bearer {token}".encode()

    def check(self, authorization: str | None) -> None:
        """Raises `Unauthenticated` unless `authorization` carries the metrics token."""
        if self._expected is None:
            return
        given = (authorization or "").strip().encode()
        if not hmac.compare_digest(given, self._expected):
            raise Unauthenticated("/metrics takes the metrics token (RUNNEL_METRICS_TOKEN) "
                                  "as a bearer token, and no other")
