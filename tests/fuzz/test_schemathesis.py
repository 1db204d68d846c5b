"""Schemathesis against a live `runnel serve` on real Postgres, with two tenants (ADR 0026).

Every operation of `/schema/openapi.json` (except the endless event stream) gets
generated requests, valid and invalid, as one of two tenants. Each response must be no
5xx, have a documented status and content type, and match its published schema; and it
must never carry anything of the other tenant. Both tenants own a stream at the same ids
(`r1`/`s1`, consumer `ui`, one object), and generated path parameters are steered to those
ids half of the time, so requests reach real resources and the other tenant's twins.

Bounded and reproducible: `derandomize=True` (a fixed seed from each operation's
definition) and `EXAMPLES` per operation.
"""

from __future__ import annotations

import hashlib
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_app
from tests.http.server import SECRET, RunnelServer, bearer, running_server, token
from tests.pg import create_database, drop_database, pg_template, run_sync

__all__ = ["pg_template"]

EXAMPLES = int(os.environ.get("RUNNEL_FUZZ_EXAMPLES", "40"))
"""Cases per operation: 40 in `make test` (about 30 s); `make fuzz` asks for more."""
TENANTS = ("acme", "globex")
SCOPES = ("streams:read", "streams:write", "streams:admin")
RUN, STREAM, CONSUMER = "r1", "s1", "ui"
MARK = {tenant: f"~marker-of-{tenant}~" for tenant in TENANTS}
BODY = {tenant: f"object-body-of-{tenant}".encode() for tenant in TENANTS}
CHECKS = [schemathesis.checks.not_a_server_error, status_code_conformance,
          content_type_conformance, response_schema_conformance, negative_data_rejection]
"""No 5xx; a documented status, content type and body; and a request the document calls
invalid is refused (so the published rules are not looser than the real ones)."""
EXCLUDED_PATHS = r".*/subscribe$"
"""The event stream never ends by itself; its parsers have fuzz targets of their own."""


def seed(api: str, tenant: str) -> str:
    """The tenant's stream at the shared ids, with a marked record and a committed object;
    returns the object's id."""
    with httpx.Client(base_url=api, headers=bearer(token(tenant, "fuzzer", SCOPES)),
                      timeout=30) as client:
        created = client.post(f"/runs/{RUN}/streams", json={
            "stream_id": STREAM, "content_class": "output.text", "consumers": [CONSUMER]})
        assert created.status_code == 201, created.text
        base = f"/runs/{RUN}/streams/{STREAM}"
        appended = client.post(base + "/records", json={"records": [
            {"payload": {"mark": MARK[tenant]}, "idempotency_key": "k1"}]})
        assert appended.status_code == 201, appended.text
        body = BODY[tenant]
        prepared = client.post(base + "/objects", json={
            "idempotency_key": "o1", "sha256": hashlib.sha256(body).hexdigest(),
            "size": len(body), "content_type": "application/octet-stream"})
        assert prepared.status_code == 201, prepared.text
        object_id: str = prepared.json()["object_id"]
        assert client.put(base + f"/objects/{object_id}/body", content=body).status_code == 200
        assert client.post(base + f"/objects/{object_id}/commit").status_code == 201
        return object_id


@pytest.fixture(scope="module")
def live(pg_template: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[RunnelServer, dict[str, str]]]:
    dsn = run_sync(lambda: create_database(template=pg_template, prefix="runnel_fuzz"))
    data_dir: Path = tmp_path_factory.mktemp("fuzz")
    env = {"RUNNEL_DATABASE_URL": dsn, "RUNNEL_STORAGE": "postgres",
           "RUNNEL_KEEPALIVE_SECONDS": "1"}
    try:
        with running_server(env, data_dir) as server:
            objects = {tenant: seed(server.api, tenant) for tenant in TENANTS}
            yield server, objects
    finally:
        run_sync(lambda: drop_database(dsn))


def operations() -> list[tuple[str, str]]:
    """(method, path) of every documented operation, read from the app's own document."""
    app = create_app(Settings(storage="memory", jwt_secret=SecretStr(SECRET), workers=False))
    document = app.openapi_schema.to_schema()
    return [(method.upper(), path) for path, item in sorted(document["paths"].items())
            if not re.fullmatch(EXCLUDED_PATHS, path)
            for method in item if method in ("get", "put", "post", "delete", "patch")]


@pytest.fixture(scope="module")
def api_schema(live: tuple[RunnelServer, dict[str, str]]) -> Any:
    server, _ = live
    # Unknown query parameters are ignored, as HTTP APIs do, so they are not "invalid".
    config = schemathesis.Config.from_dict({"generation": {"allow-extra-parameters": False}})
    return schemathesis.openapi.from_url(server.url + "/schema/openapi.json", config=config)


def cases(operation: Any, objects: dict[str, str]) -> st.SearchStrategy[Any]:
    """Valid and invalid requests with generated ids, and valid ones at the ids both tenants
    own (for an object, either tenant's object)."""
    names = {p.name for p in operation.path_parameters}
    variants = [operation.as_strategy(GenerationMode.POSITIVE),
                operation.as_strategy(GenerationMode.NEGATIVE)]
    if names and operation.method.upper() != "DELETE":
        for owner in TENANTS:
            shared = {"run_id": RUN, "stream_id": STREAM, "consumer_id": CONSUMER,
                      "object_id": objects[owner]}
            variants.append(operation.as_strategy(
                GenerationMode.POSITIVE,
                path_parameters={name: shared[name] for name in names}))
    return st.one_of(variants)


def tenant_of(case: Any) -> str:
    """Which tenant sends this case: a stable function of the case."""
    return TENANTS[zlib.crc32(repr((case.path_parameters, case.query, case.body)).encode()) % 2]


@pytest.mark.parametrize(("method", "path"), operations(), ids=lambda v: str(v))
def test_the_live_api_answers_every_generated_request_as_published(
        method: str, path: str, api_schema: Any,
        live: tuple[RunnelServer, dict[str, str]]) -> None:
    server, objects = live
    operation = api_schema[path][method]

    @given(case=cases(operation, objects))
    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    def answer(case: Any) -> None:
        tenant = tenant_of(case)
        other = TENANTS[1 - TENANTS.index(tenant)]
        headers = dict(case.headers or {})
        if "Authorization" in headers:  # a negative case may have dropped it: then none
            headers["Authorization"] = f"Bearer {token(tenant, 'fuzzer', SCOPES)}"
        response = case.call_and_validate(base_url=server.url, headers=headers,
                                          checks=CHECKS, timeout=30)
        assert MARK[other] not in response.text, f"{tenant} saw {other}'s record"
        assert BODY[other] not in response.content, f"{tenant} saw {other}'s object body"

    answer()
