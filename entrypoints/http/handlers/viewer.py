"""The web viewer: one static page at `/`, no token needed (the page holds no data;
it asks for a token and sends it with each API call), and `/runnel.js`, the browser
follower it uses, served for any page to import (ADR 0038)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from litestar import Response


@cache
def _asset(name: str) -> bytes:
    return files("entrypoints.web").joinpath(name).read_bytes()


async def viewer() -> Response[bytes]:
    """The viewer page: lists a run's streams and follows one live."""
    return Response(_asset("viewer.html"), media_type="text/html",
                    headers={"Cache-Control": "no-cache",
                             "Content-Security-Policy": "default-src 'self'; "
                             "script-src 'unsafe-inline' 'self'; "
                             "style-src 'unsafe-inline' 'self'"})


async def runnel_js() -> Response[bytes]:
    """The browser follower (an ES module, no dependencies): `import { follow } from
    "/runnel.js"`."""
    return Response(_asset("runnel.js"), media_type="text/javascript; charset=utf-8",
                    headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
                             "Access-Control-Allow-Origin": "*"})
