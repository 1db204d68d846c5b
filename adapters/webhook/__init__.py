"""`WorkflowWaitService` over HTTP: each input event is POSTed, signed, to the workflow's
webhook."""

from adapters.webhook.wait_service import WebhookRejected, WebhookWaitService

__all__ = ["WebhookRejected", "WebhookWaitService"]
