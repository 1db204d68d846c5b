"""What a use case needs to know about the node it runs on."""

from __future__ import annotations

from dataclasses import dataclass, field

from application.maintenance import UpkeepSettings
from domain.credit_ceilings import DEFAULT_CEILINGS, CreditCeilings


@dataclass(frozen=True)
class NodeSettings:
    region: str = "local"
    keepalive_seconds: float = 15.0
    page_size: int = 256
    object_intent_ttl_seconds: int = 3600
    max_subscriptions_per_principal: int = 100
    subscription_lease_seconds: float = 60.0
    """How long a subscription slot outlives its last renewal: a crashed node's slots are free
    again after at most this long (renewals come every keepalive interval, at most a third
    of the lease apart)."""
    delivery_lease_seconds: float = 30.0
    delivery_max_attempts: int = 8
    orphan_grace_seconds: int = 3600
    credit_ceilings: CreditCeilings = field(default=DEFAULT_CEILINGS)
    """The largest credit pins a definition created here may declare."""
    max_streams_per_run: int = 1000
    """Streams one run may hold, counted by the store under the run's lock (every node)."""
    upkeep: UpkeepSettings = field(default_factory=UpkeepSettings)
    """What storage upkeep keeps (ADR 0032)."""
    store_budget_seconds: float | None = None
    """The longest an append's attempt may wait on the store, all its waits together
    (`store_budget.py`, ADR 0059); None: each wait keeps only its own bound."""
