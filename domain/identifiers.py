"""Identifiers: the id alphabet, the stream key, and deterministic aggregate ids."""

from __future__ import annotations

import re
from dataclasses import dataclass
from uuid import UUID, uuid5

from domain.errors import InvalidIdentifier

ID_ALPHABET = "A-Za-z0-9._:-"
"""The characters of an id, as a regular-expression class body."""
ID_MAX_LENGTH = 128
RESERVED_IDS = (".", "..")
"""Ids become path segments of object keys, where these two would mean something else."""
ID_REGEX = f"^[{ID_ALPHABET}]{{1,{ID_MAX_LENGTH}}}$"
_ID_PATTERN = re.compile(ID_REGEX)
_NAMESPACE = UUID("6f1c3a52-2d0e-4c55-9a7b-52c1f0f0e6a1")
OBJECT_ID_REGEX = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
"""How the server spells the object ids it derives (`object_intent_id`); any other id names
no object."""


def id_json_schema() -> dict[str, object]:
    """The JSON Schema of an id: what `validate_id` accepts, for the published API document."""
    return {"type": "string", "minLength": 1, "maxLength": ID_MAX_LENGTH, "pattern": ID_REGEX,
            "not": {"enum": list(RESERVED_IDS)}}


def validate_id(value: str, what: str) -> str:
    """An id is 1–128 chars of `[A-Za-z0-9._:-]`, and not `.` or `..` (`RESERVED_IDS`)."""
    if (not isinstance(value, str) or _ID_PATTERN.fullmatch(value) is None
            or value in RESERVED_IDS):
        raise InvalidIdentifier(f"{what} must be 1-128 characters of [A-Za-z0-9._:-]", field=what)
    return value


@dataclass(frozen=True, order=True)
class RunKey:
    """A run inside a tenant; runs of different tenants never meet."""

    tenant: str
    run_id: str

    def stream(self, stream_id: str) -> StreamKey:
        return StreamKey(self.tenant, self.run_id, validate_id(stream_id, "stream_id"))


@dataclass(frozen=True, order=True)
class StreamKey:
    """A stream's natural key. The aggregate id is derived from it, so it is stable everywhere."""

    tenant: str
    run_id: str
    stream_id: str

    @property
    def run(self) -> RunKey:
        return RunKey(self.tenant, self.run_id)

    @property
    def aggregate_id(self) -> UUID:
        return uuid5(_NAMESPACE, f"stream/{self.tenant}/{self.run_id}/{self.stream_id}")

    @property
    def channel_key(self) -> str:
        """The stream's name on the wake bus (tenant-qualified, unambiguous)."""
        return f"{self.tenant}/{self.run_id}/{self.stream_id}"

    @classmethod
    def from_channel_key(cls, value: str) -> StreamKey:
        tenant, run_id, stream_id = value.split("/", 2)
        return cls(tenant, run_id, stream_id)


def object_intent_id(stream: StreamKey, idempotency_key: str) -> UUID:
    """The same idempotency key on the same stream always names the same intent."""
    return uuid5(_NAMESPACE, f"object/{stream.channel_key}/{idempotency_key}")


def input_event_id(stream: StreamKey, sequence: int) -> str:
    """The workflow event for an input record has one id forever, whoever delivers it."""
    return str(uuid5(_NAMESPACE, f"input/{stream.channel_key}/{sequence}"))
