"""Every API route resolves its dependencies in one step (ADR 0049): Litestar runs a batch
of more than one in an anyio task group per request, so no such batch may exist on any
route under the API prefix, a route added later included; and each of them still
authenticates, through its one `caller` dependency. Outside the prefix, the operations
routes name at most one and the Durable Streams facade none (it authenticates in its
dispatch)."""

from __future__ import annotations

from typing import Any

from litestar.routes import HTTPRoute
from pydantic import SecretStr

from application.views import API_PREFIX
from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_app
from entrypoints.http.callers import Caller, Minter
from entrypoints.http.durable_streams.handlers import PREFIX as FACADE_PREFIX

Route = tuple[str, str, Any, Any]


def every_route() -> list[Route]:
    app = create_app(Settings(storage="memory", workers=False,
                              jwt_secret=SecretStr("dependency-test-secret-0123456789ab")))
    return [(method, route.path, handler, model)
            for route in app.routes if isinstance(route, HTTPRoute)
            for method, (handler, model) in route.route_handler_map.items()
            if method != "OPTIONS"]


def api_routes() -> list[Route]:
    return [route for route in every_route() if route[1].startswith(API_PREFIX + "/")]


def test_no_api_route_resolves_a_batch_of_several_dependencies() -> None:
    routes = api_routes()
    # streams 3, runs, deliveries, records 2, live, subscribe, subscribe-token, ack, close,
    # legal hold, erase, objects 6
    assert len(routes) >= 20
    for method, path, _, model in routes:
        assert [len(batch) for batch in model.dependency_batches] == [1], (method, path)


def test_each_api_route_authenticates_through_its_one_caller_dependency() -> None:
    kinds = {}
    for method, path, handler, model in api_routes():
        [batch] = model.dependency_batches
        [dependency] = batch
        assert dependency.key == "caller", (method, path)
        provide = handler.resolve_dependencies()["caller"]
        assert provide.signature_model is not None
        kinds[path] = provide.dependency.__annotations__["return"]
    assert set(kinds.values()) == {Caller.__name__, Minter.__name__}
    assert kinds[API_PREFIX + "/runs/{run_id:str}/streams/{stream_id:str}/subscribe-token"] == (
        Minter.__name__)


def test_the_subscribe_route_takes_its_own_credentials_in_that_one_dependency() -> None:
    [(_, _, handler, _)] = [route for route in api_routes()
                            if route[1].endswith("{stream_id:str}/subscribe")]
    provide = handler.resolve_dependencies()["caller"]
    assert "access_token" in provide.dependency.__annotations__
    [(_, _, run_handler, _)] = [route for route in api_routes()
                                if route[1].endswith("{run_id:str}/subscribe")]
    run_caller = run_handler.resolve_dependencies()["caller"].dependency
    assert "access_token" not in run_caller.__annotations__  # a subscribe token is one stream's
    bearer = next(route[2] for route in api_routes() if route[1].endswith("/records"))
    assert "access_token" not in bearer.resolve_dependencies()["caller"].dependency.__annotations__


def test_no_route_outside_the_api_resolves_several_dependencies_at_once() -> None:
    outside = [route for route in every_route() if not route[1].startswith(API_PREFIX + "/")]
    assert any(path.startswith(FACADE_PREFIX) for _, path, _, _ in outside)
    for method, path, _, model in outside:
        assert all(len(batch) == 1 for batch in model.dependency_batches), (method, path)
        if path.startswith(FACADE_PREFIX):
            assert not model.dependency_batches, (method, path)
