"""The async driver: performs a plan's effects (`runnel_client.effects`) on the event
loop. It holds no rule of its own; `runnel_client.drive_sync` is its blocking twin."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from runnel_client import effects
from runnel_client.effects import Plan, Stepper, T
from runnel_client.objects import measure


class _Driver:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self._http = http
        self._open = contextlib.AsyncExitStack()
        self._items: AsyncIterator[Any] | None = None

    async def perform(self, effect: effects.Effect) -> Any:
        """What the effect gave, or the transport error it raised."""
        try:
            return await self._perform(effect)
        except httpx.TransportError as error:
            return error

    async def _perform(self, effect: effects.Effect) -> Any:
        if isinstance(effect, effects.Next):  # first: once a frame
            return None if self._items is None else await anext(self._items, None)
        if isinstance(effect, effects.Send):
            content = _chunks(effect.upload.chunks()) if effect.upload is not None else None
            return await self._http.request(effect.method, effect.path, params=effect.params,
                                            json=effect.json, content=content,
                                            headers=effect.headers,
                                            timeout=effect.timeout_for(self._http))
        if isinstance(effect, effects.Sleep):
            await asyncio.sleep(effect.seconds)
        elif isinstance(effect, effects.FreshToken):
            return await effect.source.async_token()
        elif isinstance(effect, effects.Measure):
            return await asyncio.to_thread(measure, effect.body)
        elif isinstance(effect, effects.Open):
            return await self._start(effect)
        elif isinstance(effect, effects.Hangup):
            await self.hangup()
        return None

    async def _start(self, effect: effects.Open) -> httpx.Response:
        await self.hangup()
        auth = effect.auth or httpx.USE_CLIENT_DEFAULT
        timeout = None if effect.untimed else httpx.USE_CLIENT_DEFAULT
        if effect.sse:
            source = await self._open.enter_async_context(aconnect_sse(
                self._http, "GET", effect.path, params=effect.params, headers=effect.headers,
                auth=auth, timeout=timeout))
            response = source.response
            self._items = source.aiter_sse()
        else:
            response = await self._open.enter_async_context(self._http.stream(
                "GET", effect.path, params=effect.params, headers=effect.headers, auth=auth,
                timeout=timeout))
            self._items = response.aiter_bytes()
        if response.status_code != 200:
            await response.aread()
        return response

    async def hangup(self) -> None:
        self._items = None
        await self._open.aclose()


async def run(http: httpx.AsyncClient, plan: Plan[T]) -> T:
    """Perform `plan` to its end; its return value."""
    driver, stepper = _Driver(http), Stepper(plan)
    try:
        await _settle(driver, stepper)
        return stepper.outcome()
    finally:
        await driver.hangup()
        stepper.close()


async def iterate(http: httpx.AsyncClient, plan: Plan[None]) -> AsyncIterator[Any]:
    """Perform `plan`, yielding what it emits. Closing the iterator early closes the
    plan and any response it had open."""
    driver, stepper = _Driver(http), Stepper(plan)
    try:
        await _settle(driver, stepper)
        while not stepper.done:
            yield stepper.emitted()
            stepper.resume(None)
            await _settle(driver, stepper)
    finally:
        await driver.hangup()
        stepper.close()


async def _settle(driver: _Driver, stepper: Stepper[Any]) -> None:
    """Perform effects until the plan emits an item or ends."""
    while stepper.waiting:
        stepper.resume(await driver.perform(stepper.effect))


async def _chunks(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """A blocking chunk iterator read off the event loop."""
    while True:
        chunk = await asyncio.to_thread(next, chunks, b"")
        if not chunk:
            return
        yield chunk
