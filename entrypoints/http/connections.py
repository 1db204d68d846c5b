"""The connection bounds of one server and its count of what is open (ADR 0021):
`ConnectionLimits` from the settings, `ConnectionBudget` the two pools, and their metrics.
The transport applies them (`bounded_protocol.py`, `connection_deadlines.py`).

Rules:
- A new connection is admitted into the request pool, or refused: past
  `max_connections` open request connections, or `max_per_address` from its
  client address. Refused connections never count against a cap, only in
  `refused` (by cap). A connection whose peer is a
  trusted proxy (`trusted_proxies`, ADR 0033) is held to `max_connections`
  only: it carries many clients, and the proxy limits per client.
- An event stream moves its connection out of the request pool (global and per
  address) into the stream pool, capped by `max_streams`; it goes back to the request
  pool when the stream ends, without asking again (it is open).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from entrypoints.auth.trusted_proxies import TrustedProxies
from entrypoints.composition.settings import Settings

Pool = Literal["request", "stream"]


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int
    max_per_address: int
    max_streams: int
    max_head_bytes: int
    header_timeout: float
    body_timeout: float
    min_body_rate: float
    idle_timeout: float
    trusted_proxies: tuple[str, ...] = ()


def connection_limits(settings: Settings) -> ConnectionLimits:
    """The node's bounds; the parser refuses a head over twice the app's header ceiling, so
    the app's own 431 (ADR 0004) answers everything between."""
    return ConnectionLimits(
        max_connections=settings.max_connections,
        max_per_address=settings.max_connections_per_address,
        max_streams=settings.max_sse_connections,
        max_head_bytes=2 * settings.max_header_bytes,
        header_timeout=settings.header_timeout_seconds,
        body_timeout=settings.body_timeout_seconds,
        min_body_rate=settings.min_body_bytes_per_second,
        idle_timeout=settings.idle_timeout_seconds,
        trusted_proxies=settings.trusted_proxies)


class ConnectionBudget:
    """What is open on one server, in two pools, and what was refused or cut (for metrics)."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.proxies = TrustedProxies(limits.trusted_proxies)
        self.requests = 0
        self.streams = 0
        self.lingering = 0
        self._by_address: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.cut: Counter[str] = Counter()

    def admit(self, address: str) -> bool:
        """Count a new connection in the request pool, or refuse it (and count why)."""
        if self.requests >= self.limits.max_connections:
            self.refused["connections"] += 1
            return False
        if address in self.proxies:
            self.requests += 1  # a proxy: only the global cap applies
            return True
        if self._by_address[address] >= self.limits.max_per_address:
            self.refused["address"] += 1
            return False
        self.requests += 1
        self._by_address[address] += 1
        return True

    def enter_stream(self, address: str) -> bool:
        """Move an admitted connection into the stream pool, or refuse the stream."""
        if self.streams >= self.limits.max_streams:
            self.refused["streams"] += 1
            return False
        self._leave_requests(address)
        self.streams += 1
        return True

    def leave_stream(self, address: str) -> None:
        """Back into the request pool once its stream ended (never refused: it is open)."""
        self.streams -= 1
        self.requests += 1
        if address not in self.proxies:
            self._by_address[address] += 1

    def release(self, address: str, pool: Pool) -> None:
        if pool == "stream":
            self.streams -= 1
        else:
            self._leave_requests(address)

    def _leave_requests(self, address: str) -> None:
        self.requests -= 1
        if address in self.proxies:
            return
        self._by_address[address] -= 1
        if self._by_address[address] <= 0:
            del self._by_address[address]


class ConnectionMetrics(Collector):
    """The budget's figures at scrape time."""

    def __init__(self, budget: ConnectionBudget) -> None:
        self._budget = budget

    def collect(self) -> Iterator[Metric]:
        open_ = GaugeMetricFamily("runnel_http_connections",
                                  "Open HTTP connections, by pool (request or stream)",
                                  labels=["pool"])
        open_.add_metric(["request"], self._budget.requests)
        open_.add_metric(["stream"], self._budget.streams)
        yield open_
        refused = CounterMetricFamily(
            "runnel_http_connections_refused", "Connections or streams refused with 503 "
            "too_many_connections, by cap (connections, address, streams)", labels=["cap"])
        for cap in ("connections", "address", "streams"):
            refused.add_metric([cap], self._budget.refused[cap])
        yield refused
        cut = CounterMetricFamily(
            "runnel_http_connections_cut", "Connections closed by a transport bound "
            "(header_timeout, body_timeout, headers_too_large)", labels=["reason"])
        for reason in ("header_timeout", "body_timeout", "headers_too_large"):
            cut.add_metric([reason], self._budget.cut[reason])
        yield cut
