"""Request headers bounded before any work: their total size is checked on arrival.

The ASGI server refuses anything larger than twice this ceiling while parsing
(plain 400); between the two, the app answers 431 `headers_too_large` as
problem+json. Body sizes are bounded per route by Litestar's
`request_max_body_size` (413 `too_large`), before the body is read.
"""

from __future__ import annotations

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from entrypoints.http.problems import HeadersTooLarge


def header_limit(max_bytes: int) -> type:
    class HeaderLimit:
        def __init__(self, app: ASGIApp) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == ScopeType.HTTP:
                total = sum(len(name) + len(value) + 4 for name, value in scope["headers"])
                if total > max_bytes:
                    raise HeadersTooLarge(max_bytes)
            await self.app(scope, receive, send)

    return HeaderLimit
