"""Helpers for the object tests: bodies, the object routes, and what a store holds on disk/S3."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from tests.http.server import RunnelServer
from tests.s3 import MotoS3


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def pins(body: bytes, key: str = "o1", content_type: str = "application/pdf") -> dict[str, Any]:
    return {"idempotency_key": key, "sha256": digest(body), "size": len(body),
            "content_type": content_type}


async def chunked(body: bytes, size: int = 256 * 1024) -> AsyncIterator[bytes]:
    """A body without Content-Length (chunked transfer), so the server must stream it."""
    for start in range(0, len(body), size):
        yield body[start:start + size]
        await asyncio.sleep(0)


def objects_url(run_id: str, stream_id: str = "s") -> str:
    return f"/runs/{run_id}/streams/{stream_id}/objects"


async def prepare(api: httpx.AsyncClient, run_id: str, body: bytes, key: str = "o1",
                  stream_id: str = "s") -> dict[str, Any]:
    response = await api.post(objects_url(run_id, stream_id), json=pins(body, key))
    assert response.status_code == 201, response.text
    prepared: dict[str, Any] = response.json()
    return prepared


def absolute(server: RunnelServer, path: str) -> str:
    """`upload_url` and `href` are absolute paths on the node."""
    assert path.startswith("/api/workflow-streams/"), path
    return server.url + path


class StoreView:
    """Every body a server's object store holds (including temporary files on disk)."""

    def __init__(self, server: RunnelServer, s3: MotoS3 | None, bucket: str | None) -> None:
        self._root = server.log.parent / "objects"
        self._s3 = s3
        self._bucket = bucket

    def keys(self, run_id: str) -> list[str]:
        if self._s3 is not None:
            listing = self._s3.client().list_objects_v2(Bucket=self._bucket)
            return sorted(item["Key"] for item in listing.get("Contents", [])
                          if f"/{run_id}/" in item["Key"])
        return sorted(str(path.relative_to(self._root)) for path in self._root.rglob("*")
                      if path.is_file() and run_id in path.parts)

    def multipart_uploads(self) -> list[str]:
        if self._s3 is None:
            return []
        listing = self._s3.client().list_multipart_uploads(Bucket=self._bucket)
        return [upload["Key"] for upload in listing.get("Uploads", [])]
