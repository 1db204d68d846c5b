"""No log line carries a token (ADR 0023): a real server with its access log on writes
`access_token=[redacted]` for a subscription URL, and neither the subscribe token, nor the
pasted token in the viewer's URL, nor a token quoted in a request path."""

from __future__ import annotations

import logging

import httpx
import pytest

from entrypoints.auth.token_redaction import RedactTokens, redact_tokens
from tests.http.server import bearer, running_server, token


def test_the_access_log_carries_no_token(database: str,
                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    env = {"RUNNEL_DATABASE_URL": database, "RUNNEL_STORAGE": "postgres"}
    api_token = token()
    with running_server(env, tmp_path_factory.mktemp("token-logs"),
                        extra_args=("--access-log",)) as server:
        headers = bearer(api_token)
        stream = f"{server.api}/runs/run-logs/streams"
        assert httpx.post(stream, headers=headers, json={
            "stream_id": "s", "content_class": "output.text"}).status_code == 201
        assert httpx.post(f"{stream}/s/close", headers=headers).status_code == 200
        minted = httpx.post(f"{stream}/s/subscribe-token", headers=headers)
        subscribe_token = minted.json()["token"]
        assert httpx.get(f"{stream}/s/subscribe",
                         params={"access_token": subscribe_token}).status_code == 200
        assert httpx.get(f"{stream}/s/subscribe", params={
            "access_token": subscribe_token, "live": "maybe"}).status_code == 400
        assert httpx.get(f"{stream}/s/subscribe",
                         params={"access_token": api_token}).status_code == 401
        assert httpx.get(server.url + "/", params={"token": api_token}).status_code == 200
        assert httpx.get(f"{server.api}/runs/{api_token}/streams",
                         headers=headers).status_code in (400, 404)
    log = server.log.read_text()
    assert "subscribe?access_token=[redacted]" in log
    for secret in (subscribe_token, api_token):
        for piece in (secret, secret.split(".")[1], secret.split(".")[2]):
            assert piece not in log


def test_every_log_record_is_redacted_by_the_filter() -> None:
    jwt_like = token()
    record = logging.LogRecord("runnel.http", logging.ERROR, __file__, 1,
                               "failed on %s with %r", ("/x?access_token=abc&after=1",
                                                        f"Bearer {jwt_like}"), None)
    assert RedactTokens().filter(record)
    message = record.getMessage()
    assert "abc" not in message and jwt_like not in message
    assert "access_token=[redacted]&after=1" in message
    assert redact_tokens("GET /?token=zz&run=r1") == "GET /?token=[redacted]&run=r1"
    assert redact_tokens("subscribe_token=keep") == "subscribe_token=keep"
