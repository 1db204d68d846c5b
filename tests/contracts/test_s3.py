"""The S3 object store against moto's server over HTTP: multipart bodies, nothing
kept on a mismatch, the checksum stored with the object, one bucket per region, and an
S3 that fails or hangs is unavailable (503) within its bounds, not an error."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from adapters.s3 import S3Bounds, S3ObjectStore, S3RegionConfig
from application.ports.errors import ObjectStoreUnavailable
from domain.errors import DigestMismatch, SizeMismatch
from tests.chaos.s3_proxy import FaultRates, S3FaultProxy
from tests.contracts.object_store_contract import ObjectStoreContract
from tests.integration.blackhole_proxy import BlackholeProxy
from tests.integration.support import DEADLINE
from tests.s3 import MotoS3, moto_s3_server

KEY = "tenant-a/run-1/stream-1/3f0c0b8e-0d7e-4a43-9a55-0f2a4f9c1d10"
MiB = 1024 * 1024
# Larger than one 8 MiB part, so the store must use a multipart upload.
MULTIPART_BODY = random.Random(10).randbytes(9 * MiB)


async def chunks_of(data: bytes, size: int = 100_000) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="session")
def moto_s3() -> MotoS3:
    return moto_s3_server()


@pytest.fixture
def buckets(moto_s3: MotoS3) -> dict[str, str]:
    return {"eu": moto_s3.new_bucket_name(), "us": moto_s3.new_bucket_name()}


@pytest.fixture
async def s3_store(moto_s3: MotoS3,
                   buckets: dict[str, str]) -> AsyncIterator[S3ObjectStore]:
    async with moto_s3.object_store(buckets) as store:
        await store.ensure_buckets()
        yield store


class TestS3Objects(ObjectStoreContract):
    """The shared contract, in each of two regions (two buckets behind one server)."""

    @pytest.fixture(params=["eu", "us"])
    def region(self, request: pytest.FixtureRequest) -> str:
        return str(request.param)

    @pytest.fixture
    def object_store(self, s3_store: S3ObjectStore) -> S3ObjectStore:
        return s3_store


def kept_in(s3: Any, bucket: str) -> tuple[list[str], list[str]]:
    """The bucket's object keys and pending multipart uploads (whose parts S3 keeps, and
    bills, until they are completed or aborted)."""
    objects = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    return [item["Key"] for item in objects], [item["Key"] for item in uploads]


async def test_a_body_larger_than_one_part_round_trips_as_a_multipart_object(
        s3_store: S3ObjectStore, moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    evidence = await s3_store.put("eu", KEY, chunks_of(MULTIPART_BODY), len(MULTIPART_BODY),
                                  sha(MULTIPART_BODY))

    assert (evidence.size, evidence.sha256) == (len(MULTIPART_BODY), sha(MULTIPART_BODY))
    assert await s3_store.stat("eu", KEY) == evidence
    downloaded = [chunk async for chunk in s3_store.open("eu", KEY)]
    assert b"".join(downloaded) == MULTIPART_BODY
    assert len(downloaded) > 1
    head = moto_s3.client().head_object(Bucket=buckets["eu"], Key=KEY, ChecksumMode="ENABLED")
    assert head["ETag"].endswith('-2"')
    assert head["Metadata"] == {"sha256": sha(MULTIPART_BODY)}
    assert head["ChecksumSHA256"]


async def test_a_small_body_is_one_put_with_its_sha256_stored_as_the_s3_checksum(
        s3_store: S3ObjectStore, moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    data = b"a small result file"

    await s3_store.put("eu", KEY, chunks_of(data, 4), len(data), sha(data))

    head = moto_s3.client().head_object(Bucket=buckets["eu"], Key=KEY, ChecksumMode="ENABLED")
    assert "-" not in head["ETag"]
    assert head["ChecksumSHA256"] == base64.b64encode(hashlib.sha256(data).digest()).decode()
    assert head["Metadata"] == {"sha256": sha(data)}


async def test_a_digest_mismatch_on_a_multipart_body_keeps_no_object_and_no_upload(
        s3_store: S3ObjectStore, moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    with pytest.raises(DigestMismatch):
        await s3_store.put("eu", KEY, chunks_of(MULTIPART_BODY), len(MULTIPART_BODY),
                           sha(b"something else"))

    assert await s3_store.stat("eu", KEY) is None
    assert kept_in(moto_s3.client(), buckets["eu"]) == ([], [])


async def test_a_multipart_body_longer_than_declared_keeps_nothing(
        s3_store: S3ObjectStore, moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    declared = len(MULTIPART_BODY) - 1

    with pytest.raises(SizeMismatch):
        await s3_store.put("eu", KEY, chunks_of(MULTIPART_BODY), declared,
                           sha(MULTIPART_BODY[:declared]))

    assert kept_in(moto_s3.client(), buckets["eu"]) == ([], [])


async def test_a_small_body_with_a_wrong_size_keeps_nothing(
        s3_store: S3ObjectStore, moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    data = b"short"

    with pytest.raises(SizeMismatch):
        await s3_store.put("eu", KEY, chunks_of(data), len(data) + 1, sha(data))

    assert kept_in(moto_s3.client(), buckets["eu"]) == ([], [])


async def test_a_body_that_fails_after_the_first_part_keeps_nothing(
        s3_store: S3ObjectStore, moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    async def broken_body() -> AsyncIterator[bytes]:
        async for chunk in chunks_of(MULTIPART_BODY[:8 * MiB + 500_000]):
            yield chunk
        raise ConnectionResetError("client went away")

    with pytest.raises(ConnectionResetError):
        await s3_store.put("eu", KEY, broken_body(), len(MULTIPART_BODY), sha(MULTIPART_BODY))

    assert kept_in(moto_s3.client(), buckets["eu"]) == ([], [])


async def test_a_cancelled_multipart_upload_is_aborted(
        s3_store: S3ObjectStore, moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    first_part_sent = asyncio.Event()

    async def stalled_body() -> AsyncIterator[bytes]:
        async for chunk in chunks_of(MULTIPART_BODY[:8 * MiB + 100_000]):
            yield chunk
        # The store asks for more only after it uploaded the first full part.
        first_part_sent.set()
        await asyncio.Event().wait()
        yield b""

    upload = asyncio.create_task(
        s3_store.put("eu", KEY, stalled_body(), len(MULTIPART_BODY), sha(MULTIPART_BODY)))
    await first_part_sent.wait()
    s3 = moto_s3.client()
    assert kept_in(s3, buckets["eu"]) == ([], [KEY])
    upload.cancel()

    with pytest.raises(asyncio.CancelledError):
        await upload
    assert kept_in(s3, buckets["eu"]) == ([], [])


async def test_each_region_writes_to_its_own_bucket(
        s3_store: S3ObjectStore, moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    data = b"placed in eu"

    await s3_store.put("eu", KEY, chunks_of(data), len(data), sha(data))

    s3 = moto_s3.client()
    assert kept_in(s3, buckets["eu"]) == ([KEY], [])
    assert kept_in(s3, buckets["us"]) == ([], [])
    assert await s3_store.stat("us", KEY) is None


async def test_keys_are_stored_exactly_as_given(
        s3_store: S3ObjectStore, moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    # Ids may contain dots; S3 must not normalise `..` away and merge two keys.
    key = "tenant-a/../stream-1/object"
    data = b"dotted"

    await s3_store.put("eu", key, chunks_of(data), len(data), sha(data))

    listed = moto_s3.client().list_objects_v2(Bucket=buckets["eu"])["Contents"]
    assert [item["Key"] for item in listed] == [key]
    assert await s3_store.stat("eu", "stream-1/object") is None


async def test_stat_measures_a_body_that_has_no_recorded_digest(
        s3_store: S3ObjectStore, moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    data = b"written by another tool"
    moto_s3.client().put_object(Bucket=buckets["eu"], Key=KEY, Body=data)

    evidence = await s3_store.stat("eu", KEY)

    assert evidence is not None
    assert (evidence.size, evidence.sha256) == (len(data), sha(data))


async def test_opening_an_absent_body_is_file_not_found(s3_store: S3ObjectStore) -> None:
    with pytest.raises(FileNotFoundError):
        await anext(aiter(s3_store.open("eu", KEY)))


async def test_an_unknown_region_is_refused(s3_store: S3ObjectStore) -> None:
    data = b"nowhere"

    with pytest.raises(LookupError, match="ap-south"):
        await s3_store.put("ap-south", KEY, chunks_of(data), len(data), sha(data))
    with pytest.raises(LookupError):
        await s3_store.stat("ap-south", KEY)


async def test_a_store_that_was_not_started_says_so(
        moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    store = moto_s3.object_store({"eu": buckets["eu"]})

    with pytest.raises(RuntimeError, match="not started"):
        await store.stat("eu", KEY)


async def test_a_closed_store_can_be_started_again(
        moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    store = moto_s3.object_store({"eu": buckets["eu"]})
    await store.start()
    await store.ensure_buckets()
    await store.close()
    with pytest.raises(RuntimeError):
        await store.stat("eu", KEY)

    await store.start()
    try:
        assert await store.stat("eu", KEY) is None
    finally:
        await store.close()


def test_two_regions_cannot_share_a_bucket(moto_s3: MotoS3) -> None:
    shared = moto_s3.region_config("one-bucket")

    with pytest.raises(ValueError, match="own bucket"):
        S3ObjectStore({"eu": shared, "us": shared})


def test_parts_below_the_s3_minimum_are_refused(moto_s3: MotoS3) -> None:
    with pytest.raises(ValueError, match="at least"):
        S3ObjectStore({"eu": moto_s3.region_config("b")}, part_size=MiB)


async def test_ensure_buckets_creates_missing_buckets_once(
        moto_s3: MotoS3, buckets: dict[str, str]) -> None:
    existing = moto_s3.new_bucket()
    async with moto_s3.object_store({"eu": buckets["eu"], "us": existing}) as store:
        await store.ensure_buckets()
        await store.ensure_buckets()

    names = {bucket["Name"] for bucket in moto_s3.client().list_buckets()["Buckets"]}
    assert {buckets["eu"], existing} <= names


def test_the_secret_key_never_appears_in_a_config_repr() -> None:
    config = S3RegionConfig(bucket="b", access_key="AKIA", secret_key="very-secret")

    assert "very-secret" not in repr(config)


@pytest.mark.parametrize("fault", ["reset", "error", "lost_answer"])
async def test_an_s3_that_fails_past_the_retries_is_unavailable_never_an_error(
        moto_s3: MotoS3, fault: str) -> None:
    bucket = moto_s3.new_bucket()
    proxy = S3FaultProxy(moto_s3.endpoint_url)
    config = dataclasses.replace(moto_s3.region_config(bucket), endpoint_url=proxy.start())
    data = b"a body"
    try:  # one attempt: botocore's retries would only delay it
        async with S3ObjectStore({"eu": config}, bounds=S3Bounds(max_attempts=1)) as store:
            await store.put("eu", KEY, chunks_of(data), len(data), sha(data))
            proxy.set(FaultRates(**{fault: 1.0}))
            await asyncio.sleep(0.1)  # the proxy's loop takes the rates
            with pytest.raises(ObjectStoreUnavailable):
                await store.put("eu", KEY, chunks_of(data), len(data), sha(data))
            with pytest.raises(ObjectStoreUnavailable):
                await store.stat("eu", KEY)
            with pytest.raises(ObjectStoreUnavailable):
                await anext(aiter(store.open("eu", KEY)))
            with pytest.raises(ObjectStoreUnavailable):
                await store.delete("eu", KEY)
            with pytest.raises(ObjectStoreUnavailable):
                await anext(aiter(store.list_objects("eu")))
            proxy.calm()
            await asyncio.sleep(0.1)
            evidence = await store.stat("eu", KEY)
            # A lost answer is a delete that did happen: unavailable means "may have".
            assert (evidence is None) == (fault == "lost_answer")
    finally:
        proxy.close()


async def test_a_refusal_of_s3_stays_a_refusal(moto_s3: MotoS3) -> None:
    store = moto_s3.object_store({"eu": moto_s3.new_bucket_name()})  # never created
    data = b"a body"
    async with store:
        with pytest.raises(ClientError) as refused:
            await store.put("eu", KEY, chunks_of(data), len(data), sha(data))
    assert not isinstance(refused.value, ObjectStoreUnavailable)
    assert refused.value.response["Error"]["Code"] == "NoSuchBucket"


async def test_a_hung_s3_is_unavailable_within_the_bounds(moto_s3: MotoS3) -> None:
    """Connections open and silent, new ones accepted and never answered: every call hears
    `ObjectStoreUnavailable` once its bounds are spent (botocore alone would wait a minute
    per socket read, five times over), and nothing is lost once S3 answers again."""
    bucket = moto_s3.new_bucket()
    proxy = BlackholeProxy(moto_s3.endpoint_url)
    config = dataclasses.replace(moto_s3.region_config(bucket), endpoint_url=await proxy.start())
    bounds = S3Bounds(connect_timeout_seconds=1.0, read_timeout_seconds=1.0, max_attempts=2)
    data = b"a body"
    try:
        async with S3ObjectStore({"eu": config}, bounds=bounds) as store:
            await store.put("eu", KEY, chunks_of(data), len(data), sha(data))
            proxy.hang()
            calls = [store.put("eu", "other-key", chunks_of(data), len(data), sha(data)),
                     store.stat("eu", KEY), anext(aiter(store.open("eu", KEY))),
                     store.delete("eu", KEY), anext(aiter(store.list_objects("eu")))]
            for call in calls:  # the deadline only stands in for "never"
                with pytest.raises(ObjectStoreUnavailable):
                    await asyncio.wait_for(call, DEADLINE)
            proxy.admit()
            evidence = await asyncio.wait_for(store.stat("eu", KEY), DEADLINE)
            assert evidence is not None and evidence.size == len(data)
    finally:
        await proxy.close()
