"""Objects through the SDK against a real server (filesystem store): bytes, a path, a file
and an unseekable pipe go through prepare, upload and commit and come back as the record;
a download streams the body back checked; a repeat is the same record; the server's 413
for an oversize inline record names the object path."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import IO

import pytest
from runnel_client import AsyncRunnelClient, Record, RunnelClient, RunnelError
from runnel_client.objects import DownloadCheck

from tests.http.server import RunnelServer, token

BODY = bytes(range(256)) * 3000 + b"end"  # ~750 KiB: several upload and download chunks
DEFINITION = {"stream_id": "s", "content_class": "output.file"}


class Unseekable(io.RawIOBase):
    """A pipe-like file: read once, no seek, no tell."""

    def __init__(self, body: bytes) -> None:
        self._inner = io.BytesIO(body)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._inner.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


async def download(rn: AsyncRunnelClient, run_id: str, record: Record) -> bytes:
    return b"".join([chunk async for chunk in rn.stream(run_id, "s").download_object(record)])


async def test_bytes_a_path_and_files_become_object_records_and_come_back(
        server: RunnelServer, run_id: str, tmp_path: Path) -> None:
    path = tmp_path / "report.bin"
    path.write_bytes(BODY[::-1])
    async with AsyncRunnelClient(server.url, token()) as rn:
        stream = rn.stream(run_id, "s")
        await stream.create(DEFINITION)
        sources: list[tuple[bytes | str | os.PathLike[str] | IO[bytes], bytes]] = [
            (BODY, BODY), (path, BODY[::-1]), (str(path), BODY[::-1]),
            (io.BytesIO(b"file " + BODY), b"file " + BODY),
            (io.BufferedReader(Unseekable(b"pipe " + BODY)), b"pipe " + BODY)]
        records = []
        for source, expected in sources:
            record = await stream.upload_object(source, content_type="application/pdf")
            records.append(record)
            assert record.object is not None
            assert (record.object["size"], record.object["sha256"]) == (
                len(expected), hashlib.sha256(expected).hexdigest())
            assert record.content_type == "application/pdf"
            assert await download(rn, run_id, record) == expected
    # the path twice (as a Path and a str) is one body: one record
    assert [r.sequence for r in records] == [1, 2, 2, 3, 4]


async def test_a_repeated_upload_is_the_same_record_and_another_key_a_new_one(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        await rn.create_stream(run_id, DEFINITION)
        first = await rn.upload_object(run_id, "s", BODY)
        again = await rn.upload_object(run_id, "s", BODY)
        other = await rn.upload_object(run_id, "s", BODY, idempotency_key="second-copy")
        page = await rn.read(run_id, "s")
    assert first == again
    assert other.sequence == 2 and other.object and first.object
    assert other.object["object_id"] != first.object["object_id"]
    assert [r.sequence for r in page.records] == [1, 2]


async def test_an_unknown_object_or_a_record_without_one_is_refused(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as rn:
        await rn.create_stream(run_id, DEFINITION)
        with pytest.raises(RunnelError) as missing:
            async for _ in rn.download_object(run_id, "s", "no-such-object"):
                pass
        with pytest.raises(ValueError, match="not an object record"):
            async for _ in rn.download_object(run_id, "s", Record(1, "application/json", "now")):
                pass
    assert missing.value.status == 404


def test_a_body_that_does_not_match_its_record_is_refused_at_the_end() -> None:
    check = DownloadCheck(size=3, sha256=hashlib.sha256(b"abc").hexdigest())
    check.update(b"ab")
    check.update(b"d")
    with pytest.raises(RunnelError) as mismatch:
        check.finish()
    assert mismatch.value.code == "download_mismatch"
    whole = DownloadCheck(size=3, sha256=hashlib.sha256(b"abc").hexdigest())
    whole.update(b"abc")
    whole.finish()


def test_the_sync_client_uploads_and_downloads_through_its_handle(
        server: RunnelServer, run_id: str, tmp_path: Path) -> None:
    path = tmp_path / "body"
    path.write_bytes(BODY)
    with RunnelClient(server.url, token()) as rn:
        stream = rn.stream(run_id, "s")
        stream.create(DEFINITION)
        record = stream.upload_object(path)
        body = b"".join(stream.download_object(record))
        assert record.object is not None
        assert b"".join(stream.download_object(record.object["object_id"])) == BODY
    assert body == BODY and record.sequence == 1


def test_an_oversize_inline_record_is_refused_naming_the_object_path(
        server: RunnelServer, run_id: str) -> None:
    with RunnelClient(server.url, token()) as rn:
        rn.create_stream(run_id, DEFINITION)
        with pytest.raises(RunnelError) as refused:
            rn.append(run_id, "s", [{"payload": "x" * 70_000}])
        assert rn.read(run_id, "s").head == 0
    assert (refused.value.status, refused.value.code) == (413, "too_large")
    assert "upload_object" in refused.value.problem["detail"]
    assert "/objects" in refused.value.problem["detail"]


