"""The sync driver: performs a plan's effects (`runnel_client.effects`) with blocking
I/O. It holds no rule of its own; `runnel_client.drive_async` is its async twin."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import httpx
from httpx_sse import connect_sse

from runnel_client import effects
from runnel_client.effects import Plan, Stepper, T
from runnel_client.objects import measure


class _Driver:
    def __init__(self, http: httpx.Client) -> None:
        self._http = http
        self._open = contextlib.ExitStack()
        self._items: Iterator[Any] | None = None

    def perform(self, effect: effects.Effect) -> Any:
        """What the effect gave, or the transport error it raised."""
        try:
            return self._perform(effect)
        except httpx.TransportError as error:
            return error

    def _perform(self, effect: effects.Effect) -> Any:
        if isinstance(effect, effects.Next):  # first: once a frame
            return None if self._items is None else next(self._items, None)
        if isinstance(effect, effects.Send):
            content = effect.upload.chunks() if effect.upload is not None else None
            return self._http.request(effect.method, effect.path, params=effect.params,
                                      json=effect.json, content=content, headers=effect.headers,
                                      timeout=effect.timeout_for(self._http))
        if isinstance(effect, effects.Sleep):
            time.sleep(effect.seconds)
        elif isinstance(effect, effects.FreshToken):
            return effect.source.sync_token()
        elif isinstance(effect, effects.Measure):
            return measure(effect.body)
        elif isinstance(effect, effects.Open):
            return self._start(effect)
        elif isinstance(effect, effects.Hangup):
            self.hangup()
        return None

    def _start(self, effect: effects.Open) -> httpx.Response:
        self.hangup()
        auth = effect.auth or httpx.USE_CLIENT_DEFAULT
        timeout = None if effect.untimed else httpx.USE_CLIENT_DEFAULT
        if effect.sse:
            source = self._open.enter_context(connect_sse(
                self._http, "GET", effect.path, params=effect.params, headers=effect.headers,
                auth=auth, timeout=timeout))
            response = source.response
            self._items = source.iter_sse()
        else:
            response = self._open.enter_context(self._http.stream(
                "GET", effect.path, params=effect.params, headers=effect.headers, auth=auth,
                timeout=timeout))
            self._items = response.iter_bytes()
        if response.status_code != 200:
            response.read()
        return response

    def hangup(self) -> None:
        self._items = None
        self._open.close()


def run(http: httpx.Client, plan: Plan[T]) -> T:
    """Perform `plan` to its end; its return value."""
    driver, stepper = _Driver(http), Stepper(plan)
    try:
        _settle(driver, stepper)
        return stepper.outcome()
    finally:
        driver.hangup()
        stepper.close()


def iterate(http: httpx.Client, plan: Plan[None]) -> Iterator[Any]:
    """Perform `plan`, yielding what it emits. Closing the iterator early closes the
    plan and any response it had open."""
    driver, stepper = _Driver(http), Stepper(plan)
    try:
        _settle(driver, stepper)
        while not stepper.done:
            yield stepper.emitted()
            stepper.resume(None)
            _settle(driver, stepper)
    finally:
        driver.hangup()
        stepper.close()


def _settle(driver: _Driver, stepper: Stepper[Any]) -> None:
    """Perform effects until the plan emits an item or ends."""
    while stepper.waiting:
        stepper.resume(driver.perform(stepper.effect))
