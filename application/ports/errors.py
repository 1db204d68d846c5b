"""Failures a port may raise, which every use case and entrypoint answers the same way."""

from __future__ import annotations


class NodeDraining(Exception):
    """This node is shutting down and takes no new subscriptions (another node does)."""


class StoreUnavailable(Exception):
    """The store refused the connection or did not answer within its bound. What was
    asked may still have happened (a write whose answer was lost): a retry with the same
    idempotency key finds out without writing twice."""


class StoreFull(StoreUnavailable):
    """The store has no space left (its disk or tablespace is full): the statement that
    needed space failed, so nothing of what was asked was stored, and the same request
    succeeds once space returns."""


class ObjectRegionUnavailable(LookupError):
    """This node has no object store for the region a body is pinned to."""


class ObjectStoreUnavailable(Exception):
    """The object store could not be reached, or failed, past its client's own retries.
    What was asked may still have happened (a body written, a delete done): every object
    step is safe to retry."""
