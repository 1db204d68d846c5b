"""`LivePublisher` makes its failures visible: `last_error`, one log line on the first
failure (not one per burst), and a sink without `publish_live` refused at once."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest
from runnel_client import AsyncRunnelClient, LivePublisher

from tests.http.server import RunnelServer, token
from tests.http.support import GUARD_SECONDS


class Down:
    def __init__(self) -> None:
        self.calls = 0

    async def publish_live(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        raise httpx.ConnectError(f"down #{self.calls}")


async def test_failures_keep_the_last_error_and_log_once(
        caplog: pytest.LogCaptureFixture) -> None:
    sink = Down()
    caplog.set_level(logging.WARNING, logger="runnel_client.live")
    async with LivePublisher(sink, "r", "s") as publisher:
        for n in range(3):
            publisher.publish(n)
            async with asyncio.timeout(GUARD_SECONDS):
                while publisher.failed < n + 1:
                    await asyncio.sleep(0)
    assert (publisher.failed, sink.calls) == (3, 3)
    assert isinstance(publisher.last_error, httpx.ConnectError)
    assert str(publisher.last_error) == "down #3"
    lines = [r for r in caplog.records if r.name == "runnel_client.live"]
    assert len(lines) == 1 and "down #1" in lines[0].getMessage()


def test_a_sink_without_publish_live_is_refused_at_once() -> None:
    class NotASink:
        pass

    with pytest.raises(TypeError, match="publish_live"):
        LivePublisher(NotASink(), "r", "s")  # type: ignore[arg-type]


async def test_a_refused_publish_against_a_real_server_is_visible(server: RunnelServer,
                                                                  run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn, \
            LivePublisher(rn, run_id, "missing") as publisher:
        publisher.publish("into nothing")
    assert publisher.failed == 1 and publisher.last_error is not None
    assert getattr(publisher.last_error, "code", None) == "not_found"
