"""Runnel's Python SDK for producers and readers, and for the workflow engine that
receives input webhooks. It speaks only HTTP."""

from client.aio import AsyncRunnelClient
from client.errors import BackpressureError, ResyncRequired, RunnelError, TokenExpired
from client.following import FollowState
from client.layers import LiveText
from client.live import LivePublisher
from client.sync import RunnelClient
from client.testing import InMemoryRunnel
from client.webhooks import InputWebhook, WebhookVerificationError, verify_webhook
from client.wire import LiveEvent, Record

__all__ = [
    "AsyncRunnelClient",
    "BackpressureError",
    "FollowState",
    "InMemoryRunnel",
    "InputWebhook",
    "LiveEvent",
    "LivePublisher",
    "LiveText",
    "Record",
    "ResyncRequired",
    "RunnelClient",
    "RunnelError",
    "TokenExpired",
    "WebhookVerificationError",
    "verify_webhook",
]
