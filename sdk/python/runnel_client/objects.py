"""Large bodies as object records (docs/api.md): prepare, upload, commit; and back.

Rules:
- a body is `bytes`, a path (`str` or `os.PathLike`), or a binary file object. Its
  size and SHA-256 are measured first (a path or a seekable file is read twice, never
  held whole; an unseekable file is spooled to a temporary file on the way), then
  sent as the prepare's pins, so the server refuses a body that changed in between
  (422 `digest_mismatch` / `size_mismatch`) and keeps nothing of it;
- the intent's idempotency key defaults to one derived from the digest, size and
  content type: an upload repeated after a crash finds its intent and goes on from
  its state (upload skipped once uploaded; a committed intent answers its original
  sequence), so the same body is one record however often it is sent;
- a download is checked against the record's size and digest as it ends; a body that
  does not match raises `RunnelError` (`code` `download_mismatch`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import httpx

from runnel_client.errors import RunnelError
from runnel_client.wire import Record

CHUNK_BYTES = 256 * 1024
SPOOL_BYTES = 8 * 1024 * 1024
ObjectBody = bytes | str | os.PathLike[str] | IO[bytes]


@dataclass
class MeasuredBody:
    size: int
    sha256: str
    _bytes: bytes | None = None
    _path: str | None = None
    _file: IO[bytes] | None = None
    _start: int = 0
    _owned: bool = False

    def chunks(self) -> Iterator[bytes]:
        if self._bytes is not None:
            for start in range(0, len(self._bytes), CHUNK_BYTES):
                yield self._bytes[start:start + CHUNK_BYTES]
            return
        if self._path is not None:
            with open(self._path, "rb") as file:
                yield from iter(lambda: file.read(CHUNK_BYTES), b"")
            return
        source = self._file
        assert source is not None
        source.seek(self._start)
        yield from iter(lambda: source.read(CHUNK_BYTES), b"")

    def close(self) -> None:
        if self._owned and self._file is not None:
            self._file.close()


def measure(body: ObjectBody) -> MeasuredBody:
    """Size and digest of a body, and a way to read it again (blocking I/O)."""
    if isinstance(body, bytes | bytearray | memoryview):
        data = bytes(body)
        return MeasuredBody(len(data), hashlib.sha256(data).hexdigest(), _bytes=data)
    if isinstance(body, str | os.PathLike):
        path = os.fspath(body)
        digest, size = hashlib.sha256(), 0
        with open(path, "rb") as file:
            for chunk in iter(lambda: file.read(CHUNK_BYTES), b""):
                digest.update(chunk)
                size += len(chunk)
        return MeasuredBody(size, digest.hexdigest(), _path=path)
    source: IO[bytes] = body
    if not body.seekable():
        source = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (closed by close())
        shutil.copyfileobj(body, source, CHUNK_BYTES)
        source.seek(0)
    start = source.tell()
    digest, size = hashlib.sha256(), 0
    for chunk in iter(lambda: source.read(CHUNK_BYTES), b""):
        digest.update(chunk)
        size += len(chunk)
    return MeasuredBody(size, digest.hexdigest(), _file=source, _start=start,
                        _owned=source is not body)


def default_key(body: MeasuredBody, content_type: str) -> str:
    named = f"{body.sha256}:{body.size}:{content_type}".encode()
    return "object:" + hashlib.sha256(named).hexdigest()[:40]


def prepare_body(body: MeasuredBody, content_type: str, idempotency_key: str | None,
                 schema: str | None) -> dict[str, Any]:
    pins: dict[str, Any] = {"idempotency_key": idempotency_key or default_key(body, content_type),
                            "sha256": body.sha256, "size": body.size,
                            "content_type": content_type}
    if schema is not None:
        pins["schema"] = schema
    return pins


def object_id_of(target: Record | str) -> str:
    if isinstance(target, str):
        return target
    if target.object is None:
        raise ValueError(f"record {target.sequence} is not an object record")
    return str(target.object["object_id"])


class DownloadCheck:
    """Counts and hashes a download; `finish()` raises when it does not match."""

    def __init__(self, size: int | None, sha256: str | None) -> None:
        self._size, self._sha256 = size, sha256
        self._digest, self.received = hashlib.sha256(), 0

    @classmethod
    def of(cls, headers: httpx.Headers) -> DownloadCheck:
        """The check an answer's `Content-Length` and `X-Content-SHA256` pin."""
        length = headers.get("Content-Length")
        return cls(int(length) if length is not None and length.isdigit() else None,
                   headers.get("X-Content-SHA256"))

    def update(self, chunk: bytes) -> bytes:
        self._digest.update(chunk)
        self.received += len(chunk)
        return chunk

    def finish(self) -> None:
        digest = self._digest.hexdigest()
        if (self._size is not None and self.received != self._size) or (
                self._sha256 is not None and digest != self._sha256):
            raise RunnelError(0, "download_mismatch", {
                "code": "download_mismatch", "expected_size": self._size,
                "received": self.received, "expected_sha256": self._sha256,
                "detail": "the downloaded body does not match the object's size and digest"})
