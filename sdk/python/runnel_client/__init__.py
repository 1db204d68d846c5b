"""Runnel's Python SDK for producers and readers, and for the workflow engine that
receives input webhooks. It speaks only HTTP."""

from runnel_client.aio import AsyncRunnelClient, AsyncStream
from runnel_client.auth import TokenSource
from runnel_client.errors import (
    AppendFailed,
    BackpressureError,
    ResyncRequired,
    RunnelError,
    TokenExpired,
    Unauthenticated,
)
from runnel_client.following import FollowState
from runnel_client.layers import LiveText
from runnel_client.live import LivePublisher
from runnel_client.producer import Producer
from runnel_client.retrying import RetryPolicy
from runnel_client.run_following import RunFollowState
from runnel_client.sync import RunnelClient, Stream
from runnel_client.webhooks import InputWebhook, WebhookVerificationError, verify_webhook
from runnel_client.wire import BrowserToken, LiveEvent, ReadPage, Record

__all__ = [
    "AppendFailed",
    "AsyncRunnelClient",
    "AsyncStream",
    "BackpressureError",
    "BrowserToken",
    "FollowState",
    "InputWebhook",
    "LiveEvent",
    "LivePublisher",
    "LiveText",
    "Producer",
    "ReadPage",
    "Record",
    "ResyncRequired",
    "RetryPolicy",
    "RunFollowState",
    "RunnelClient",
    "RunnelError",
    "Stream",
    "TokenExpired",
    "TokenSource",
    "Unauthenticated",
    "WebhookVerificationError",
    "verify_webhook",
]
