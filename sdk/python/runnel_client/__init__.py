"""Runnel's Python SDK for producers and readers, and for the workflow engine that
receives input webhooks. It speaks only HTTP."""

from runnel_client.aio import AsyncRunnelClient
from runnel_client.errors import BackpressureError, ResyncRequired, RunnelError, TokenExpired
from runnel_client.following import FollowState
from runnel_client.layers import LiveText
from runnel_client.live import LivePublisher
from runnel_client.sync import RunnelClient
from runnel_client.webhooks import InputWebhook, WebhookVerificationError, verify_webhook
from runnel_client.wire import LiveEvent, Record

__all__ = [
    "AsyncRunnelClient",
    "BackpressureError",
    "FollowState",
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
