"""Coverage-guided fuzz targets for the input parsers (atheris, ADR 0026).

Each target takes the fuzzer's bytes, builds the parser's input from them, and asserts
the parser's one promise: it returns a valid value, or it raises the domain's own error
(`DomainError`, which the problem table answers as a 4xx with a stable code); never
anything else. Run one with `python -m tests.fuzz.run TARGET [libFuzzer flags]`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any

import atheris

# Libraries first, uninstrumented: instrumenting them makes start-up take minutes and
# steers the fuzzer into code that is not ours.
import eventsourcing.domain  # noqa: F401
import litestar  # noqa: F401
import msgspec
import pydantic  # noqa: F401

with atheris.instrument_imports(include=["domain", "application", "entrypoints"]):
    from domain.cursor import MAX_SEQUENCE, parse_cursor
    from domain.definition import StreamDefinition, build_definition
    from domain.errors import DomainError, InvalidCursor, InvalidLimit, InvalidRecord
    from domain.records import BASE64_REGEX, INLINE_MAX_BYTES, Draft, draft_from_wire
    from domain.redaction import MASK
    from domain.text import is_storable
    from entrypoints.http.handlers.bodies import AckBody, AppendBody, LiveBody, PrepareObjectBody
    from entrypoints.http.inputs import check_record_depth, page_limit, subscribe_cursor
    from entrypoints.http.problems import classify

Target = Callable[[bytes], None]
MAX_TEXT = 64
_BASE64 = re.compile(BASE64_REGEX)


def json_value(data: atheris.FuzzedDataProvider, depth: int = 0) -> Any:
    """A JSON value built from the fuzzer's bytes (so mutations stay structured)."""
    kind = data.ConsumeIntInRange(0, 7 if depth < 6 else 4)
    if kind == 0:
        return None
    if kind == 1:
        return data.ConsumeBool()
    if kind == 2:
        return data.ConsumeInt(9)
    if kind == 3:
        return data.ConsumeRegularFloat()
    if kind == 4:
        return data.ConsumeUnicode(MAX_TEXT)
    if kind == 5:
        return [json_value(data, depth + 1) for _ in range(data.ConsumeIntInRange(0, 4))]
    return {data.ConsumeUnicode(12): json_value(data, depth + 1)
            for _ in range(data.ConsumeIntInRange(0, 4))}


def _text(data: atheris.FuzzedDataProvider) -> str:
    return data.ConsumeUnicode(MAX_TEXT)


def cursor(raw: bytes) -> None:
    """`?after=` and `?limit=` (`domain.cursor.parse_cursor`, `inputs.page_limit`)."""
    data = atheris.FuzzedDataProvider(raw)
    text = _text(data)
    try:
        value = parse_cursor(text, "after")
    except InvalidCursor:
        pass
    else:
        assert value is not None and 0 <= value <= MAX_SEQUENCE
        assert value == int(text.strip())
    try:
        limit = page_limit(_text(data))
    except InvalidLimit:
        pass
    else:
        assert limit >= 0


def last_event_id(raw: bytes) -> None:
    """`Last-Event-ID` beside `?after=` (`inputs.subscribe_cursor`): the query wins, and a
    header that is not a cursor is refused, never a 500."""
    data = atheris.FuzzedDataProvider(raw)
    after = _text(data) if data.ConsumeBool() else None
    header = data.ConsumeBytes(MAX_TEXT).decode("latin-1") if data.ConsumeBool() else None
    try:
        value = subscribe_cursor(after, header)
    except InvalidCursor:
        return
    assert 0 <= value <= MAX_SEQUENCE
    if after is not None:
        assert value == int(after.strip())
    elif header is not None:
        assert value == int(header.strip())
    else:
        assert value == 0


BODIES: list[type[msgspec.Struct]] = [AppendBody, AckBody, LiveBody, PrepareObjectBody]


def request_body(raw: bytes) -> None:
    """Request bodies as the server decodes them (msgspec, then the domain's field rules):
    the bytes either decode to the body's type or fail with an error the problem table
    answers as a 4xx."""
    if not raw:
        return
    body_type = BODIES[raw[0] % len(BODIES)]
    payload = raw[1:] if raw[0] & 0x80 else json.dumps(
        json_value(atheris.FuzzedDataProvider(raw[1:]))).encode()
    try:
        body = msgspec.json.decode(payload, type=body_type)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return
    except RecursionError as error:
        assert classify(error)[0] == 400
        return
    if isinstance(body, AppendBody):
        try:
            check_record_depth(body.records)
        except DomainError as error:
            assert 400 <= classify(error)[0] < 500


def definition(raw: bytes) -> None:
    """`POST …/streams` (`domain.definition.build_definition`)."""
    data = atheris.FuzzedDataProvider(raw)
    value = json_value(data) if data.ConsumeBool() else _definition_like(data)
    try:
        built = build_definition(value, "local")
    except DomainError as error:
        assert 400 <= classify(error)[0] < 500
        return
    assert isinstance(built, StreamDefinition)
    wire = built.to_wire()
    assert StreamDefinition.model_validate(built.model_dump()) == built
    assert json.dumps(wire)


def _definition_like(data: atheris.FuzzedDataProvider) -> dict[str, Any]:
    """A definition with plausible keys, so the fuzzer reaches the pins' own rules."""
    keys = ["stream_id", "content_class", "direction", "mode", "credit", "retention",
            "redaction", "placement", "authorization", "consumers"]
    value: dict[str, Any] = {"stream_id": "s", "content_class": "c"}
    for _ in range(data.ConsumeIntInRange(0, 4)):
        value[keys[data.ConsumeIntInRange(0, len(keys) - 1)]] = json_value(data, 3)
    return value


def record_payload(raw: bytes) -> None:
    """One record of an append (`domain.records.draft_from_wire`) and the depth rule: a
    valid draft is sized within the inline ceiling and its text is storable."""
    data = atheris.FuzzedDataProvider(raw)
    item: Any = json_value(data) if data.ConsumeBool() else _record_like(data)
    mask = tuple(_text(data) for _ in range(data.ConsumeIntInRange(0, 2)))
    try:
        check_record_depth([item])
        draft = draft_from_wire(item, mask)
    except DomainError as error:
        assert 400 <= classify(error)[0] < 500
        return
    except ValueError:
        # An invalid mask pointer: never a client input (masks are validated at creation).
        if mask:
            return
        raise
    assert isinstance(draft, Draft) and 0 <= draft.size <= INLINE_MAX_BYTES
    if draft.idempotency_key is not None:
        assert is_storable(draft.idempotency_key)
    if isinstance(item, dict) and isinstance(item.get("data"), str):
        assert _BASE64.fullmatch(item["data"]) is not None, "published base64 rule too narrow"


def _record_like(data: atheris.FuzzedDataProvider) -> dict[str, Any]:
    item: dict[str, Any] = {}
    if data.ConsumeBool():
        item["payload"] = json_value(data)
    if data.ConsumeBool():
        item["data"] = (base64.b64encode(data.ConsumeBytes(48)).decode() if data.ConsumeBool()
                        else _text(data))
    for key in ("content_type", "idempotency_key"):
        if data.ConsumeBool():
            item[key] = _text(data) if data.ConsumeBool() else json_value(data, 5)
    return item


def base64_rule(raw: bytes) -> None:
    """`data` is accepted exactly when it matches the published pattern, and whatever
    matches decodes (the pattern is never looser than the decoder)."""
    data = atheris.FuzzedDataProvider(raw)
    text = (base64.b64encode(data.ConsumeBytes(48)).decode() + data.ConsumeUnicode(4)
            if data.ConsumeBool() else data.ConsumeUnicode(MAX_TEXT))
    published = _BASE64.fullmatch(text) is not None
    try:
        draft_from_wire({"data": text}, ())
        accepted = True
    except InvalidRecord:
        accepted = False
    assert accepted == published, repr(text)
    if published:
        try:
            base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as error:
            raise AssertionError(f"published base64 rule too wide: {text!r}") from error


def masked_data(raw: bytes) -> None:
    """`data` of a JSON media type on a masked stream (`domain.masking`): refused with a
    domain error, or kept as JSON in which nothing is left under a pinned pointer."""
    data = atheris.FuzzedDataProvider(raw)
    content_type = data.PickValueInList(["application/json", "application/x+json",
                                         "APPLICATION/JSON; charset=utf-8", "text/plain"])
    body = (json.dumps({"user": json_value(data), "rest": json_value(data)}).encode()
            if data.ConsumeBool() else data.ConsumeBytes(512))
    try:
        draft = draft_from_wire({"data": base64.b64encode(body).decode(),
                                 "content_type": content_type}, ("/user/email", "/0"),
                                data.ConsumeBool())
    except DomainError as error:
        assert 400 <= classify(error)[0] < 500
        return
    if content_type == "text/plain":
        assert draft.data == body  # kept as sent: the stream allowed unmasked bodies
        return
    kept = json.loads(draft.data or b"")
    if isinstance(kept, dict) and isinstance(kept.get("user"), dict) and "email" in kept["user"]:
        assert kept["user"]["email"] == MASK, repr(body)
    if isinstance(kept, list) and kept:
        assert kept[0] == MASK, repr(body)


def every(raw: bytes) -> None:
    """All targets in one process (the first byte picks one): the short run in CI."""
    if raw:
        PARSERS[raw[0] % len(PARSERS)](raw[1:])


PARSERS: list[Target] = []
TARGETS: dict[str, Target] = {
    "cursor": cursor,
    "last_event_id": last_event_id,
    "request_body": request_body,
    "definition": definition,
    "record_payload": record_payload,
    "base64_rule": base64_rule,
    "masked_data": masked_data,
}
PARSERS.extend(TARGETS.values())
TARGETS["all"] = every
