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

from html import escape
from typing import Any

from litestar import Request, Router
from litestar.datastructures import ResponseHeader
from litestar.openapi.plugins import JsonRenderPlugin, OpenAPIRenderPlugin

DOCS_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
               "form-action 'none'; frame-ancestors 'none'")
"""Nothing may load, run, submit or frame: the page is text and an inline style."""
_METHODS = ("get", "put", "post", "delete", "patch")
_STYLE = """<style>
body { font: 15px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem }
code, .path { font-family: ui-monospace, monospace }
.op { border-top: 1px solid #ddd; padding: .5rem 0 }
.method { display: inline-block; min-width: 4.5rem; font-weight: 600; text-transform: uppercase }
.doc { white-space: pre-wrap; color: #333; margin: .25rem 0 0 4.5rem }
</style>"""


class SelfContainedDocs(OpenAPIRenderPlugin):
    """Every operation (method, path, summary, description, statuses), grouped by tag."""

    def __init__(self) -> None:
        super().__init__(path="/", favicon="", style=_STYLE)

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        info = openapi_schema.get("info", {})
        sections: dict[str, list[str]] = {}
        for path, item in sorted(openapi_schema.get("paths", {}).items()):
            for method in _METHODS:
                operation = item.get(method)
                if operation is not None:
                    tag = (operation.get("tags") or ["other"])[0]
                    sections.setdefault(tag, []).append(_operation(method, path, operation))
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


def _operation(method: str, path: str, operation: dict[str, Any]) -> str:
    statuses = ", ".join(sorted(operation.get("responses", {})))
    summary = escape(str(operation.get("summary", "")))
    description = escape(str(operation.get("description", "")))
    return (f'<div class="op"><span class="method">{method}</span>'
            f'<span class="path">{escape(path)}</span> — {summary}'
            f'<div class="doc">{description}\nResponses: {escape(statuses)}</div></div>')


def api_docs_plugins() -> list[OpenAPIRenderPlugin]:
    return [SelfContainedDocs(), JsonRenderPlugin()]


def api_docs_router() -> Router:
    """The router Litestar puts the documentation routes on, with the page's policy."""
    return Router("/schema", route_handlers=[], include_in_schema=False,
                  response_headers=[ResponseHeader(name="Content-Security-Policy",
                                                   value=DOCS_POLICY)])
