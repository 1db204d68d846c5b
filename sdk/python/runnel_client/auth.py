"""Where a client's bearer token comes from.

Rules:
- `token` is a string, or a callable (sync, or async for the async client) that
  returns one. A callable is called for every request and for every reconnect of a
  follow, so a short-lived token is renewed without the caller's help; caching is
  the callable's business.
- An async callable given to the sync client is refused on its first request
  (`TypeError`), never awaited in a hidden event loop.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator

import httpx

TokenSource = str | Callable[[], str] | Callable[[], Awaitable[str]]
"""An API token, or a callable returning a fresh one (a subscribe token of the stream
followed also works for `follow()`)."""


class BearerToken(httpx.Auth):
    """Sets `Authorization: Bearer <token>` on every request, asking `source` each time."""

    def __init__(self, source: TokenSource) -> None:
        self._source = source

    @property
    def renewable(self) -> bool:
        """A callable: asking again may give a token that is not expired."""
        return callable(self._source)

    def sync_token(self) -> str:
        if not callable(self._source):
            return self._source
        token = self._source()
        if inspect.isawaitable(token):
            close = getattr(token, "close", None)
            if close is not None:
                close()  # a coroutine never awaited: no "never awaited" warning
            raise TypeError("an async token callable needs AsyncRunnelClient")
        return token

    async def async_token(self) -> str:
        if not callable(self._source):
            return self._source
        token = self._source()
        return await token if inspect.isawaitable(token) else token

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request,
                                                                   httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.sync_token()}"
        yield request

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request,
                                                                               httpx.Response]:
        request.headers["Authorization"] = f"Bearer {await self.async_token()}"
        yield request
