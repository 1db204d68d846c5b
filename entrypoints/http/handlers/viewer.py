"""The web viewer: one static page at `/`, no token needed (the page holds no data;
it asks for a token and sends it with each API call)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from litestar import Response


@cache
def _page() -> bytes:
    return files("entrypoints.web").joinpath("viewer.html").read_bytes()


async def viewer() -> Response[bytes]:
    """The viewer page: lists a run's streams and follows one live."""
    return Response(_page(), media_type="text/html",
                    headers={"Cache-Control": "no-cache",
                             "Content-Security-Policy": "default-src 'self'; "
                             "script-src 'unsafe-inline' 'self'; "
                             "style-src 'unsafe-inline' 'self'"})
