"""The console (ADR 0046): a static page at `/` and its files under `/console/`, no token
needed (they hold no data; the page asks for a token and sends it in each API call's
header), and `/runnel.js`, the browser follower it uses, served for any page to import
(ADR 0038). The console's policy allows this origin's files only: no inline script or
style, no other origin, no frames."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from litestar import Response
from litestar.exceptions import NotFoundException
from litestar.params import FromPath

CONSOLE_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                  "connect-src 'self'; object-src 'none'; base-uri 'none'; "
                  "form-action 'none'; frame-ancestors 'none'")

CONSOLE_FILES = {
    "console.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "dom.js": "text/javascript; charset=utf-8",
    "records.js": "text/javascript; charset=utf-8",
    "stream.js": "text/javascript; charset=utf-8",
}
"""Every file under `/console/`, with its media type; any other name is 404."""

_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer"}


@cache
def _asset(name: str) -> bytes:
    return files("entrypoints.web").joinpath(name).read_bytes()


async def viewer() -> Response[bytes]:
    """The console page: the tenant's runs, their streams, one stream's figures, lag bars,
    credit, deliveries, rate and records."""
    return Response(_asset("console.html"), media_type="text/html; charset=utf-8",
                    headers={**_HEADERS, "Content-Security-Policy": CONSOLE_POLICY})


async def console_file(name: FromPath[str]) -> Response[bytes]:
    """One of the console's own files (`CONSOLE_FILES`)."""
    media_type = CONSOLE_FILES.get(name)
    if media_type is None:
        raise NotFoundException()
    return Response(_asset(f"console/{name}"), media_type=media_type,
                    headers={**_HEADERS, "Content-Security-Policy": CONSOLE_POLICY})


async def runnel_js() -> Response[bytes]:
    """The browser follower (an ES module, no dependencies): `import { follow } from
    "/runnel.js"`."""
    return Response(_asset("runnel.js"), media_type="text/javascript; charset=utf-8",
                    headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
                             "Access-Control-Allow-Origin": "*"})
