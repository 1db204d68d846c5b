"""The HTTP API (Litestar) of docs/api.md: routes, SSE, auth, problem+json errors."""

from entrypoints.http.app import create_app, create_asgi_app

__all__ = ["create_app", "create_asgi_app"]
