"""Runnel's Python SDK for producers and readers. It speaks only HTTP."""

from client.aio import AsyncRunnelClient
from client.errors import BackpressureError, ResyncRequired, RunnelError, TokenExpired
from client.following import FollowState
from client.layers import LiveText
from client.live import LivePublisher
from client.sync import RunnelClient
from client.testing import InMemoryRunnel
from client.wire import LiveEvent, Record

__all__ = [
    "AsyncRunnelClient",
    "BackpressureError",
    "FollowState",
    "InMemoryRunnel",
    "LiveEvent",
    "LivePublisher",
    "LiveText",
    "Record",
    "ResyncRequired",
    "RunnelClient",
    "RunnelError",
    "TokenExpired",
]
