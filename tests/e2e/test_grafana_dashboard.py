"""The shipped Grafana dashboard queries only metrics a real node exposes: every metric
name in its PromQL (panels and variables) is a sample name of `runnel serve`'s /metrics,
and every one outside the API row is also one of `runnel worker`'s."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.http.server import METRICS, SECRET, bearer, running_server, token
from tests.integration.support import DEADLINE, REPO
from tests.integration.worker_processes import eventually, start_worker
from tests.metrics_text import Samples

pytestmark = pytest.mark.postgres

DASHBOARD = REPO / "deploy" / "grafana" / "runnel.json"
API_ROW = "API (runnel serve)"
"""The one row about the HTTP server, which `runnel worker` does not run."""

_NOT_METRICS = frozenset({
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "inf", "nan"})
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are not functions,
    keywords, label names, grouping labels, strings, durations or numbers."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings ("$instance", "5m")
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range durations, $__rate_interval
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        name = match.group()
        if text[match.end():].lstrip().startswith("(") or name.lower() in _NOT_METRICS:
            continue  # a function call, an aggregation or a keyword
        if re.fullmatch(r"\d", text[match.start() - 1:match.start()] or " "):
            continue  # the tail of a number such as 1e3
        names.add(name)
    return names


def test_metric_names_are_read_from_promql() -> None:
    assert metric_names('histogram_quantile(0.99, sum by (le, route) (rate('
                        'runnel_http_request_duration_seconds_bucket{job=~"$job"}'
                        '[$__rate_interval])))') == {"runnel_http_request_duration_seconds_bucket"}
    assert metric_names('time() - max by (worker) (runnel_worker_last_success_timestamp_seconds'
                        '{instance=~"$instance"})') == {
        "runnel_worker_last_success_timestamp_seconds"}
    assert metric_names("sum(rate(a_total[5m])) / sum(rate(b_count[5m]))") == {"a_total",
                                                                                "b_count"}


def dashboard_queries() -> dict[str, set[str]]:
    """Metric names by row title; the variables' under "(variables)" (they must exist on
    every process)."""
    document: dict[str, Any] = json.loads(DASHBOARD.read_text())
    by_row: dict[str, set[str]] = {}
    row = "(variables)"
    for variable in document["templating"]["list"]:
        if variable["type"] == "query":
            # `label_values(metric, label)`: only the metric is a metric.
            metric = re.match(r"label_values\(([A-Za-z_:][A-Za-z0-9_:]*)",
                              variable["definition"])
            assert metric is not None, variable["definition"]
            by_row.setdefault(row, set()).add(metric.group(1))
    for panel in document["panels"]:
        if panel["type"] == "row":
            row = panel["title"]
            continue
        for target in panel["targets"]:
            by_row.setdefault(row, set()).update(metric_names(target["expr"]))
    return by_row


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_every_metric_the_dashboard_queries_is_exposed_by_serve_and_worker(
        database: str, tmp_path: Path) -> None:
    queried = dashboard_queries()
    assert API_ROW in queried and len(queried) >= 6
    port = free_port()
    worker = await start_worker(database, tmp_path / "worker",
                                worker_metrics_port=str(port), jwt_secret=SECRET)
    try:
        env = {"RUNNEL_DATABASE_URL": database, "RUNNEL_STORAGE": "postgres"}
        with running_server(env, tmp_path / "serve", workers=True) as server:
            async with httpx.AsyncClient(base_url=server.api, headers=bearer(token()),
                                         timeout=DEADLINE) as api:
                created = await api.post("/runs/r1/streams", json={
                    "stream_id": "s", "content_class": "output.text", "consumers": ["ui"]})
                assert created.status_code in (200, 201), created.text
                appended = await api.post("/runs/r1/streams/s/records",
                                          json={"records": [{"payload": "x"}]})
                assert appended.status_code == 201, appended.text
            async with httpx.AsyncClient(timeout=DEADLINE) as client:
                served = Samples((await client.get(server.url + "/metrics", headers=METRICS)).text)

                async def worker_swept() -> bool:
                    text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
                    return (Samples(text).get("runnel_worker_sweep_duration_seconds_count",
                                              {"worker": "input-dispatch"}) or 0) >= 1

                await eventually(worker_swept)
                worked = Samples((await client.get(f"http://127.0.0.1:{port}/metrics")).text)
    finally:
        worker.send_signal(signal.SIGTERM)
        await asyncio.wait_for(worker.wait(), DEADLINE)

    for row, names in queried.items():
        missing = names - served.names
        assert not missing, f"{row}: runnel serve does not expose {sorted(missing)}"
        if row != API_ROW:
            missing = names - worked.names
            assert not missing, f"{row}: runnel worker does not expose {sorted(missing)}"
