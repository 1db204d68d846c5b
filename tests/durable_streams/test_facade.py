"""The Durable Streams facade keeps Runnel's invariants (ADR 0041), against a real server on
Postgres: dense exact offsets, the tenant from the token, one store under both faces, no
gap and no duplicate across an SSE reconnect, nothing acknowledged lost across kill -9."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from entrypoints.composition.settings import ConfigurationError, Settings
from entrypoints.http.durable_streams import refuse_unsafe_binding
from entrypoints.http.durable_streams.wire import offset_of
from tests.durable_streams.support import PREFIX, client, control, sse_events
from tests.http.restart import RestartableServer, restartable_server
from tests.http.server import bearer, token
from tests.pg import pg_template  # noqa: F401  (fixture)

TEXT = {"content-type": "text/plain"}
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def server(pg_template: str, tmp_path_factory: pytest.TempPathFactory,  # noqa: F811
           ) -> Iterator[RestartableServer]:
    with restartable_server(pg_template, tmp_path_factory.mktemp("ds-node"),
                            {"RUNNEL_DURABLE_STREAMS_LONG_POLL_SECONDS": "2",
                             "RUNNEL_DURABLE_STREAMS_TEMPLATES": json.dumps(
                                 {"ds-open": {"authorization": {"writers": ["*"]}}})},
                            ) as running:
        yield running


def fresh(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def test_offsets_are_dense_and_a_read_at_one_returns_exactly_what_follows(
        server: RestartableServer) -> None:
    path = fresh("dense")
    chunks = [f"<{index}>" for index in range(12)]
    with client(server.url) as http:
        assert http.put(path, headers=TEXT).status_code == 201
        offsets = [http.post(path, content=chunk, headers=TEXT).headers["stream-next-offset"]
                   for chunk in chunks]
        assert offsets == [offset_of(sequence) for sequence in range(1, len(chunks) + 1)]
        assert offsets == sorted(offsets)
        for index, offset in enumerate([offset_of(0), *offsets]):
            read = http.get(path, params={"offset": offset})
            assert read.status_code == 200
            assert read.text == "".join(chunks[index:])
            assert read.headers["stream-next-offset"] == offsets[-1]
        future = http.get(path, params={"offset": offset_of(len(chunks) + 1)})
        assert future.status_code == 400  # never an empty answer for a cursor beyond head


def test_the_tenant_comes_from_the_token(server: RestartableServer) -> None:
    path = fresh("tenant")
    with client(server.url, "ds-a") as a, client(server.url, "ds-b") as b:
        assert a.put(path, content="a's", headers=TEXT).status_code == 201
        assert b.head(path).status_code == 404
        assert b.post(path, content="b's", headers=TEXT).status_code == 404
        assert b.put(path, content="b's", headers=TEXT).status_code == 201
        assert a.get(path).text == "a's"
        assert b.get(path).text == "b's"
    anonymous = httpx.put(f"{server.url}/v1/stream/{path}", headers=TEXT)
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Bearer")  # the error table's
    assert anonymous.headers["x-content-type-options"] == "nosniff"  # and the protocol's
    assert "access-control-allow-origin" not in anonymous.headers  # no origin is listed
    reader_only = httpx.post(f"{server.url}/v1/stream/{path}", content="x", headers={
        **TEXT, **bearer(token(tenant="ds-a", scopes=("streams:read",)))})
    assert reader_only.status_code == 403
    with client(server.url, "ds-a") as a:
        assert a.get(path).text == "a's"


def test_a_facade_stream_is_a_runnel_stream(server: RestartableServer) -> None:
    path = fresh("same-store")
    with client(server.url) as http:
        created = http.put(path, headers=JSON)
        run_id = created.headers["runnel-run-id"]
        http.post(path, content=json.dumps([{"n": 1}, {"n": 2}]), headers=JSON)
        http.post(path, content=json.dumps({"n": 3}), headers=JSON)
        native = f"{server.api}/runs/{run_id}/streams/stream"
        records = httpx.get(native + "/records", headers=http.headers).json()
        assert [record["sequence"] for record in records["records"]] == [1, 2]
        assert [record["payload"] for record in records["records"]] == [[{"n": 1}, {"n": 2}],
                                                                         [{"n": 3}]]
        # Closed through the native API, closed on the facade: one stream, two faces.
        assert httpx.post(native + "/close", headers=http.headers).status_code == 200
        head = http.head(path)
        assert head.headers["stream-closed"] == "true"
        assert head.headers["stream-next-offset"] == offset_of(2)
        assert http.post(path, content="[4]", headers=JSON).status_code == 409
        assert http.get(path).json() == [{"n": 1}, {"n": 2}, {"n": 3}]


def test_a_held_stream_is_not_deleted_and_a_deleted_path_starts_afresh(
        server: RestartableServer) -> None:
    path = fresh("held")
    admin = bearer(token(tenant="ds-tests", scopes=("streams:read", "streams:write",
                                                      "streams:admin")))
    with client(server.url) as http:
        run_id = http.put(path, content="kept", headers=TEXT).headers["runnel-run-id"]
        hold = f"{server.api}/runs/{run_id}/streams/stream/legal-hold"
        assert httpx.put(hold, json={"held": True, "reason": "audit"},
                         headers=admin).status_code == 200
        assert http.delete(path).status_code == 409
        assert http.get(path).text == "kept"
        assert httpx.put(hold, json={"held": False}, headers=admin).status_code == 200
        assert http.delete(path).status_code == 204
        assert http.get(path).status_code == 404
        again = http.put(path, content="new", headers=TEXT)
        assert again.status_code == 201 and again.headers["runnel-run-id"] != run_id
        assert http.get(path).text == "new"


def test_sse_reconnect_loses_nothing_and_repeats_nothing(server: RestartableServer) -> None:
    """Appends run all along, also while the reader is away between its two connections."""
    path = fresh("sse")
    sent = [{"n": index} for index in range(60)]
    with client(server.url) as http:
        http.put(path, headers=JSON)

        def append_all() -> None:
            with client(server.url) as writer:
                for message in sent:
                    writer.post(path, content=json.dumps(message), headers=JSON)

        appender = threading.Thread(target=append_all)
        received: list[object] = []
        offset = "-1"
        data_events = 0
        with http.stream("GET", path, params={"offset": offset, "live": "sse"}) as first:
            appender.start()
            pending: list[object] = []
            for event, data in sse_events(first):
                if event == "data":
                    pending = json.loads(data)
                    data_events += 1
                elif event == "control":
                    received.extend(pending)
                    pending = []
                    offset = control(data)["streamNextOffset"]
                    if data_events >= 3:
                        break  # drop the connection mid-stream
        assert 0 < len(received) < len(sent)
        with http.stream("GET", path, params={"offset": offset, "live": "sse"}) as second:
            pending = []
            for event, data in sse_events(second):
                if event == "data":
                    pending = json.loads(data)
                elif event == "control":
                    received.extend(pending)
                    pending = []
                    if len(received) >= len(sent):
                        break
        appender.join()
    assert received == sent


def test_nothing_acknowledged_is_lost_across_kill_9(server: RestartableServer) -> None:
    path = fresh("crash")
    acknowledged: list[str] = []
    stop = threading.Event()
    with client(server.url) as http:
        http.put(path, headers=TEXT)

        def append_until_killed() -> None:
            with client(server.url) as writer:
                for index in range(10_000):
                    if stop.is_set():
                        return
                    chunk = f"[{index}]"
                    try:
                        answer = writer.post(path, content=chunk, headers=TEXT)
                    except httpx.HTTPError:
                        return
                    if answer.status_code == 204:
                        acknowledged.append(chunk)

        writer = threading.Thread(target=append_until_killed)
        writer.start()
        while len(acknowledged) < 20:
            threading.Event().wait(0.05)
        server.kill()
        stop.set()
        writer.join()
        server.start()
        after = http.get(path)
    assert after.status_code == 200
    stored = after.text
    assert stored.startswith("".join(acknowledged))  # every ack'd append, in order, once
    assert after.headers["stream-next-offset"] >= offset_of(len(acknowledged))


def test_a_producer_retry_after_kill_9_is_stored_once(server: RestartableServer) -> None:
    path = fresh("producer-crash")
    producer = {"producer-id": "p1", "producer-epoch": "0"}
    with client(server.url) as http:
        http.put(path, headers=TEXT)
        for seq in range(3):
            answer = http.post(path, content=f"<{seq}>",
                               headers={**TEXT, **producer, "producer-seq": str(seq)})
            assert answer.status_code == 200
        server.restart()
        retry = http.post(path, content="<2>", headers={**TEXT, **producer, "producer-seq": "2"})
        assert retry.status_code == 204
        assert http.post(path, content="<4>", headers={
            **TEXT, **producer, "producer-seq": "4"}).status_code == 409
        assert http.get(path).text == "<0><1><2>"


def test_the_anonymous_binding_is_off_by_default_and_loopback_only(tmp_path: Path) -> None:
    assert refuse_unsafe_binding(Settings(data_dir=tmp_path), "0.0.0.0") is None
    bound = Settings(data_dir=tmp_path, durable_streams_anonymous_tenant="conformance")
    warning = refuse_unsafe_binding(bound, "127.0.0.1")
    assert warning is not None and "conformance" in warning and "WITHOUT A TOKEN" in warning
    for host in ("0.0.0.0", "192.168.1.10", "::", "example.com"):
        with pytest.raises(ConfigurationError):
            refuse_unsafe_binding(bound, host)


def test_hostile_input_is_refused_before_any_work(server: RestartableServer) -> None:
    path = fresh("hostile")
    with client(server.url) as http:
        for headers in ({"stream-ttl": "9" * 18}, {"stream-ttl": "-1"},
                        {"stream-ttl": "1", "stream-expires-at": "2099-01-01T00:00:00Z"},
                        {"content-type": "text/" + "x" * 300},
                        {"stream-forked-from": "/v1/stream/nowhere", "stream-fork-offset": "1"}):
            assert http.put(path, headers=headers).status_code == 400, headers
            assert http.head(path).status_code == 404  # a refused PUT leaves no trace
        assert http.put(path, headers=JSON).status_code == 201
        deep = "[" * 5000 + "]" * 5000
        assert http.post(path, content=deep, headers=JSON).status_code in (400, 422)
        for producer in ({"producer-id": "p" * 300, "producer-epoch": "0", "producer-seq": "0"},
                         {"producer-id": "p", "producer-epoch": str(2**53), "producer-seq": "0"},
                         {"producer-id": "p", "producer-epoch": "0"},
                         {"producer-id": "", "producer-epoch": "0", "producer-seq": "0"}):
            answer = http.post(path, content="[1]", headers={**JSON, **producer})
            assert answer.status_code == 400, producer
        for offset in ("1", "0000000000000001_0000000000000001", "abc", "-2", ""):
            assert http.get(path, params={"offset": offset}).status_code == 400, offset
        assert http.get(path).json() == []
    reader = bearer(token(tenant="ds-tests", scopes=("streams:read",)))
    closing = httpx.post(f"{server.url}/v1/stream/{path}",
                         headers={**reader, "stream-closed": "true"})
    assert closing.status_code == 403
    with client(server.url) as http:
        assert "stream-closed" not in http.head(path).headers


def test_another_principal_of_the_tenant_gets_403_on_every_route(
        server: RestartableServer) -> None:
    """ADR 0070: readers and writers default to the creator."""
    path = fresh("pinned")
    with client(server.url) as alice, client(server.url, sub="bob") as bob:
        assert alice.put(path, content="alice's", headers=TEXT).status_code == 201
        refusals = [bob.get(path), bob.get(path, params={"offset": "-1", "live": "sse"}),
                    bob.head(path), bob.post(path, content="bob's", headers=TEXT),
                    bob.put(path, headers=TEXT), bob.delete(path),
                    bob.put(fresh("fork"), headers={**TEXT, "stream-forked-from": PREFIX + path})]
        for refused in refusals:
            assert refused.status_code == 403, (refused.request.method, refused.text)
            if refused.request.method != "HEAD":
                assert refused.json()["code"] == "forbidden"
        assert alice.get(path).text == "alice's"


def test_the_creators_definition_header_and_the_tenant_template_set_the_pins(
        server: RestartableServer) -> None:
    shared = fresh("shared")
    readers = json.dumps({"authorization": {"readers": ["alice", "bob"]},
                          "retention": {"max_records": 2}})
    with client(server.url) as alice, client(server.url, sub="bob") as bob:
        created = alice.put(shared, headers={**JSON, "runnel-definition": readers})
        assert created.status_code == 201
        for n in range(3):
            alice.post(shared, content=json.dumps({"n": n}), headers=JSON)
        assert bob.get(shared).json()[-1] == {"n": 2}
        assert bob.post(shared, content="[1]", headers=JSON).status_code == 403
        native = f"{server.api}/runs/{created.headers['runnel-run-id']}/streams/stream"
        pins = httpx.get(native, headers=alice.headers).json()["definition"]
        assert pins["authorization"] == {"readers": ["alice", "bob"], "writers": ["alice"]}
        assert pins["retention"]["max_records"] == 2
        again = alice.put(shared, headers={**JSON, "runnel-definition": json.dumps({})})
        assert again.status_code == 409
    open_path = fresh("template")
    with client(server.url, "ds-open") as alice, client(server.url, "ds-open", "bob") as bob:
        assert alice.put(open_path, headers=JSON).status_code == 201
        assert bob.post(open_path, content="[1]", headers=JSON).status_code == 204
        assert bob.get(open_path).status_code == 403  # the template left readers alone


def test_a_bad_definition_header_is_refused_and_leaves_no_stream(
        server: RestartableServer) -> None:
    path = fresh("bad-definition")
    with client(server.url) as http:
        for header, status in (("{", 400), ("x" * 5000, 400), ("[]", 422),
                               (json.dumps({"stream_id": "other"}), 422),
                               (json.dumps({"credit": {"max_unread_items": 0}}), 422),
                               (json.dumps({"content_class": "model.reasoning.raw.v2"}), 422)):
            refused = http.put(path, headers={**JSON, "runnel-definition": header})
            assert refused.status_code == status, (header[:40], refused.text)
            assert http.head(path).status_code == 404


def test_a_template_that_is_no_definition_stops_the_node_at_start() -> None:
    for templates in ({"t1": {"stream_id": "x"}}, {"t1": {"credit": {"max_unread_items": 0}}},
                      {"bad tenant": {}}, {"t1": []}):
        with pytest.raises(ValueError, match=r"RUNNEL_DURABLE_STREAMS_TEMPLATES|template"):
            Settings(durable_streams_templates=templates)


def test_a_native_delete_of_the_stream_behind_a_path_leaves_the_path_not_found(
        server: RestartableServer) -> None:
    """The same stream, two faces: deleted through the native API (ADR 0075), the path
    answers 404 to every verb, never a 5xx, and a PUT starts it afresh."""
    path = fresh("deleted-natively")
    with client(server.url) as http:
        run_id = http.put(path, content=json.dumps([{"n": 1}]), headers=JSON
                          ).headers["runnel-run-id"]
        native = f"{server.api}/runs/{run_id}/streams/stream"
        assert httpx.delete(native, headers=http.headers).status_code == 200
        answers = {"GET": http.get(path).status_code,
                   "HEAD": http.head(path).status_code,
                   "POST": http.post(path, content="[2]", headers=JSON).status_code,
                   "SSE": http.get(path, params={"offset": "-1", "live": "sse"}).status_code,
                   "long-poll": http.get(path, params={"offset": "-1",
                                                       "live": "long-poll"}).status_code}
        assert answers == dict.fromkeys(answers, 404), answers
        again = http.put(path, content=json.dumps([{"n": 3}]), headers=JSON)
        assert again.status_code == 201, again.text
        assert again.headers["runnel-run-id"] != run_id
        assert http.get(path).json() == [{"n": 3}]
        # A DELETE that meets a stream gone behind the path is a 404, and frees the path.
        run_id = again.headers["runnel-run-id"]
        native = f"{server.api}/runs/{run_id}/streams/stream"
        assert httpx.delete(native, headers=http.headers).status_code == 200
        assert http.delete(path).status_code == 404
        assert http.put(path, content="[4]", headers=JSON).status_code == 201
        assert http.get(path).json() == [4]
