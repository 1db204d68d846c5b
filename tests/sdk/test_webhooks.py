"""The SDK's webhook verifier: what it accepts, and every way it refuses (ADR 0022)."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from runnel_client import InputWebhook, WebhookVerificationError, verify_webhook
from runnel_client.webhooks import sign, webhook_headers, webhook_key

SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()
NOW = 1_790_000_000
EVENT_ID = "2f0f5a9e-0000-5000-8000-000000000001"
BODY = json.dumps({"event_id": EVENT_ID, "tenant": "acme", "run_id": "r1",
                   "stream_id": "in", "sequence": 3,
                   "record": {"sequence": 3, "payload": {"approve": True}}},
                  separators=(",", ":")).encode()


def signed(secret: str = SECRET, timestamp: int = NOW, body: bytes = BODY) -> dict[str, str]:
    return webhook_headers(secret, EVENT_ID, timestamp, body)


def refusal(headers: dict[str, str], body: bytes = BODY, secret: str = SECRET,
            now: float = NOW) -> str:
    with pytest.raises(WebhookVerificationError) as refused:
        verify_webhook(secret, headers, body, now=now)
    return refused.value.reason


def test_a_signed_webhook_gives_its_event_with_the_tenant() -> None:
    assert verify_webhook(SECRET, signed(), BODY, now=NOW) == InputWebhook(
        EVENT_ID, "acme", "r1", "in", 3, {"sequence": 3, "payload": {"approve": True}})


def test_the_signature_is_the_standard_webhooks_one() -> None:
    """The test vector of the Standard Webhooks reference libraries."""
    assert sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330, b'{"test": 2432232314}') == \
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_a_plain_secret_is_its_utf8_bytes_and_a_whsec_secret_is_base64() -> None:
    assert webhook_key("x" * 32) == b"x" * 32
    assert webhook_key(SECRET) == bytes(range(32))
    with pytest.raises(ValueError, match="base64"):
        webhook_key("whsec_not base64!")


def test_header_names_are_matched_in_any_case() -> None:
    upper = {name.upper(): value for name, value in signed().items()}
    assert verify_webhook(SECRET, upper, BODY, now=NOW).tenant == "acme"


def test_a_wrong_secret_is_refused() -> None:
    assert refusal(signed(secret="another secret of at least 32 bytes")) == "bad_signature"


def test_a_modified_body_is_refused() -> None:
    tampered = BODY.replace(b'"acme"', b'"evil"')
    assert refusal(signed(), body=tampered) == "bad_signature"


def test_a_restamped_request_is_refused() -> None:
    """Moving the timestamp into the window without the secret breaks the signature."""
    headers = signed(timestamp=NOW - 3600) | {"webhook-timestamp": str(NOW)}
    assert refusal(headers) == "bad_signature"


@pytest.mark.parametrize("skew", [-301, 301, -86_400, 10**9])
def test_a_timestamp_outside_five_minutes_is_refused(skew: int) -> None:
    assert refusal(signed(timestamp=NOW + skew)) == "timestamp_outside_window"


@pytest.mark.parametrize("skew", [-300, 0, 300])
def test_a_timestamp_inside_five_minutes_is_accepted(skew: int) -> None:
    assert verify_webhook(SECRET, signed(timestamp=NOW + skew), BODY, now=NOW).sequence == 3


def test_the_window_is_configurable() -> None:
    headers = signed(timestamp=NOW - 60)
    with pytest.raises(WebhookVerificationError, match="timestamp_outside_window"):
        verify_webhook(SECRET, headers, BODY, now=NOW, tolerance_seconds=30)


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_a_missing_header_is_refused(missing: str) -> None:
    headers = signed()
    del headers[missing]
    assert refusal(headers) == "missing_header"


@pytest.mark.parametrize("stamp", ["-1", "1.5", "soon", " 1790000000", "1" * 13])
def test_a_malformed_timestamp_is_refused(stamp: str) -> None:
    assert refusal(signed() | {"webhook-timestamp": stamp}) == "bad_timestamp"


def test_rotation_accepts_either_secret_and_any_listed_signature() -> None:
    old, new = "old secret old secret old secret", SECRET
    assert verify_webhook([old, new], signed(secret=new), BODY, now=NOW).tenant == "acme"
    both = signed(secret=old)["webhook-signature"] + " " + signed(secret=new)["webhook-signature"]
    assert verify_webhook(new, signed() | {"webhook-signature": both}, BODY, now=NOW)


def test_an_unversioned_or_other_version_signature_is_refused() -> None:
    value = signed()["webhook-signature"]
    assert refusal(signed() | {"webhook-signature": value.removeprefix("v1,")}) == \
        "bad_signature"
    assert refusal(signed() | {"webhook-signature": "v2," + value[3:]}) == "bad_signature"


def test_a_signed_body_for_another_event_id_is_refused() -> None:
    headers = webhook_headers(SECRET, "another-id", NOW, BODY)
    assert refusal(headers) == "bad_body"


@given(st.data())
def test_any_single_byte_change_of_body_or_signature_is_refused(data: st.DataObject) -> None:
    headers = signed()
    target = data.draw(st.sampled_from(["body", "signature"]))
    original = BODY if target == "body" else headers["webhook-signature"].encode()
    position = data.draw(st.integers(0, len(original) - 1))
    byte = data.draw(st.integers(0, 255).filter(lambda value: value != original[position]))
    changed = original[:position] + bytes([byte]) + original[position + 1:]
    if target == "body":
        assert refusal(headers, body=changed) == "bad_signature"
    else:
        text = changed.decode("latin-1")
        assert refusal(headers | {"webhook-signature": text}) == "bad_signature"
