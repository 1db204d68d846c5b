"""The producer's pure rules: keys, record sizes, batch limits, and retry waits."""

from __future__ import annotations

import base64

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from runnel_client import BackpressureError, RetryPolicy, RunnelError
from runnel_client.batching import Batch, BatchLimits, KeyCounter, check_inline, inline_size


def test_keys_count_up_from_start_and_a_prefix_is_bounded() -> None:
    keys = KeyCounter("job-7/answer", start=41)
    assert [keys.take(), keys.take()] == ["job-7/answer:41", "job-7/answer:42"]
    for prefix in ("", "x" * 180):
        with pytest.raises(ValueError, match="key_prefix"):
            KeyCounter(prefix)
    with pytest.raises(ValueError):
        KeyCounter("p", start=-1)


@given(st.binary(max_size=300))
def test_binary_records_are_sized_as_decoded_bytes(data: bytes) -> None:
    assert inline_size({"data": base64.b64encode(data).decode()}) == len(data)


def test_a_record_above_64_kib_is_refused_and_one_at_the_limit_is_not() -> None:
    check_inline({"payload": "x" * (64 * 1024 - 2)})  # two quotes make it 64 KiB exactly
    with pytest.raises(RunnelError) as refused:
        check_inline({"payload": "x" * (64 * 1024 - 1)})
    assert (refused.value.status, refused.value.code) == (413, "too_large")
    with pytest.raises(RunnelError):
        check_inline({"data": base64.b64encode(b"\0" * (64 * 1024 + 1)).decode()})


def test_a_batch_takes_one_record_whatever_its_size_and_no_more_once_sealed() -> None:
    batch = Batch(BatchLimits(max_records=2, max_bytes=10))
    assert batch.fits({"payload": "larger than ten bytes"})  # an empty batch takes any record
    batch.add({"payload": "larger than ten bytes"})
    assert not batch.fits({"payload": 1})
    roomy = Batch(BatchLimits(max_records=2, max_bytes=10_000))
    roomy.add({"payload": 1})
    roomy.sealed = True
    assert not roomy.fits({"payload": 2})


@given(st.integers(min_value=1, max_value=60))
def test_retry_waits_grow_jittered_and_honour_retry_after(attempt: int) -> None:
    policy = RetryPolicy(base_seconds=0.2, max_seconds=10.0)
    ceiling = min(10.0, 0.2 * 2 ** (attempt - 1))
    transport = httpx.ConnectError("down")
    assert policy.delay(attempt, transport, lambda low, high: low) == ceiling / 2
    assert ceiling / 2 <= policy.delay(attempt, transport) <= ceiling
    busy = BackpressureError(429, "backpressure", {}, retry_after=30.0)
    assert policy.delay(attempt, busy) == 30.0


@pytest.mark.parametrize(("error", "retried"), [
    (RunnelError(429, "too_many_requests", {}), True),
    (RunnelError(503, "store_unavailable", {}), True),
    (RunnelError(500, "internal_error", {}), True),
    (httpx.ReadTimeout("slow"), True),
    (RunnelError(409, "stream_closed", {}), False),
    (RunnelError(422, "invalid_record", {}), False),
    (RunnelError(413, "too_large", {}), False),
    (ValueError("a bug"), False),
])
def test_only_what_a_retry_can_change_is_retried(error: Exception, retried: bool) -> None:
    assert RetryPolicy().retryable(error) is retried
