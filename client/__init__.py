"""Runnel's Python SDK for producers and readers. It speaks only HTTP."""

from client.aio import AsyncRunnelClient
from client.errors import BackpressureError, ResyncRequired, RunnelError
from client.live import LivePublisher
from client.sync import RunnelClient
from client.testing import InMemoryRunnel

__all__ = [
    "AsyncRunnelClient",
    "BackpressureError",
    "InMemoryRunnel",
    "LivePublisher",
    "ResyncRequired",
    "RunnelClient",
    "RunnelError",
]
