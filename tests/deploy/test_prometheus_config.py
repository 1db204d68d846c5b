"""The deploy kit's Prometheus jobs scrape what the nodes serve (ADR 0061): `runnel serve`
with the metrics token as a bearer credentials file, which the env example sets; the
worker's own port without one; and nginx keeps /metrics off the public side."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.deploy.test_systemd_units import env_example

DEPLOY = Path(__file__).parents[2] / "deploy"


def test_the_serve_job_sends_the_metrics_token_and_the_worker_job_none() -> None:
    jobs = {job["job_name"]: job for job in
            yaml.safe_load((DEPLOY / "prometheus" / "runnel.yml").read_text())["scrape_configs"]}
    assert jobs["runnel-serve"]["authorization"] == {
        "type": "Bearer", "credentials_file": "/etc/prometheus/runnel-metrics-token"}
    assert all(target.endswith(":8080")
               for target in jobs["runnel-serve"]["static_configs"][0]["targets"])
    assert "authorization" not in jobs["runnel-worker"]
    assert all(target.endswith(":9464")
               for target in jobs["runnel-worker"]["static_configs"][0]["targets"])
    assert "RUNNEL_METRICS_TOKEN" in env_example()
    assert "location = /metrics {\n        return 404;" in (
        DEPLOY / "nginx" / "runnel.conf").read_text()
