"""How a node leaves: readiness off first, then every subscription ended with a frame.

Rules:
- `begin()` turns `/readyz` to 503 at once, while the node keeps serving: a load
  balancer polling readiness stops sending new requests during the pre-stop delay;
- after the delay, every open follow ends with `event: end` `{"reason":
  "shutdown"}` and a jittered `retry:` (so a thousand readers do not reconnect in
  the same millisecond), and new subscriptions are refused (503 `shutting_down`);
- the server then waits, up to the grace period, for those streams to finish
  writing, and says in one INFO line how many it ended; only then does uvicorn
  close what is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from application.follower import Follower

log = logging.getLogger("runnel.shutdown")


class Draining:
    def __init__(self) -> None:
        self.begun = False
        self._follower: Callable[[], Follower] | None = None

    def attach(self, follower: Callable[[], Follower]) -> None:
        """Where the node's follows are (known once the app has started)."""
        self._follower = follower

    def begin(self) -> None:
        self.begun = True

    async def drain(self, prestop_seconds: float, grace_seconds: float) -> int:
        """Readiness off, wait `prestop_seconds`, end every subscription, and wait up to
        `grace_seconds` for them to be written out; returns how many were ended."""
        self.begin()
        if prestop_seconds > 0:
            await asyncio.sleep(prestop_seconds)
        if self._follower is None:
            return 0
        follower = self._follower()
        ended = follower.drain()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_seconds
        while follower.open_follows and loop.time() < deadline:
            await asyncio.sleep(0.05)
        left = follower.open_follows
        log.info("shutdown: ended %d subscription(s) with event: end (shutdown)%s", ended,
                 f"; {left} still open after {grace_seconds:g} s are cut" if left else "")
        return ended
