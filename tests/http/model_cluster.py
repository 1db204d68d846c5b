"""Two Runnel nodes (regions `eu` and `us`) in this process, over ONE in-memory backend and
one object store, for the API model test (`test_api_model.py`).

Each node is its own host and app with its own region; both are built by the node's
container with one shared backend and object store given to it, so both see the same
streams, wakes and bodies, like two processes on one Postgres. Everything runs on one
event loop that the (synchronous) state machine drives step by step; no lifespan runs,
the nodes are attached here. Every response passes the checks that hold for every route.

Building the two apps costs ~150 ms, too much for every example of a shrinking run, so
they are built once; `fresh()` gives each example new nodes on a new backend, object
store and wait service, so no example sees another's state.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import httpx
from pydantic import SecretStr

from adapters.memory.backend import memory_backend
from adapters.memory.bus import MemoryWakeBus
from adapters.memory.objects import MemoryObjectStore
from adapters.memory.workflow import MemoryWorkflowWaitService
from application.views import API_PREFIX
from domain.identifiers import StreamKey
from entrypoints.auth.tokens import mint_token
from entrypoints.composition.container import Node, NodeContainer, NodeHost
from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_app

JWT_SECRET = "api-model-secret-0123456789abcdef"
REGIONS = ("eu", "us")
Who = tuple[str, str]
"""(tenant, sub)."""
Check = Callable[[Who, httpx.Response], None]
T = TypeVar("T")


class Cluster:
    def __init__(self, scopes: dict[str, tuple[tuple[str, ...], list[str] | None]]) -> None:
        self.loop = asyncio.new_event_loop()
        self.bus = MemoryWakeBus()
        self._scopes = scopes
        self._check: Check = lambda who, response: None
        self._tokens: dict[Who, str] = {}
        self._hosts: list[NodeHost] = []
        self._clients: dict[str, httpx.AsyncClient] = {}
        self.workflow = MemoryWorkflowWaitService()
        """What the nodes' dispatchers published (`fresh()` gives each example its own)."""
        self._apps: dict[str, Any] = {}
        """Called as plain ASGI apps (Litestar's own scope types are stricter than ASGI)."""
        for region in REGIONS:
            # eu's dispatcher dead-letters an input record on its first failure; us's backs
            # off (a second) and tries again: the model sees dead letters and retries.
            settings = Settings(storage="memory", jwt_secret=SecretStr(JWT_SECRET),
                                workers=False, region=region, object_regions=REGIONS,
                                delivery_max_attempts=1 if region == "eu" else 3)
            host = NodeHost(settings)
            self._hosts.append(host)
            app: Any = create_app(settings, host)
            self._apps[region] = app
            self._clients[region] = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url=f"http://{region}.runnel" + API_PREFIX)

    def fresh(self, check: Check) -> Cluster:
        """Empty storage on both nodes; `check` judges every response from now on."""
        backend = memory_backend()
        assert isinstance(backend.bus, MemoryWakeBus)
        self.bus, self._check = backend.bus, check
        objects = MemoryObjectStore(REGIONS)
        self.workflow = MemoryWorkflowWaitService()
        for host in self._hosts:
            container = NodeContainer(settings=host.settings, metrics=host.metrics,
                                      backend=backend, object_store=objects,
                                      wait_service=self.workflow)
            host.attach(Node(container.service(), backend, container.clock()))
        return self

    def dispatch(self, region: str, failures: int) -> int:
        """One pass of `region`'s input dispatcher, its first `failures` publishes failing."""
        self.workflow.fail_next(failures)
        [host] = [host for host in self._hosts if host.settings.region == region]
        delivered = self.run(host.node.service.dispatcher.dispatch_once(f"{region}-w", 3))
        self.workflow.fail_next(0)
        return delivered

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(step)

    def close(self) -> None:
        for client in self._clients.values():
            self.run(client.aclose())
        self.loop.close()

    def token(self, who: Who) -> str:
        if who not in self._tokens:
            scopes, runs = self._scopes[who[1]]
            self._tokens[who] = mint_token(JWT_SECRET, tenant=who[0], sub=who[1],
                                           scopes=scopes, runs=runs)
        return self._tokens[who]

    async def request(self, region: str, who: Who, method: str, path: str,
                      body: Any = None, content: bytes | None = None,
                      headers: dict[str, str] | None = None) -> httpx.Response:
        """As `who` (its bearer token), unless `headers` says otherwise."""
        response = await self._clients[region].request(
            method, path, json=body, content=content,
            headers={"authorization": f"Bearer {self.token(who)}"} if headers is None
            else headers)
        self._check(who, response)
        return response

    def call(self, region: str, who: Who, method: str, path: str, body: Any = None,
             content: bytes | None = None) -> httpx.Response:
        return self.run(self.request(region, who, method, path, body, content))

    def follow(self, region: str, who: Who, path: str) -> Follow:
        """Start a GET of an SSE route as a task; its body grows in `Follow.body` as the
        server sends it (httpx would hand it over only at the end)."""
        follow = Follow()
        disconnected = asyncio.Event()
        target, _, query = (API_PREFIX + path).partition("?")
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "GET", "scheme": "http", "path": target,
                 "raw_path": target.encode(), "query_string": query.encode(),
                 "root_path": "", "client": ("model", 1), "server": (region, 80),
                 "headers": [(b"host", region.encode()), (b"authorization",
                                                         f"Bearer {self.token(who)}".encode())]}
        requested = False

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                follow.status = message["status"]
            elif message["type"] == "http.response.body":
                follow.body.append(message.get("body", b""))
                if not message.get("more_body", False):
                    disconnected.set()

        follow.task = asyncio.ensure_future(self._apps[region](scope, receive, send))
        return follow

    async def settle(self, done: Callable[[], bool], rounds: int = 2000) -> bool:
        """Let the server run until `done()`, at most ~2 s (a guard, never a verdict on
        time: some frames pass a worker thread, so loop turns alone do not suffice).
        The model reads the hub only to know the follower registered: what the reader
        saw is judged from the SSE body alone."""
        for turn in range(rounds):
            if done():
                return True
            await asyncio.sleep(0 if turn < 50 else 0.001)
        return done()

    def has_readers(self, key: StreamKey) -> bool:
        return self.bus.hub.has_readers(key)

    def judge(self, who: Who, follow: Follow) -> str:
        text = b"".join(follow.body).decode()
        self._check(who, httpx.Response(follow.status, text=text))
        return text


class Follow:
    def __init__(self) -> None:
        self.status = 0
        self.body: list[bytes] = []
        self.task: asyncio.Future[None]


def sse_events(text: str) -> list[tuple[str, Any]]:
    """(event, decoded data) of every frame that has data; comments are skipped."""
    events: list[tuple[str, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            field, _, value = line.partition(":")
            if field == "event":
                name = value.strip()
            elif field == "data":
                data.append(value.removeprefix(" "))
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events
