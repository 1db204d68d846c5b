"""The API description a new user reads: `/schema` offline, and an OpenAPI document that
spells out the definition and the record shapes (ADR 0036)."""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest
from litestar.testing import TestClient
from pydantic import BaseModel, SecretStr

from domain.definition import StreamDefinition
from domain.pins import CreditPins, PlacementPins, RetentionPins
from entrypoints.composition.settings import Settings
from entrypoints.http.app import create_app

STREAM = "/api/workflow-streams/runs/{run_id}/streams/{stream_id}"
COMPOSITE = ("properties", "additionalProperties", "patternProperties", "oneOf", "anyOf",
             "allOf", "$ref", "const", "enum")


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient[Any]]:
    settings = Settings(storage="memory", jwt_secret=SecretStr("api-docs-" * 5), workers=False)
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def document(client: TestClient[Any]) -> dict[str, Any]:
    answer = client.get("/schema/openapi.json")
    assert answer.status_code == 200
    body: dict[str, Any] = answer.json()
    return body


def schemas(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every JSON Schema object in the document, with where it sits."""
    if isinstance(node, dict):
        if "type" in node or "properties" in node:
            yield where, node
        for key, value in node.items():
            yield from schemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from schemas(value, f"{where}[{index}]")


def response_schema(document: dict[str, Any], path: str, method: str,
                    status: str = "200") -> dict[str, Any]:
    schema: dict[str, Any] = (document["paths"][path][method]["responses"][status]["content"]
                              ["application/json"]["schema"])
    return schema


def test_no_object_is_published_bare(document: dict[str, Any]) -> None:
    bare = [where for where, schema in schemas(document)
            if schema.get("type") == "object" and not any(key in schema for key in COMPOSITE)]
    assert bare == []


def assert_fields_of(model: type[BaseModel], schema: dict[str, Any]) -> None:
    assert set(schema["properties"]) == set(model.model_fields), model.__name__


def test_the_definition_is_published_pin_by_pin(document: dict[str, Any]) -> None:
    for schema in (response_schema(document, STREAM, "get")["properties"]["definition"],
                   document["paths"]["/api/workflow-streams/runs/{run_id}/streams"]["post"]
                   ["requestBody"]["content"]["application/json"]["schema"]):
        assert_fields_of(StreamDefinition, schema)
        assert_fields_of(CreditPins, schema["properties"]["credit"])
        assert_fields_of(RetentionPins, schema["properties"]["retention"])
        assert_fields_of(PlacementPins, schema["properties"]["placement"])
        consumer_forms = schema["properties"]["consumers"]["items"]["anyOf"]
        assert {form.get("type") for form in consumer_forms} == {"string", "object"}


def test_a_record_publishes_its_one_body_and_the_append_its_duplicates(
        document: dict[str, Any]) -> None:
    page = response_schema(document, STREAM + "/records", "get")
    record = page["properties"]["records"]["items"]
    assert {"sequence", "content_type", "appended_at", "payload", "data", "object",
            "idempotency_key"} == set(record["properties"])
    assert [form["required"] for form in record["oneOf"]] == [["payload"], ["data"],
                                                              ["object"]]
    assert set(record["properties"]["object"]["required"]) == {
        "object_id", "size", "sha256", "content_type", "href"}
    for status in ("200", "201"):
        appended = response_schema(document, STREAM + "/records", "post", status)
        assert appended["required"] == ["head", "sequences"]  # SPEC's fields, unchanged
        assert appended["properties"]["duplicates"]["items"]["type"] == "integer"
    events = document["paths"][STREAM + "/subscribe"]["get"]["responses"]["200"]
    for event in ("`record`", "`live`", "`resync`", "`end`", "last_sequence"):
        assert event in events["description"]


class Loads(HTMLParser):
    """What a page would make a browser fetch or run."""

    def __init__(self) -> None:
        super().__init__()
        self.fetched: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.scripts += tag == "script"
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "data") and value is not None:
                self.fetched.append(value)


def test_the_schema_page_loads_nothing_and_lists_every_field(client: TestClient[Any]) -> None:
    answer = client.get("/schema")
    assert answer.status_code == 200
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    page = Loads()
    page.feed(answer.text)
    assert page.scripts == 0
    assert page.fetched and all(url.startswith("/") and not url.startswith("//")
                                for url in page.fetched), page.fetched
    assert "@import" not in answer.text and "url(" not in answer.text  # nothing via CSS
    for field in ("max_unread_items", "on_unread_full", "client_egress_regions",
                  "idempotency_key", "duplicates", "next_cursor", "principals"):
        assert f"<code>{field}</code>" in answer.text, field
