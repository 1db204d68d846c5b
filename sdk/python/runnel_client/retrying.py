"""When a producer tries a batch again, and how long it waits first.

Rules:
- retried: 429 (waiting at least its `Retry-After`, as for any answer that has
  one), any 5xx (`store_unavailable`, `region_fenced`, a node draining, …) and
  transport errors (connect, read, write,
  timeout): the batch carries idempotency keys, so a batch that was stored before
  the answer got lost is stored once;
- never retried: any other 4xx (the same request gets the same answer);
- waits grow exponentially from `base_seconds` up to `max_seconds`, each drawn over
  its upper half so producers cut at once do not come back at once;
- after `max_attempts` tries the producer gives up (`AppendFailed`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from runnel_client.errors import RunnelError


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    base_seconds: float = 0.2
    max_seconds: float = 10.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.base_seconds < 0 or self.max_seconds < 0:
            raise ValueError("max_attempts must be ≥ 1 and waits ≥ 0")

    def retryable(self, error: Exception) -> bool:
        if isinstance(error, RunnelError):
            return error.status == 429 or error.status >= 500
        return isinstance(error, httpx.TransportError)

    def delay(self, attempt: int, error: Exception,
              draw: Callable[[float, float], float] = random.uniform) -> float:
        """Seconds to wait after failed try number `attempt` (from 1)."""
        ceiling = min(self.max_seconds, self.base_seconds * 2 ** min(attempt - 1, 30))
        wait = draw(ceiling / 2, ceiling)
        if isinstance(error, RunnelError) and error.retry_after is not None:
            wait = max(wait, error.retry_after)
        return wait
