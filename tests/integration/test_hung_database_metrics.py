"""A scrape while the database hangs still answers: the store's figures are NaN (unknown,
never a stale value), and what the node holds in memory (pool, committer, LISTEN,
process) is still there."""

from __future__ import annotations

import math

import httpx
import pytest

from tests.http.server import METRICS
from tests.integration.blackhole_proxy import ProxyThread
from tests.integration.test_hung_database_http import hung  # noqa: F401  (fixture)
from tests.metrics_text import Samples
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

pytestmark = pytest.mark.postgres

STORE_FIGURES = (("runnel_outbox_depth", {"outbox": "input_deliveries"}),
                 ("runnel_outbox_oldest_age_seconds", {"outbox": "body_deletions"}),
                 ("runnel_consumer_lag_max", {}), ("runnel_consumer_lag_sum", {}),
                 ("runnel_consumers_lagging", {"at_least": "100"}),
                 ("runnel_input_pending", {}))


def test_a_scrape_of_a_node_whose_database_hangs_answers_nan_for_the_store_figures(
        hung: tuple[httpx.Client, ProxyThread, str]) -> None:  # noqa: F811
    api, proxy, server_url = hung
    before = Samples(api.get(server_url + "/metrics", headers=METRICS).text)
    for name, labels in STORE_FIGURES:
        assert before.get(name, labels) == 0, name
    proxy.hang()
    response = api.get(server_url + "/metrics", headers=METRICS)
    assert response.status_code == 200
    during = Samples(response.text)
    for name, labels in STORE_FIGURES:
        value = during.get(name, labels)
        assert value is not None and math.isnan(value), name
    for name in ("runnel_db_pool_size", "runnel_group_commit_groups_total",
                 "runnel_listen_connected", "process_cpu_seconds_total"):
        assert during.get(name) is not None, name
    proxy.admit()
