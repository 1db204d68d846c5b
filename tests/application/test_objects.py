"""Large objects: prepare → upload → commit, or abort; the record appears only after commit."""

import pytest

from application.node import NodeSettings
from application.ports.errors import ObjectRegionUnavailable
from application.views import record_envelope
from domain.errors import (
    DigestMismatch,
    NotFound,
    NotIntentOwner,
    ObjectIntentConflict,
    ObjectNotUploaded,
    ObjectStateConflict,
    SizeMismatch,
    StreamClosed,
)
from domain.identifiers import object_intent_id
from domain.object_intent import IntentState, ObjectIntent
from domain.records import ObjectRef
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ADMIN,
    ALICE,
    BOB,
    RUN,
    body_of,
    fake_clock,
    head_of,
    key,
    make_stream,
    object_pins,
)

BODY = b"%PDF-1.7 " + b"x" * 1000


async def prepared(sim: Simulation, body: bytes = BODY) -> ObjectIntent:
    await make_stream(sim)
    intent, created = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(body))
    assert created
    return intent


async def uploaded(sim: Simulation) -> ObjectIntent:
    intent = await prepared(sim)
    return await sim.service.objects.upload(ALICE, RUN, "s", intent.object_id,
                                            body_of(BODY[:100], BODY[100:]))


async def read_body(sim: Simulation, object_id: str) -> bytes:
    _, chunks = await sim.service.objects.body(ALICE, RUN, "s", object_id)
    return b"".join([chunk async for chunk in chunks])


async def test_prepare_pins_a_server_owned_key_and_the_authorization_receipt() -> None:
    sim = simulation()
    intent = await prepared(sim)
    assert intent.current_state is IntentState.PREPARED
    assert intent.object_key.startswith("t1/run-1/s/")
    assert (intent.principal, intent.region, intent.size) == ("alice", "local", len(BODY))
    assert intent.expires_at > sim.ports.clock.now()


async def test_prepare_with_the_same_key_and_pins_returns_the_same_intent() -> None:
    sim = simulation()
    first = await prepared(sim)
    again, created = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(BODY))
    assert not created
    assert again.object_id == first.object_id
    assert again.principal == "alice"


async def test_another_principal_repeating_the_prepare_is_refused_by_the_receipt() -> None:
    sim = simulation()
    await prepared(sim)
    with pytest.raises(NotIntentOwner):
        await sim.service.objects.prepare(BOB, RUN, "s", object_pins(BODY))


async def test_prepare_with_the_same_key_and_other_pins_is_a_conflict() -> None:
    sim = simulation()
    await prepared(sim)
    with pytest.raises(ObjectIntentConflict):
        await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(b"another body"))


async def test_an_upload_whose_digest_does_not_match_keeps_nothing() -> None:
    sim = simulation()
    intent = await prepared(sim)
    tampered = BODY[:-1] + b"y"
    with pytest.raises(DigestMismatch):
        await sim.service.objects.upload(ALICE, RUN, "s", intent.object_id, body_of(tampered))
    assert sim.ports.objects.keys("local") == []
    stored = await sim.service.objects.get(ALICE, RUN, "s", intent.object_id)
    assert stored.current_state is IntentState.PREPARED


@pytest.mark.parametrize("body", [BODY[:-1], BODY + b"!"])
async def test_an_upload_of_another_size_keeps_nothing(body: bytes) -> None:
    sim = simulation()
    intent = await prepared(sim)
    with pytest.raises(SizeMismatch):
        await sim.service.objects.upload(ALICE, RUN, "s", intent.object_id, body_of(body))
    assert sim.ports.objects.keys("local") == []


async def test_commit_before_upload_is_refused() -> None:
    sim = simulation()
    intent = await prepared(sim)
    with pytest.raises(ObjectNotUploaded):
        await sim.service.objects.commit(ALICE, RUN, "s", intent.object_id)
    assert (await sim.ports.store.read_page(key(), 0, 10)).records == ()


async def test_commit_appends_a_record_that_references_the_object() -> None:
    sim = simulation()
    intent = await uploaded(sim)
    assert intent.current_state is IntentState.UPLOADED
    await sim.service.appender.append(ALICE, RUN, "s", [{"payload": "before"}])
    sequence, created = await sim.service.objects.commit(ALICE, RUN, "s", intent.object_id)
    assert (sequence, created) == (2, True)
    [record] = (await sim.service.reading.read(ALICE, RUN, "s", after=1)).page.records
    assert record.object == ObjectRef(intent.object_id, len(BODY), intent.sha256,
                                      "application/pdf")
    envelope = record_envelope(record, RUN, "s")
    assert envelope["object"]["href"].endswith(f"/objects/{intent.object_id}/body")
    assert "payload" not in envelope
    state = await sim.service.objects.get(ALICE, RUN, "s", intent.object_id)
    assert (state.current_state, state.sequence) == (IntentState.COMMITTED, 2)


async def test_a_duplicate_commit_returns_the_original_sequence() -> None:
    sim = simulation()
    intent = await uploaded(sim)
    first = await sim.service.objects.commit(ALICE, RUN, "s", intent.object_id)
    again = await sim.service.objects.commit(ALICE, RUN, "s", intent.object_id)
    assert (first, again) == ((1, True), (1, False))
    assert (await sim.ports.store.read_page(key(), 0, 10)).head == 1


async def test_commit_obeys_the_stream_rules() -> None:
    sim = simulation()
    intent = await uploaded(sim)
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    with pytest.raises(StreamClosed):
        await sim.service.objects.commit(ALICE, RUN, "s", intent.object_id)
    state = await sim.service.objects.get(ALICE, RUN, "s", intent.object_id)
    assert state.current_state is IntentState.UPLOADED


async def test_abort_deletes_the_body_and_ends_the_intent() -> None:
    sim = simulation()
    intent = await uploaded(sim)
    assert sim.ports.objects.keys("local") == [intent.object_key]
    aborted = await sim.service.objects.abort(ALICE, RUN, "s", intent.object_id)
    assert aborted.current_state is IntentState.ABORTED
    assert sim.ports.objects.keys("local") == []
    with pytest.raises(ObjectStateConflict):
        await sim.service.objects.commit(ALICE, RUN, "s", intent.object_id)
    with pytest.raises(ObjectStateConflict):
        await sim.service.objects.upload(ALICE, RUN, "s", intent.object_id, body_of(BODY))


async def test_a_committed_object_cannot_be_aborted() -> None:
    sim = simulation()
    intent = await uploaded(sim)
    await sim.service.objects.commit(ALICE, RUN, "s", intent.object_id)
    with pytest.raises(ObjectStateConflict):
        await sim.service.objects.abort(ALICE, RUN, "s", intent.object_id)
    assert sim.ports.objects.keys("local") == [intent.object_key]


async def test_the_body_is_served_only_once_committed() -> None:
    sim = simulation()
    intent = await uploaded(sim)
    with pytest.raises(NotFound):
        await sim.service.objects.body(ALICE, RUN, "s", intent.object_id)
    await sim.service.objects.commit(ALICE, RUN, "s", intent.object_id)
    assert await read_body(sim, intent.object_id) == BODY


async def test_a_body_removed_by_retention_is_not_found() -> None:
    sim = simulation()
    await make_stream(sim, retention={"max_records": 1})
    intent, _ = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(BODY))
    await sim.service.objects.upload(ALICE, RUN, "s", intent.object_id, body_of(BODY))
    await sim.service.objects.commit(ALICE, RUN, "s", intent.object_id)
    await sim.service.appender.append(ALICE, RUN, "s", [{"payload": "newer"}])
    await sim.service.retention.prune(key())
    with pytest.raises(NotFound):
        await sim.service.objects.body(ALICE, RUN, "s", intent.object_id)


async def test_an_unknown_object_is_not_found() -> None:
    sim = simulation()
    await make_stream(sim)
    with pytest.raises(NotFound):
        await sim.service.objects.get(ALICE, RUN, "s", "no-such-object")


async def test_bodies_go_to_the_pinned_object_region_not_the_nodes_own() -> None:
    sim = simulation(regions=("local", "eu"))
    await make_stream(sim, placement={"metadata_home": "local", "object_regions": ["eu"]})
    intent, _ = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(BODY))
    await sim.service.objects.upload(ALICE, RUN, "s", intent.object_id, body_of(BODY))
    objects = sim.ports.objects
    assert (objects.keys("eu"), objects.keys("local")) == ([intent.object_key], [])


async def test_a_pinned_region_without_a_store_here_is_skipped_for_one_with_a_store() -> None:
    sim = simulation(regions=("eu",))
    await make_stream(sim, placement={"metadata_home": "local", "object_regions": ["local", "eu"]})
    intent, _ = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(BODY))
    assert intent.region == "eu"
    await sim.service.objects.upload(ALICE, RUN, "s", intent.object_id, body_of(BODY))
    assert sim.ports.objects.keys("eu") == [intent.object_key]


async def test_prepare_is_refused_when_no_pinned_region_has_a_store_here_and_keeps_nothing(
        ) -> None:
    # No client uploads 32 MiB into a dead end: the refusal comes before any body moves.
    sim = simulation(regions=("local",))
    await make_stream(sim, placement={"metadata_home": "local", "object_regions": ["eu", "us"]})
    with pytest.raises(ObjectRegionUnavailable, match="eu, us"):
        await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(BODY))
    stream = await sim.ports.store.load(key())
    assert stream is not None and stream.reservations == {}
    assert await sim.ports.store.load_intent(key(), str(object_intent_id(key(), "o1"))) is None


async def test_an_intent_past_its_deadline_refuses_upload_and_commit_and_stays_expired() -> None:
    sim = simulation(node=NodeSettings(object_intent_ttl_seconds=60))
    await make_stream(sim)
    body = b"late body"
    intent, _ = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(body, "late"))
    fake_clock(sim).advance(61)
    with pytest.raises(ObjectStateConflict):
        await sim.service.objects.upload(ALICE, RUN, "s", intent.object_id, body_of(body))
    state = await sim.service.objects.get(ALICE, RUN, "s", intent.object_id)
    assert state.current_state is IntentState.EXPIRED
    assert sim.ports.objects.keys("local") == []


async def test_an_uploaded_intent_past_its_deadline_cannot_be_committed() -> None:
    sim = simulation(node=NodeSettings(object_intent_ttl_seconds=60))
    await make_stream(sim)
    body = b"uploaded in time"
    intent, _ = await sim.service.objects.prepare(ALICE, RUN, "s", object_pins(body, "u"))
    await sim.service.objects.upload(ALICE, RUN, "s", intent.object_id, body_of(body))
    fake_clock(sim).advance(60)
    with pytest.raises(ObjectStateConflict):
        await sim.service.objects.commit(ALICE, RUN, "s", intent.object_id)
    assert (await head_of(sim)) == 0
    assert sim.ports.objects.keys("local") == []


async def test_only_the_preparing_principal_or_an_admin_uploads_commits_or_aborts() -> None:
    sim = simulation()
    intent = await uploaded(sim)
    objects, oid = sim.service.objects, intent.object_id
    with pytest.raises(NotIntentOwner):
        await objects.upload(BOB, RUN, "s", oid, body_of(BODY))
    with pytest.raises(NotIntentOwner):
        await objects.commit(BOB, RUN, "s", oid)
    with pytest.raises(NotIntentOwner):
        await objects.abort(BOB, RUN, "s", oid)
    assert (await objects.get(ALICE, RUN, "s", oid)).current_state is IntentState.UPLOADED
    assert await head_of(sim) == 0
    sequence, created = await objects.commit(ADMIN, RUN, "s", oid)
    assert (sequence, created) == (1, True)
