"""The HTTP API (Litestar): routes of SPEC §3, SSE, auth, problem+json errors."""

from entrypoints.http.app import create_app, create_asgi_app

__all__ = ["create_app", "create_asgi_app"]
