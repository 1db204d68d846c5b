"""The node's Prometheus metrics, in a registry of their own (one per app, so tests and
several apps in one process never collide).

The registry also carries the process, platform and garbage-collector collectors
(`process_*`, `python_*`), and, once the backend is open, what the backend reads at
scrape time (`postgres_metrics.py`)."""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0)
SWEEP_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        # The process-wide collectors read only the process: sharing them is safe.
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            r.register(collector)
        self.appends = Counter("runnel_appends", "Append requests answered 2xx, by outcome "
                               "(stored: something new; duplicate: every record was a repeat)",
                               ["outcome"], registry=r)
        self.records = Counter("runnel_records_appended",
                               "Records committed (any path: batch append, object commit)",
                               registry=r)
        self.bytes = Counter("runnel_record_bytes_appended",
                             "Bytes of committed records, as credit counts them", registry=r)
        self.readers = Gauge("runnel_sse_readers", "Open SSE subscriptions on this node",
                             registry=r)
        self.wakes = Counter("runnel_reader_wakes", "Wake signals received by local readers",
                             registry=r)
        self.gaps = Counter("runnel_reader_gaps",
                            "Wakes that revealed missing sequences (served from the store)",
                            registry=r)
        self.backpressure = Counter("runnel_backpressure_rejections",
                                    "Appends refused with 429 because the unread ceiling was full",
                                    registry=r)
        self.stalled = Counter("runnel_sse_stalled_disconnects",
                               "Subscribers disconnected for taking no frame within the stall "
                               "timeout", registry=r)
        self.dead_letters = Counter("runnel_input_dead_letters",
                                    "Input records whose delivery to the workflow gave up "
                                    "(see each stream's status.dead_letters)", registry=r)
        self.inputs_delivered = Counter(
            "runnel_input_events_delivered", "Input events the workflow's wait service "
            "acknowledged (webhook: answered 2xx; memory: kept in this process)", registry=r)
        self.inputs_published = Counter(
            "runnel_input_events_published", "Input events sent as a Postgres NOTIFY: "
            "published, not delivered (no acknowledgement; only sessions listening at commit "
            "receive one)", registry=r)
        self.inputs_pending = Gauge(
            "runnel_input_pending", "Input records not yet handed to a wait service nor "
            "dead-lettered, in the whole store (read at scrape time; every node of one "
            "database reports the same value). With RUNNEL_WAIT_SERVICE unset they stay "
            "here", registry=r)
        self.wait_service = Gauge("runnel_input_wait_service",
                                  "1 for this node's RUNNEL_WAIT_SERVICE (none: nothing is "
                                  "delivered)", ["service"], registry=r)
        self.latency = Histogram("runnel_http_request_duration_seconds",
                                 "Time from request to response headers, by route template",
                                 ["method", "route", "status"], buckets=LATENCY_BUCKETS,
                                 registry=r)

        self.client_disconnects = Counter(
            "runnel_http_client_disconnects", "Requests whose client closed the connection "
            "while the request body was still arriving (answered 499, never a 500)", registry=r)

        self.sweep_seconds = Histogram(
            "runnel_worker_sweep_duration_seconds", "Time one sweep of a background worker "
            "took, failed or not", ["worker"], buckets=SWEEP_BUCKETS, registry=r)
        self.sweep_errors = Counter(
            "runnel_worker_sweep_errors", "Sweeps of a background worker that failed (logged; "
            "retried next tick)", ["worker"], registry=r)
        self.sweep_success = Gauge(
            "runnel_worker_last_success_timestamp_seconds", "Unix time the worker's last "
            "successful sweep ended (0: none yet; a fenced region's sweeps do not succeed)",
            ["worker"], registry=r)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
