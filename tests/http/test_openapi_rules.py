"""The OpenAPI document publishes the rules the code validates with (ADR 0026)."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from domain.identifiers import ID_MAX_LENGTH, ID_REGEX
from domain.records import IDEMPOTENCY_KEY_MAX, OBJECT_MAX_BYTES
from domain.stream import MAX_BATCH
from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_app

STREAM = "/api/workflow-streams/runs/{run_id}/streams/{stream_id}"


def document() -> dict[str, Any]:
    settings = Settings(storage="memory", jwt_secret=SecretStr("openapi-" * 5), workers=False)
    schema: dict[str, Any] = create_app(settings).openapi_schema.to_schema()
    return schema


def test_every_path_parameter_publishes_its_id_rule() -> None:
    paths = document()["paths"]
    seen = set()
    for item in paths.values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path":
                    seen.add(parameter["name"])
                    assert "pattern" in parameter["schema"], parameter
                    if parameter["name"] != "object_id":
                        assert parameter["schema"]["pattern"] == ID_REGEX
                        assert parameter["schema"]["maxLength"] == ID_MAX_LENGTH
    assert seen == {"run_id", "stream_id", "consumer_id", "object_id"}


def test_bodies_and_answers_carry_their_bounds() -> None:
    doc = document()
    records = doc["components"]["schemas"]["AppendBody"]["properties"]["records"]
    assert records["maxItems"] == MAX_BATCH
    assert records["items"]["properties"]["idempotency_key"]["maxLength"] == IDEMPOTENCY_KEY_MAX
    create = doc["paths"]["/api/workflow-streams/runs/{run_id}/streams"]["post"]
    body = create["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["stream_id", "content_class"]
    assert body["properties"]["credit"]["properties"]["on_unread_full"]["enum"] == [
        "reject", "block"]
    read = doc["paths"][STREAM + "/records"]["get"]
    after = next(p for p in read["parameters"] if p["name"] == "after")
    assert {"type": "integer", "minimum": 0}.items() <= after["schema"]["oneOf"][0].items()
    page = read["responses"]["200"]["content"]["application/json"]["schema"]
    assert {"records", "next_cursor", "head", "earliest", "closed"} <= set(page["required"])
    assert "application/problem+json" in read["responses"]["431"]["content"]


def test_statuses_the_fuzzer_saw_undocumented_are_documented() -> None:
    """`…/live` on a closed stream answers 409 `stream_closed` (found by schemathesis)."""
    live = document()["paths"][STREAM + "/live"]["post"]["responses"]
    assert "application/problem+json" in live["409"]["content"]


def test_the_upload_publishes_its_raw_body() -> None:
    upload = document()["paths"][STREAM + "/objects/{object_id}/body"]["put"]
    schema = upload["requestBody"]["content"]["application/octet-stream"]["schema"]
    assert schema["maxLength"] == OBJECT_MAX_BYTES
