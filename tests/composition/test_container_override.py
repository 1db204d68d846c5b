"""A team swaps one adapter of the node's container and the whole service runs on it
(ADR 0063): the same container as `runnel serve`, one `override`, no second wiring. The
container opens what it is given to open and closes it on exit, even when opening the
rest failed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from dependency_injector import providers
from litestar.testing import AsyncTestClient
from pydantic import SecretStr

from application.ports.outboxes import InputEvent
from application.views import API_PREFIX
from entrypoints.auth.tokens import mint_token
from entrypoints.composition.container import NodeContainer, NodeHost, open_node
from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_app
from tests.http.support import GUARD_SECONDS, append, create_stream

SECRET = "container-override-secret-0123456789abcdef"


class TeamWaitService:
    """A team's own adapter of the `WorkflowWaitService` port (their workflow engine's
    client): it keeps what it is given, and says whether it is open."""

    def __init__(self) -> None:
        self.events: list[InputEvent] = []
        self.delivered = asyncio.Event()
        self.opened = 0
        self.closed = 0

    @asynccontextmanager
    async def open(self) -> AsyncIterator[TeamWaitService]:
        self.opened += 1
        try:
            yield self
        finally:
            self.closed += 1

    async def publish(self, event: InputEvent) -> None:
        assert self.opened and not self.closed, "published through a closed client"
        self.events.append(event)
        self.delivered.set()


def settings(**changes: Any) -> Settings:
    return Settings(storage="memory", jwt_secret=SecretStr(SECRET), sweep_seconds=0.05,
                    **changes)


def client(host: NodeHost) -> AsyncTestClient[Any]:
    token = mint_token(SECRET, tenant="team", sub="team",
                       scopes=("streams:read", "streams:write"))
    api = AsyncTestClient(create_app(host.settings, host),
                          base_url="http://testserver.local" + API_PREFIX)
    api.headers["Authorization"] = f"Bearer {token}"
    return api


async def test_a_team_runs_the_whole_service_on_its_own_wait_service() -> None:
    team = TeamWaitService()
    host = NodeHost(settings(workers=True))
    host.container.wait_service.override(providers.Resource(team.open))
    async with client(host) as api:
        assert (team.opened, team.closed) == (1, 0)
        await create_stream(api, "run-1", "out")
        assert await append(api, "run-1", "out", ["thinking", "done"]) == [1, 2]
        page = (await api.get("/runs/run-1/streams/out/records")).json()
        assert [record["payload"] for record in page["records"]] == ["thinking", "done"]
        await create_stream(api, "run-1", "in", direction="input")
        await append(api, "run-1", "in", ["approve"])
        await asyncio.wait_for(team.delivered.wait(), GUARD_SECONDS)  # the node's dispatcher
        [event] = team.events
        assert (event.tenant, event.run_id, event.stream_id, event.sequence) == (
            "team", "run-1", "in", 1)
        assert event.record["payload"] == "approve"

        async def delivered() -> None:  # the row completes once `publish` returned
            while (await api.get("/runs/run-1/streams/in")).json()["status"][
                    "pending_inputs"]:
                await asyncio.sleep(0.05)

        await asyncio.wait_for(delivered(), GUARD_SECONDS)
    assert (team.opened, team.closed) == (1, 1)  # closed by the container, once


class Refused(Exception):
    pass


@asynccontextmanager
async def refusing() -> AsyncIterator[None]:
    raise Refused("the workflow engine is down")
    yield


async def test_what_was_opened_is_closed_when_opening_the_rest_fails() -> None:
    team = TeamWaitService()
    container = NodeContainer(settings=settings(workers=False))
    container.object_store.override(providers.Resource(refusing))
    container.wait_service.override(providers.Resource(team.open))
    with pytest.raises(Refused):
        async with open_node(container):
            raise AssertionError("a node whose object store did not open must not run")
    assert (team.opened, team.closed) == (1, 1)
