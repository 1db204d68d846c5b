"""The API documentation at `/schema`: one self-contained HTML page, and the OpenAPI JSON.

Litestar's default documentation pages (Swagger UI, ReDoc, RapiDoc, Elements,
Scalar) load their JavaScript, styles and favicon from public CDNs: a browser
opening `/schema` would fetch third-party code next to a page an operator is
logged into, and the page breaks on a network without them. Here the page is
rendered on the server from the OpenAPI document itself, needs no script and
references no other origin; a Content-Security-Policy that allows nothing but its
inline style says so to the browser (ADR 0025). `/schema/openapi.json` is unchanged,
for generated clients and interactive tools an operator runs themselves.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from litestar import Request, Router
from litestar.datastructures import ResponseHeader
from litestar.openapi.plugins import JsonRenderPlugin, OpenAPIRenderPlugin

DOCS_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
               "form-action 'none'; frame-ancestors 'none'")
"""Nothing may load, run, submit or frame: the page is text and an inline style."""
_METHODS = ("get", "put", "post", "delete", "patch")
_COMPONENT = "#/components/schemas/"
_RULES = (("enum", "one of"), ("const", "always"), ("default", "default"),
          ("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"),
          ("minLength", "length ≥"), ("maxLength", "length ≤"), ("minItems", "items ≥"),
          ("maxItems", "items ≤"), ("pattern", "matching"), ("format", "format"))
_STYLE = """<style>
body { font: 15px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem }
code, .path { font-family: ui-monospace, monospace }
.op { border-top: 1px solid #ddd; padding: .5rem 0 }
.method { display: inline-block; min-width: 4.5rem; font-weight: 600; text-transform: uppercase }
.doc { white-space: pre-wrap; color: #333; margin: .25rem 0 0 4.5rem }
.shape { margin: .25rem 0 0 4.5rem } .shape ul { margin: 0; padding-left: 1.25rem }
</style>"""


class SelfContainedDocs(OpenAPIRenderPlugin):
    """Every operation (method, path, summary, description, statuses, and the fields of its
    JSON request body and success response), grouped by tag."""

    def __init__(self) -> None:
        super().__init__(path="/", favicon="", style=_STYLE)

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        info = openapi_schema.get("info", {})
        components = openapi_schema.get("components", {}).get("schemas", {})
        sections: dict[str, list[str]] = {}
        for path, item in sorted(openapi_schema.get("paths", {}).items()):
            for method in _METHODS:
                operation = item.get(method)
                if operation is not None:
                    tag = (operation.get("tags") or ["other"])[0]
                    sections.setdefault(tag, []).append(
                        _operation(method, path, operation, components))
        body = "".join(f"<h2>{escape(tag)}</h2>{''.join(ops)}" for tag, ops in sections.items())
        json_path = escape(self.get_openapi_json_route(request))
        title = escape(str(info.get("title", "API")))
        version = escape(str(info.get("version", "")))
        page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{DOCS_POLICY}">
<title>{title} {version}</title>
{self.style}</head><body>
<h1>{title} <small>{version}</small></h1>
<p class="doc">{escape(str(info.get("description", "")))}</p>
<p>The OpenAPI document: <a href="{json_path}">{json_path}</a></p>
{body}
</body></html>"""
        return page.encode()


def _operation(method: str, path: str, operation: dict[str, Any],
               components: dict[str, Any]) -> str:
    statuses = ", ".join(sorted(operation.get("responses", {})))
    summary = escape(str(operation.get("summary", "")))
    description = escape(str(operation.get("description", "")))
    shapes = "".join(_shape(title, schema, components)
                     for title, schema in _bodies(operation))
    return (f'<div class="op"><span class="method">{method}</span>'
            f'<span class="path">{escape(path)}</span> — {summary}'
            f'<div class="doc">{description}\nResponses: {escape(statuses)}</div>'
            f"{shapes}</div>")


def _bodies(operation: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The JSON request body and the first JSON success response, with their titles."""
    found = []
    request = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if request is not None:
        found.append(("request body", request.get("schema", {})))
    for status, response in sorted(operation.get("responses", {}).items()):
        answer = response.get("content", {}).get("application/json")
        if status.startswith("2") and answer is not None:
            found.append((f"{status} response", answer.get("schema", {})))
            break
    return found


def _shape(title: str, schema: dict[str, Any], components: dict[str, Any]) -> str:
    return (f'<details class="shape"><summary>{escape(title)}</summary>'
            f"{_fields(schema, components)}</details>")


def _resolve(schema: Any, components: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_COMPONENT):
        return _resolve(components.get(ref.removeprefix(_COMPONENT), {}), components)
    return schema


def _fields(schema: Any, components: dict[str, Any]) -> str:
    """Every property, nested, with its kind and rules: the shapes readable offline."""
    schema = _resolve(schema, components)
    if schema.get("type") == "array":
        return _fields(schema.get("items", {}), components)
    alternatives = schema.get("anyOf") or schema.get("oneOf") or []
    nested = "".join(_fields(alternative, components) for alternative in alternatives)
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return nested
    required = set(schema.get("required", []))
    rows = [f"<li><code>{escape(name)}</code>{' <b>required</b>' if name in required else ''}"
            f" {escape(_kind(field, components))}{_fields(field, components)}</li>"
            for name, field in properties.items()]
    return f"<ul>{''.join(rows)}</ul>{nested}"


def _kind(schema: Any, components: dict[str, Any]) -> str:
    """`string, length ≤ 128 — what it is`, `integer > 0 or null`, `array of …`."""
    schema = _resolve(schema, components)
    alternatives = [alternative for alternative in schema.get("anyOf") or schema.get("oneOf")
                    or [] if isinstance(alternative, dict)]
    kind = schema.get("type")
    if kind is None and alternatives:
        kind = " or ".join(_kind(alternative, components) for alternative in alternatives)
    elif kind == "array":
        kind = f"array of ({_kind(schema.get('items', {}), components)})"
    elif isinstance(kind, list):
        kind = " or ".join(kind)
    rules = [f"{word} {json.dumps(schema[key], ensure_ascii=False)}"
             for key, word in _RULES if key in schema]
    text = ", ".join([str(kind or "any JSON"), *rules])
    described = schema.get("description")
    return f"{text} — {described}" if described else text


def api_docs_plugins() -> list[OpenAPIRenderPlugin]:
    return [SelfContainedDocs(), JsonRenderPlugin()]


def api_docs_router() -> Router:
    """The router Litestar puts the documentation routes on, with the page's policy."""
    return Router("/schema", route_handlers=[], include_in_schema=False,
                  response_headers=[ResponseHeader(name="Content-Security-Policy",
                                                   value=DOCS_POLICY)])
