"""The API routes resolve their dependencies in one step each (ADR 0049): Litestar runs a
batch of more than one in an anyio task group per request, so no such batch may exist on
the routes of records, streams, consumers and lifecycle; and each of them still takes the
bearer token (the `caller` dependency authenticates)."""

from __future__ import annotations

from typing import Any

from litestar.routes import HTTPRoute
from pydantic import SecretStr

from entrypoints.http import create_app
from entrypoints.http.handlers import consumers, lifecycle, records, streams
from entrypoints.settings import Settings

MODULES = {module.__name__ for module in (records, streams, consumers, lifecycle)}


def api_routes() -> list[tuple[str, str, Any, Any]]:
    app = create_app(Settings(storage="memory", workers=False,
                              jwt_secret=SecretStr("dependency-test-secret-0123456789ab")))
    found = []
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for method, (handler, model) in route.route_handler_map.items():
            if handler.fn.__module__ in MODULES:
                found.append((method, route.path, handler, model))
    return found


def test_no_api_route_of_these_modules_resolves_a_batch_of_several_dependencies() -> None:
    routes = api_routes()
    assert len(routes) >= 9  # append, read, 3 streams, ack, close, legal hold, erase
    for method, path, _, model in routes:
        assert [len(batch) for batch in model.dependency_batches] == [1], (method, path)


def test_each_of_them_authenticates_through_the_caller_dependency() -> None:
    for method, path, handler, model in api_routes():
        [batch] = model.dependency_batches
        [dependency] = batch
        assert dependency.key == "caller", (method, path)
        assert "caller" in handler.resolve_dependencies(), (method, path)
