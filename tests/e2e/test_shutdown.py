"""SIGTERM with subscribers open: `/readyz` turns 503 for the pre-stop delay while the
node still serves, then every subscriber gets `event: end` with reason `shutdown` and a
jittered `retry:`, and the server says in one line how many it ended, with no
traceback (ADR 0029)."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import httpx

from tests.http.raw_sse import drain, open_stalled_reader
from tests.http.server import RunnelServer, bearer, token

SUBSCRIBERS = 3


def _end_frame(received: bytes) -> tuple[dict[str, object], int]:
    text = received.decode()
    event = text[text.index("event: end"):].split("\n\n")[0]
    fields = dict(line.split(": ", 1) for line in event.splitlines() if ": " in line)
    return json.loads(fields["data"]), int(fields["retry"])


def test_sigterm_ends_every_subscription_with_a_frame_after_the_prestop_delay(
        tmp_path: Path) -> None:
    server = RunnelServer.start({"RUNNEL_STORAGE": "memory", "RUNNEL_PRESTOP_SECONDS": "2",
                                 "RUNNEL_KEEPALIVE_SECONDS": "30"}, tmp_path)
    headers = bearer(token())
    try:
        created = httpx.post(server.api + "/runs/r/streams", headers=headers,
                             json={"stream_id": "s", "content_class": "output.text"})
        assert created.status_code == 201
        httpx.post(server.api + "/runs/r/streams/s/records", headers=headers,
                   json={"records": [{"payload": n} for n in range(3)]})
        readers = [open_stalled_reader(server, "/runs/r/streams/s/subscribe")
                   for _ in range(SUBSCRIBERS)]
        received: list[bytes] = [b""] * SUBSCRIBERS

        def read(index: int) -> None:
            received[index] = drain(readers[index])

        threads = [threading.Thread(target=read, args=(n,)) for n in range(SUBSCRIBERS)]
        for thread in threads:
            thread.start()
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        # Within the pre-stop delay: still serving, but no longer ready.
        assert httpx.get(server.url + "/healthz").status_code == 200
        assert httpx.get(server.url + "/readyz").status_code == 503
        for thread in threads:
            thread.join(30)
        server.process.wait(30)
    finally:
        server.stop()
    retries = []
    for stream in received:
        assert b"event: record" in stream
        frame, retry = _end_frame(stream)
        assert frame == {"reason": "shutdown", "last_sequence": 3}
        retries.append(retry)
    assert all(500 <= retry <= 5000 for retry in retries)
    log = server.log.read_text()
    assert f"shutdown: ended {SUBSCRIBERS} subscription(s)" in log, log
    assert "Traceback" not in log, log
