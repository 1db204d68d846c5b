"""One adversarial model of the whole HTTP API, as the SPEC wants it (not as the code is).

A Hypothesis state machine drives two nodes (`eu`, `us`) over one in-memory backend
(`model_cluster.Cluster`) with two tenants, principals of different scopes and run
bindings, streams with random pins (readers/writers, a `/user/email` mask with or
without `allow_unmasked_bodies`, placement, credit, declared consumers in both forms),
and random creates, appends (payloads, JSON `data` under hostile media types, text
`data`), reads, acks, closes, holds, erasures, live chunks (observed by a real
`?live=true` subscription, some shaped as byte bodies), object steps, input dispatch
through a wait service that fails at random, and re-drives of dead letters. A plain
model predicts every status; invariants are checked on every response (no 5xx, no
foreign tenant's marker, no masked secret, not even inside base64 `data`) and after every step on
the streams the step touched (declared consumers only, acks only advance, erased streams
gain nothing, sequences dense, state as modelled, each input stream published in
sequence order but for what was re-driven, every input record published, pending or
dead-lettered).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from domain.identifiers import StreamKey
from tests.http.model_cluster import REGIONS, Cluster, Who, sse_events

TENANTS = ("acme", "globex")
SECRET = "secret-leak@masked.example"
"""Sent only under `/user/email` of masked streams: it must never leave the server."""
MARK = {tenant: f"~marker-of-{tenant}~" for tenant in TENANTS}
R, W, ADMIN = "streams:read", "streams:write", "streams:admin"
PRINCIPALS: dict[str, tuple[tuple[str, ...], list[str] | None]] = {
    "alice": ((R, W), None), "bob": ((R,), None), "carol": ((W,), None),
    "dave": ((R, W), ["r1"]), "ops": ((ADMIN,), None), "audit": ((R,), None)}
"""`audit` is in every readers pin: the invariants read through it."""
NODES = Cluster(PRINCIPALS)
KEYS = [(t, r, s) for t in TENANTS for r in ("r1", "r2") for s in ("s1", "s2")]
Key = tuple[str, str, str]

PINS = st.fixed_dictionaries({
    "readers": st.sampled_from([["*"], ["alice", "audit"], ["bob", "audit"]]),
    "writers": st.sampled_from([["*"], ["alice"], ["alice", "carol"]]),
    "redaction": st.sampled_from([{"mask": []}, {"mask": ["/user/email"]},
                                  {"mask": ["/user/email"], "allow_unmasked_bodies": True}]),
    "home": st.sampled_from(REGIONS), "wide_egress": st.booleans(),
    "max_unread": st.sampled_from([2, 3, 1000]), "max_total": st.sampled_from([5, 100_000]),
    "policy": st.sampled_from(["reject", "block"]),
    "consumers": st.sampled_from([[], ["ui"], ["ui", "ux"],
                                  [{"id": "ui", "principals": ["alice"]}, "ux"]]),
    "direction": st.sampled_from(["input", "output"]),
})
PICK = st.integers(0, 11)
AWAY = st.sampled_from([False, False, False, True])
"""Mostly at the stream's home; sometimes at the other node."""
BODIES = (b"alpha", b"beta-bytes")
SHAPES = st.sampled_from(["payload", "payload", "json-data", "text-data"])
"""How a body travels: a JSON payload, base64 `data` that says it is JSON, or base64
`data` of the same JSON text typed `text/plain` (which no mask can reach)."""
JSON_TYPES = st.sampled_from(["application/json; charset=utf-8", "application/vnd.run+json",
                              "APPLICATION/JSON", "Application/Problem+JSON ; q=1"])
BASE64_DATA = re.compile(r'"data":\s*"([A-Za-z0-9+/=]*)"')


def definition(stream_id: str, p: dict[str, Any]) -> dict[str, Any]:
    egress = list(REGIONS) if p["wide_egress"] else [p["home"]]
    return {"stream_id": stream_id, "content_class": "output.text",
            "credit": {"max_unread_items": p["max_unread"], "max_total_items": p["max_total"],
                       "on_unread_full": p["policy"], "block_timeout_seconds": 0},
            "redaction": p["redaction"],
            "placement": {"metadata_home": p["home"], "object_regions": [p["home"]],
                          "client_egress_regions": egress, "log_region": p["home"]},
            "authorization": {"readers": p["readers"], "writers": p["writers"]},
            "consumers": p["consumers"], "direction": p["direction"]}


@dataclass
class Obj:
    object_id: str
    body: bytes
    owner: str
    """The receipt's principal: only it, or an admin, takes the later steps (ADR 0025)."""
    state: str = "prepared"
    sequence: int | None = None


@dataclass
class Model:
    """What the SPEC says one stream holds."""

    pins: dict[str, Any]
    records: dict[int, Any] = field(default_factory=dict)
    receipts: dict[str, int] = field(default_factory=dict)
    acks: dict[str, int] = field(default_factory=dict)
    objects: dict[str, Obj] = field(default_factory=dict)
    head: int = 0
    earliest: int = 1
    floor: int = 0
    closed: bool = False
    held: bool = False
    erased: bool = False
    redriven: set[int] = field(default_factory=set)
    """Input records an operator re-drove: delivered later than the line behind them."""

    def __post_init__(self) -> None:
        self.acks = {self.consumer_id(c): 0 for c in self.pins["consumers"]}

    @staticmethod
    def consumer_id(declared: Any) -> str:
        return declared if isinstance(declared, str) else str(declared["id"])

    @property
    def masked(self) -> bool:
        return bool(self.pins["redaction"]["mask"])

    @property
    def refuses_unmasked(self) -> bool:
        """Bytes no mask can reach and object bodies are refused (422)."""
        return self.masked and not self.pins["redaction"].get("allow_unmasked_bodies")

    def may(self, sub: str, pin: str) -> bool:
        return "*" in self.pins[pin] or sub in self.pins[pin]

    def ackers(self, consumer: str) -> list[str] | None:
        for declared in self.pins["consumers"]:
            if self.consumer_id(declared) == consumer and isinstance(declared, dict):
                return list(declared["principals"])
        return None

    def unread_full(self, items: int) -> bool:
        """SPEC §5: unread counts only against declared consumers."""
        return bool(self.acks) and self.head - self.floor + items > self.pins["max_unread"]

    def store(self, cores: list[Any]) -> list[int]:
        sequences = list(range(self.head + 1, self.head + 1 + len(cores)))
        self.records.update(zip(sequences, cores, strict=True))
        self.head += len(cores)
        return sequences


def core(envelope: dict[str, Any]) -> Any:
    """What the model compares of a record: the payload without the masked field, or the
    object id (the masked field itself is judged by the secret check alone)."""
    if "object" in envelope:
        return ("object", envelope["object"]["object_id"])
    payload = envelope.get("payload")
    if "data" in envelope:  # every byte body the model sends is JSON text
        payload = json.loads(base64.b64decode(envelope["data"]))
    if isinstance(payload, dict) and isinstance(payload.get("user"), dict):
        payload = {**payload, "user": {k: v for k, v in payload["user"].items()
                                       if k != "email"}}
    return ("payload", payload)


def wire_body(payload: Any, shape: str, json_type: str) -> dict[str, Any]:
    if shape == "payload":
        return {"payload": payload}
    text = base64.b64encode(json.dumps(payload).encode()).decode()
    return {"data": text, "content_type": json_type if shape == "json-data" else "text/plain"}


def live_core(chunk: Any) -> Any:
    """A live chunk as the model compares it: a byte-shaped one by its decoded body."""
    if isinstance(chunk, dict) and "data" in chunk and "content_type" in chunk:
        return ("bytes", chunk["content_type"], core(chunk))
    return core({"payload": chunk})


def has(sub: str, scope: str) -> bool:
    return scope in PRINCIPALS[sub][0]


def bound_out(sub: str, run: str) -> bool:
    runs = PRINCIPALS[sub][1]
    return runs is not None and run not in runs


class ContractBroken(AssertionError):
    """A status the SPEC does not allow. One subclass per operation, because Hypothesis
    tells failures apart by exception type and line: each operation's break is its own
    bug in the report instead of hiding behind the first one found."""


BROKEN: dict[str, type[ContractBroken]] = {}


def expect(response: httpx.Response, allowed: set[int], what: str) -> None:
    if response.status_code not in allowed:
        operation = what.split()[0]
        kind = BROKEN.setdefault(operation, type(f"{operation}_broken", (ContractBroken,), {}))
        raise kind(f"{what}: got {response.status_code} {response.text[:300]}, "
                   f"SPEC wants {sorted(allowed)}")


def verdict(success: set[int], *refusals: tuple[bool, int]) -> set[int]:
    """Any applicable refusal (the SPEC orders none of them), else success."""
    return {status for applies, status in refusals if applies} or success


class ApiModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.cluster = NODES.fresh(self.every_response)
        self.streams: dict[Key, Model] = {}
        self.erased_runs: set[tuple[str, str]] = set()
        self.seen_acks: dict[tuple[Key, str], int] = {}
        self.touched: set[Key] = set()

    # -- what holds for every response ------------------------------------------------

    @staticmethod
    def every_response(who: Who, response: httpx.Response) -> None:
        text = response.text
        assert response.status_code < 500, f"no 5xx: {response.status_code} {text[:300]}"
        assert SECRET not in text, f"masked path left the server: {text[:300]}"
        for encoded in BASE64_DATA.findall(text):
            try:
                decoded = base64.b64decode(encoded)
            except binascii.Error:
                continue
            assert SECRET.encode() not in decoded, f"masked path left in data: {decoded!r}"
        for tenant, mark in MARK.items():
            assert tenant == who[0] or mark not in text, f"{tenant}'s bytes reached {who}"

    # -- helpers ----------------------------------------------------------------------

    def key_of(self, pick: int) -> Key:
        existing = sorted(self.streams)
        if existing and pick < 9:
            return existing[pick % len(existing)]
        return KEYS[pick % len(KEYS)]

    def node(self, key: Key, away: bool) -> str:
        model = self.streams.get(key)
        home = model.pins["home"] if model else REGIONS[0]
        return next(r for r in REGIONS if r != home) if away else home

    def call(self, key: Key, sub: str, away: bool, method: str, tail: str = "",
             body: Any = None, content: bytes | None = None) -> httpx.Response:
        self.touched.update((t, key[1], key[2]) for t in TENANTS)
        path = f"/runs/{key[1]}/streams/{key[2]}{tail}"
        return self.cluster.call(self.node(key, away), (key[0], sub), method, path, body,
                                 content)

    def gate(self, key: Key, sub: str, scope: str, pin: str, away: bool,
             home_only: bool = True) -> list[tuple[bool, int]]:
        """Refusals of SPEC §3/§10 shared by every stream route."""
        model = self.streams.get(key)
        refusals = [(model is None or bound_out(sub, key[1]), 404), (not has(sub, scope), 403)]
        if model is not None:
            refusals += [(not model.may(sub, pin), 403), (home_only and away, 421)]
        return refusals

    # -- rules ------------------------------------------------------------------------

    @rule(pick=PICK, sub=st.sampled_from(["alice", "bob", "carol", "dave"]), pins=PINS,
          away=AWAY)
    def create(self, pick: int, sub: str, pins: dict[str, Any], away: bool) -> None:
        key = KEYS[pick % len(KEYS)]
        model = self.streams.get(key)
        wanted = definition(key[2], pins)
        node = next(r for r in REGIONS if r != pins["home"]) if away else pins["home"]
        self.touched.update((t, key[1], key[2]) for t in TENANTS)
        response = self.cluster.call(node, (key[0], sub), "POST", f"/runs/{key[1]}/streams",
                                     wanted)
        expect(response, verdict(
            {200} if model is not None else {201},
            (not has(sub, W), 403), (bound_out(sub, key[1]), 404), (away, 421),
            ((key[0], key[1]) in self.erased_runs, 410),
            (model is not None and model.pins != pins, 409)), f"create {key} by {sub}")
        if response.status_code == 201:
            self.streams[key] = Model(pins)

    @rule(pick=PICK, sub=st.sampled_from(["alice", "carol", "dave", "bob"]), away=AWAY,
          count=st.integers(1, 2), keys=st.sampled_from([None, "k1", "k2", "object"]),
          shapes=st.tuples(SHAPES, SHAPES), json_type=JSON_TYPES,
          failures=st.sampled_from([1, None, 0, 2]))
    def append(self, pick: int, sub: str, away: bool, count: int, keys: str | None,
               shapes: tuple[str, str], json_type: str, failures: int | None) -> None:
        """Then, unless `failures` is None, the workers run (see `dispatch`)."""
        key = self.key_of(pick)
        model = self.streams.get(key)
        masked = bool(model and model.masked)
        idem = keys
        if keys == "object" and model is not None and model.objects:
            idem = "object:" + next(iter(model.objects.values())).object_id
        # The secret goes wherever the stream promises to mask it or to refuse the body.
        refusing = bool(model and model.refuses_unmasked)
        payloads = [{"n": n, "mark": MARK[key[0]], "user": {"name": "u", "email": (
            SECRET if masked and (shapes[n] != "text-data" or refusing) else "plain@x")}}
            for n in range(count)]
        names = [None if idem is None else idem if n == 0 else f"{idem}-{n}"
                 for n in range(count)]
        records = [{**wire_body(p, shape, json_type), **({"idempotency_key": k} if k else {})}
                   for k, p, shape in zip(names, payloads, shapes, strict=False)]
        response = self.call(key, sub, away, "POST", "/records", {"records": records})
        refusals = self.gate(key, sub, W, "writers", away)
        receipts = model.receipts if model else {}
        new = [r for r, k in zip(records, names, strict=True) if k not in receipts]
        if model is not None:
            # One record no mask can reach refuses the batch, keys used before or not.
            unmaskable = "text-data" in shapes[:count] and model.refuses_unmasked
            refusals += [(model.erased, 410), (unmaskable, 422)]
        if model is not None and new:
            refusals += [(model.closed, 409),
                         (model.head + len(new) > model.pins["max_total"], 409),
                         (model.unread_full(len(new)), 429)]
        expect(response, verdict({201} if new else {200}, *refusals),
               f"append {count} (keys {names}) to {key} by {sub}")
        if model is None or response.status_code >= 300:
            return
        stored = iter(model.store([core(r) for r in new]))
        sequences = [receipts[k] if k in receipts else next(stored) for k in names]
        assert response.json()["sequences"] == sequences, f"append answered {response.json()}"
        receipts.update({k: q for k, q in zip(names, sequences, strict=True) if k})
        if failures is not None:
            self.dispatch(failures)

    @rule(pick=PICK, sub=st.sampled_from(["alice", "bob", "carol", "dave", "ops", "audit"]),
          node=st.sampled_from(REGIONS))
    def list_run(self, pick: int, sub: str, node: str) -> None:
        """Follow the run listing's pages to the end, with pages of 1, 2 and 100 streams
        (ADR 0025): the streams this node may describe and the principal may read, each
        once, in stream id order."""
        runs = sorted({k[:2] for k in self.streams}, key=lambda r: -sum(
            k[:2] == r for k in self.streams))  # the fullest runs first: they have pages
        tenant, run = runs[pick % len(runs)] if runs and pick < 9 else KEYS[pick % len(KEYS)][:2]
        mine = {k: m for k, m in self.streams.items() if k[:2] == (tenant, run)}
        here = sorted(k[2] for k, m in mine.items() if m.pins["home"] == node)
        admin = has(sub, ADMIN)
        visible = [s for s in here if admin or mine[(tenant, run, s)].may(sub, "readers")]
        for limit in (1, 2, 100):
            path = f"/runs/{run}/streams?limit={limit}"
            response = self.cluster.call(node, (tenant, sub), "GET", path)
            expect(response, verdict({200}, (not mine or bound_out(sub, run), 404),
                                     (not has(sub, R) and not admin, 403),
                                     (bool(mine) and not here and len(mine) <= limit, 421)),
                   f"list {tenant}/{run} at {node} by {sub} (limit {limit})")
            if response.status_code == 200:
                assert self.pages(node, (tenant, sub), path, response, limit) == visible

    def pages(self, node: str, who: Who, path: str, response: httpx.Response,
              limit: int) -> list[str]:
        listed: list[str] = []
        for _ in range(len(KEYS) + 1):
            page = response.json()
            assert len(page["streams"]) <= limit, page
            listed += [stream["stream_id"] for stream in page["streams"]]
            if page["next_cursor"] is None:
                return listed
            response = self.cluster.call(node, who, "GET", f"{path}&cursor={page['next_cursor']}")
            expect(response, {200}, f"next page after {page['next_cursor']}")
        raise AssertionError(f"the listing {path} never ended: {listed}")

    @rule(pick=PICK, sub=st.sampled_from(["alice", "bob", "carol", "dave", "ops"]), away=AWAY,
          after=st.integers(0, 6))
    def read(self, pick: int, sub: str, away: bool, after: int) -> None:
        key = self.key_of(pick)
        model = self.streams.get(key)
        response = self.call(key, sub, away, "GET", f"/records?after={after}")
        refusals = self.gate(key, "audit" if sub == "ops" else sub, R, "readers", away,
                             home_only=False)
        if model is not None:
            refusals += [(not model.may(sub, "readers"), 403),  # §10: admin included
                         (away and not model.pins["wide_egress"], 403),
                         (after > model.head, 400), (after < model.earliest - 1, 410)]
        # Whether `streams:admin` alone carries `streams:read` the SPEC leaves open.
        allowed = verdict({200}, *refusals) | ({403} if sub == "ops" else set())
        expect(response, allowed, f"read {key} after {after} by {sub}")
        if model is not None and response.status_code == 200:
            got = [(r["sequence"], core(r)) for r in response.json()["records"]]
            assert got == [(s, c) for s, c in sorted(model.records.items()) if s > after], (
                f"records read: {got}")

    @rule(pick=PICK, sub=st.sampled_from(["alice", "bob", "carol", "dave", "ops"]), away=AWAY,
          other=PICK)
    def subscribe_token(self, pick: int, sub: str, away: bool, other: int) -> None:
        """SPEC §12: minted for whoever may follow the stream; then read-only and good for
        that one stream's subscription only (`?access_token=`)."""
        key = self.key_of(pick)
        model = self.streams.get(key)
        node = self.node(key, away)
        response = self.call(key, sub, away, "POST", "/subscribe-token")
        refusals = self.gate(key, "audit" if sub == "ops" else sub, R, "readers", away,
                             home_only=False)
        if model is not None:
            refusals += [(not model.may(sub, "readers"), 403),  # §10: admin included
                         (away and not model.pins["wide_egress"], 403)]
        allowed = verdict({201}, *refusals) | ({403} if sub == "ops" else set())
        expect(response, allowed, f"subscribe_token {key} by {sub}")
        if model is None or response.status_code != 201:
            return
        minted = response.json()["token"]
        who, path = (key[0], sub), f"/runs/{key[1]}/streams/{key[2]}"
        as_bearer = {"authorization": f"Bearer {minted}"}
        for method, tail in (("GET", "/records"), ("GET", ""), ("POST", "/subscribe-token")):
            used = self.cluster.run(self.cluster.request(node, who, method, path + tail,
                                                         headers=as_bearer))
            expect(used, {401}, f"subscribe_token used on {method} {tail or 'stream'}")
        elsewhere = self.key_of(other)
        if elsewhere[1:] != key[1:]:
            stray = f"/runs/{elsewhere[1]}/streams/{elsewhere[2]}/subscribe?access_token="
            used = self.cluster.run(self.cluster.request(node, who, "GET", stray + minted,
                                                         headers={}))
            expect(used, {404}, f"subscribe_token of {key} used on {elsewhere}")
        if model.closed:
            followed = self.cluster.run(self.cluster.request(
                node, who, "GET", f"{path}/subscribe?access_token={minted}", headers={}))
            expect(followed, {200}, f"subscribe with the token of {key}")
            records = [(f["sequence"], core(f)) for name, f in sse_events(followed.text)
                       if name == "record"]
            assert records == sorted(model.records.items()), f"SSE records: {records}"

    @rule(pick=PICK, sub=st.sampled_from(["alice", "bob", "carol", "dave", "audit"]),
          away=AWAY, consumer=st.sampled_from(["ui", "ux", "rogue"]), back=st.integers(-1, 2))
    def ack(self, pick: int, sub: str, away: bool, consumer: str, back: int) -> None:
        key = self.key_of(pick)
        model = self.streams.get(key)
        sequence = max(0, (model.head if model else 0) - back)
        response = self.call(key, sub, away, "POST", f"/consumers/{consumer}/ack",
                             {"sequence": sequence})
        refusals = self.gate(key, sub, R, "readers", away)
        if model is not None:
            ackers = model.ackers(consumer)
            refusals += [(consumer not in model.acks, 404),
                         (ackers is not None and sub not in ackers, 403),
                         (sequence > model.head, 400),
                         (sequence < model.acks.get(consumer, 0), 409)]
        allowed = verdict({200}, *refusals) | ({410} if model and model.erased else set())
        expect(response, allowed, f"ack {consumer}={sequence} on {key} by {sub}")
        if model is not None and response.status_code == 200:
            model.acks[consumer] = sequence
            model.floor = max(model.floor, min(model.acks.values()))

    @rule(pick=PICK, sub=st.sampled_from(["alice", "carol", "bob", "ops"]), away=AWAY)
    def close(self, pick: int, sub: str, away: bool) -> None:
        key = self.key_of(pick)
        model = self.streams.get(key)
        response = self.call(key, sub, away, "POST", "/close")
        refusals = [(model is None, 404), (away and model is not None, 421)]
        if sub != "ops":
            refusals += self.gate(key, sub, W, "writers", away)
        expect(response, verdict({200}, *refusals), f"close {key} by {sub}")
        if model is not None and response.status_code == 200:
            model.closed = True

    @rule(pick=PICK, sub=st.sampled_from(["ops", "alice"]), held=st.booleans())
    def legal_hold(self, pick: int, sub: str, held: bool) -> None:
        key = self.key_of(pick)
        model = self.streams.get(key)
        response = self.call(key, sub, False, "PUT", "/legal-hold",
                             {"held": held, "reason": "model"})
        expect(response, verdict({200}, (model is None, 404), (sub != "ops", 403)),
               f"hold={held} {key} by {sub}")
        if model is not None and response.status_code == 200:
            model.held = held

    @rule(pick=st.integers(0, 9), stranger=st.sampled_from(KEYS),
          sub=st.sampled_from(["ops", "ops", "alice"]))
    def erase(self, pick: int, stranger: Key, sub: str) -> None:
        """Mostly a run the tenant has; sometimes any run (maybe another tenant's)."""
        runs = sorted({(t, r) for t, r, _ in self.streams})
        tenant, run = runs[pick % len(runs)] if runs and pick else stranger[:2]
        mine = {k: m for k, m in self.streams.items() if k[:2] == (tenant, run)}
        home = next(iter(mine.values())).pins["home"] if mine else REGIONS[0]
        self.touched.update(k for k in self.streams if k[1] == run)
        response = self.cluster.call(home, (tenant, sub), "DELETE", f"/runs/{run}")
        expect(response, verdict({200}, (sub != "ops", 403), (not mine, 404)),
               f"erase {tenant}/{run} by {sub}")
        if response.status_code != 200:
            return
        self.erased_runs.add((tenant, run))
        held = sorted(k[2] for k, m in mine.items() if m.held)
        assert sorted(response.json()["held_streams"]) == held, "held streams kept"
        for model in mine.values():
            model.erased = model.closed = True
            if not model.held:
                model.records, model.earliest, model.floor = {}, model.head + 1, model.head
            for obj in model.objects.values():
                obj.state = "aborted" if obj.state in ("prepared", "uploaded") else obj.state

    def inputs_to_deliver(self) -> bool:
        return any(m.pins["direction"] == "input" and m.head for m in self.streams.values())

    @precondition(inputs_to_deliver)
    @rule(failures=st.sampled_from([1, 0, 2]))
    def dispatch(self, failures: int) -> None:
        """A pass of each node's dispatcher, the first `failures` publishes of each failing."""
        for node in REGIONS:
            self.cluster.dispatch(node, failures)
        self.touched.update(k for k, m in self.streams.items() if m.pins["direction"] == "input")

    @rule(pick=PICK, sub=st.sampled_from(["ops", "ops", "alice", "bob"]), away=AWAY,
          sequences=st.sampled_from([None, [1], [1, 2, 9]]))
    def redrive(self, pick: int, sub: str, away: bool, sequences: list[int] | None) -> None:
        key = self.key_of(pick)
        model = self.streams.get(key)
        response = self.call(key, sub, away, "POST", "/deliveries/redrive",
                             {} if sequences is None else {"sequences": sequences})
        refusals = [(model is None or bound_out(sub, key[1]), 404), (not has(sub, ADMIN), 403)]
        if model is not None:
            refusals += [(away, 421), (model.erased, 410),
                         (model.pins["direction"] == "output", 409)]
        expect(response, verdict({200}, *refusals), f"redrive {sequences} {key} by {sub}")
        if model is not None and response.status_code == 200:
            redriven = response.json()["redriven"]
            assert set(redriven) <= set(range(1, model.head + 1)), f"redrove {redriven}"
            model.redriven.update(redriven)

    @rule(pick=PICK, reader=st.sampled_from(["alice", "bob", "audit"]), shape=SHAPES,
          json_type=JSON_TYPES)
    def live_chunk(self, pick: int, reader: str, shape: str, json_type: str) -> None:
        """A reader follows with `?live=true`, a writer publishes a chunk (a JSON value, or
        shaped as a byte body) and closes."""
        key = self.key_of(pick)
        model = self.streams.get(key)
        if model is None or model.closed or not model.may(reader, "readers"):
            return
        self.touched.add(key)
        refused = shape == "text-data" and model.refuses_unmasked
        masked_here = model.masked and (shape != "text-data" or refused)
        chunk = wire_body({"mark": MARK[key[0]], "user": {"name": "u", "email": (
            SECRET if masked_here else "plain@x")}}, shape, json_type)
        if shape == "payload":
            chunk = chunk["payload"]
        frames = self.cluster.run(self.follow_while(key, model, reader, chunk,
                                                    422 if refused else 202))
        model.closed = True
        records = [(f["sequence"], core(f)) for name, f in frames if name == "record"]
        assert records == sorted(model.records.items()), f"SSE records: {records}"
        live = [live_core(f["data"]) for name, f in frames if name == "live"]
        assert live == ([] if refused else [live_core(chunk)]), f"live chunks seen: {live}"
        assert frames[-1:] == [("end", {"reason": "closed", "last_sequence": model.head})]

    async def follow_while(self, key: Key, model: Model, reader: str, chunk: Any,
                           status: int) -> list[tuple[str, Any]]:
        home, path = model.pins["home"], f"/runs/{key[1]}/streams/{key[2]}"
        cluster, who, writer = self.cluster, (key[0], reader), (key[0], "alice")
        follow = cluster.follow(home, who, path + "/subscribe?live=true")
        assert await cluster.settle(lambda: cluster.has_readers(StreamKey(*key))), "subscribed"
        published = await cluster.request(home, writer, "POST", path + "/live",
                                          {"chunks": [chunk], "source": "m", "attempt": 1})
        expect(published, {status}, "live publish")
        if status == 202:  # before closing, give the chunk every chance to reach the reader
            await cluster.settle(lambda: b"event: live" in b"".join(follow.body))
        expect(await cluster.request(home, writer, "POST", path + "/close"), {200}, "close")
        await asyncio.wait_for(follow.task, 30)  # a guard against hanging, not a timing
        assert follow.status == 200, f"subscribe answered {follow.status}"
        return sse_events(cluster.judge(who, follow))

    @rule(pick=PICK, sub=st.sampled_from(["alice", "carol", "bob"]), away=AWAY,
          idem=st.sampled_from(["o1", "o2"]), body=st.sampled_from(BODIES))
    def prepare_object(self, pick: int, sub: str, away: bool, idem: str, body: bytes) -> None:
        key = self.key_of(pick)
        model = self.streams.get(key)
        response = self.call(key, sub, away, "POST", "/objects", {
            "idempotency_key": idem, "sha256": hashlib.sha256(body).hexdigest(),
            "size": len(body), "content_type": "application/octet-stream"})
        refusals = self.gate(key, sub, W, "writers", away)
        known = model.objects.get(idem) if model else None
        if model is not None:
            refusals += [(model.erased, 410), (known is not None and known.body != body, 409),
                         (known is not None and known.owner != sub, 403),
                         (model.refuses_unmasked, 422)]
        success = {200} if known else {201} | ({409} if model and model.closed else set())
        expect(response, verdict(success, *refusals), f"prepare {idem} on {key}")
        if model is not None and response.status_code == 201:
            model.objects[idem] = Obj(response.json()["object_id"], body, sub)

    @rule(pick=PICK, idem=st.sampled_from(["o1", "o2"]), away=AWAY,
          step=st.sampled_from(["upload", "bad-upload", "commit", "abort"]),
          sub=st.sampled_from(["alice", "alice", "carol", "ops"]))
    def object_step(self, pick: int, idem: str, away: bool, step: str, sub: str) -> None:
        key = self.key_of(pick)
        model = self.streams.get(key)
        obj = model.objects.get(idem) if model else None
        if model is None or obj is None:
            return
        tail = f"/objects/{obj.object_id}"
        admin = has(sub, ADMIN)
        # §10 and the receipt: a writer of the stream, and the preparing principal or an admin.
        gate = [(away, 421), (not admin and not model.may(sub, "writers"), 403),
                (not admin and sub != obj.owner, 403)]
        if step.endswith("upload"):
            body = obj.body if step == "upload" else b"not-the-body"
            response = self.call(key, sub, away, "PUT", tail + "/body", content=body)
            live = obj.state in ("prepared", "uploaded")
            allowed = verdict({200} if body == obj.body else {422}, *gate,
                              (not live, 409), (model.erased, 410))
        elif step == "commit":
            response = self.call(key, sub, away, "POST", tail + "/commit")
            refusals = [*gate, (obj.state in ("prepared", "aborted"), 409),
                        (model.erased and obj.state != "committed", 410)]
            if obj.state == "uploaded":
                refusals += [(model.closed, 409), (model.head + 1 > model.pins["max_total"], 409),
                             (model.unread_full(1), 429)]
            allowed = verdict({200} if obj.state == "committed" else {201}, *refusals)
        else:
            response = self.call(key, sub, away, "POST", tail + "/abort")
            allowed = verdict({200}, *gate, (obj.state == "committed", 409))
            allowed |= {409} if obj.state == "aborted" else set()
        expect(response, allowed, f"{step} {idem} ({obj.state}) on {key}")
        if response.status_code >= 300:
            return
        if step == "upload":
            obj.state = "uploaded"
        elif step == "abort":
            obj.state = "aborted"
        elif obj.state == "committed":
            assert response.json()["sequence"] == obj.sequence, "duplicate commit sequence"
        else:
            (obj.sequence,) = model.store([("object", obj.object_id)])
            obj.state = "committed"
            assert response.json()["sequence"] == obj.sequence, (
                f"object commit appended no record of its own: {response.json()}")

    # -- invariants over what the last step touched -----------------------------------

    @invariant()
    def streams_are_as_modelled(self) -> None:
        for key in sorted(self.touched & self.streams.keys()):
            self.check_stream(key, self.streams[key])
        self.touched.clear()

    def check_stream(self, key: Key, model: Model) -> None:
        home, audit = model.pins["home"], (key[0], "audit")
        path = f"/runs/{key[1]}/streams/{key[2]}"
        response = self.cluster.call(home, audit, "GET", path)
        expect(response, {200}, f"status of {key}")
        status = response.json()["status"]
        assert set(status["consumers"]) == set(model.acks), (
            f"credit held by undeclared consumers: {status['consumers']}")
        for consumer, acked in status["consumers"].items():
            assert acked >= self.seen_acks.get((key, consumer), 0), "acks only advance"
            self.seen_acks[(key, consumer)] = acked
        assert status["consumers"] == model.acks, f"acks {status['consumers']}"
        assert status["head"] == model.head, f"erased or refused writes stored: {status}"
        assert (status["closed"], status["legal_hold"]) == (model.closed, model.held), status
        response = self.cluster.call(home, audit, "GET", f"{path}/records?after="
                                     f"{model.earliest - 1}&limit=1000")
        expect(response, {200}, f"records of {key}")
        page = response.json()
        sequences = [record["sequence"] for record in page["records"]]
        assert (page["earliest"], page["head"]) == (model.earliest, model.head), page
        assert sequences == list(range(model.earliest, model.head + 1)), (
            f"sequences not dense: {sequences}")
        if model.pins["direction"] == "input":
            self.check_deliveries(key, model)

    def check_deliveries(self, key: Key, model: Model) -> None:
        published = [event.sequence for event in self.cluster.workflow.events
                     if (event.tenant, event.run_id, event.stream_id) == key]
        assert len(published) == len(set(published)), f"published twice: {published}"
        in_line = [sequence for sequence in published if sequence not in model.redriven]
        assert in_line == sorted(in_line), f"{key} published out of order: {published}"
        response = self.cluster.call(model.pins["home"], (key[0], "audit"), "GET",
                                     f"/runs/{key[1]}/streams/{key[2]}/deliveries")
        expect(response, {200}, f"deliveries of {key}")
        view = response.json()
        assert len(published) + view["pending"] + view["dead_letter_count"] == model.head, (
            f"an input record of {key} is lost: {published}, {view}")
        # Nothing passes a record still in line: each one published came after every
        # earlier one was published, or while that one was dead-lettered.
        settled = {*published, *model.redriven, *(d["sequence"] for d in view["dead_letters"])}
        for sequence in in_line:
            assert set(range(1, sequence)) <= settled, (
                f"{key}: {sequence} published while an earlier record was pending: "
                f"{published}, {view}")


def test_the_api_keeps_the_contract_under_any_sequence_of_calls() -> None:
    run_state_machine_as_test(ApiModel, settings=settings(
        max_examples=30, stateful_step_count=30, deadline=None, derandomize=True,
        database=None, suppress_health_check=[HealthCheck.too_slow],
        # No "explain" phase: it replays a failure many times over; the shrunk case says enough.
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)))
