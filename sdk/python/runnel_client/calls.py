"""The plans of the client's calls (`runnel_client.effects`): each method of
`AsyncRunnelClient` and `RunnelClient` is one of these, performed by its driver.
What each takes, returns and raises is said in `AsyncRunnelClient`'s docstrings."""

from __future__ import annotations

from typing import Any

import httpx

from runnel_client.effects import NEXT, Emit, Measure, Open, Plan, Send, Sleep
from runnel_client.errors import BackpressureError
from runnel_client.objects import DownloadCheck, ObjectBody, object_id_of, prepare_body
from runnel_client.wire import (
    BrowserToken,
    ReadPage,
    Record,
    checked,
    problem_of,
    records_body,
    run_path,
    stream_path,
)


def answer(request: Send) -> Plan[dict[str, Any]]:
    """One request; its JSON object, or the `RunnelError` of its problem."""
    response: httpx.Response = yield request
    return checked(response)


def create_stream(run_id: str, definition: dict[str, Any]) -> Plan[dict[str, Any]]:
    return (yield from answer(Send("POST", run_path(run_id, "streams"), json=definition)))


def get_stream(run_id: str, stream_id: str) -> Plan[dict[str, Any]]:
    return (yield from answer(Send("GET", stream_path(run_id, stream_id))))


def append(run_id: str, stream_id: str, records: list[dict[str, Any]],
           retries: int) -> Plan[dict[str, Any]]:
    """A 429 is sent again after its `Retry-After` (1 s without one) up to `retries`
    times, the same body each time; then its error is raised."""
    request = Send("POST", stream_path(run_id, stream_id, "records"), json=records_body(records))
    for attempt in range(retries + 1):
        response: httpx.Response = yield request
        if response.status_code != 429 or attempt == retries:
            return checked(response)
        error = problem_of(response)
        yield Sleep(error.retry_after if isinstance(error, BackpressureError) else 1.0)
    raise AssertionError("unreachable")


def read(run_id: str, stream_id: str, after: int, limit: int,
         wait: float | None = None) -> Plan[ReadPage]:
    params: dict[str, Any] = {"after": after, "limit": limit}
    if wait is not None:
        params["wait"] = format(wait, "f").rstrip("0").rstrip(".") or "0"
    return ReadPage.from_wire((yield from answer(Send(
        "GET", stream_path(run_id, stream_id, "records"), params=params,
        waits=wait or 0.0))))


def delete_stream(run_id: str, stream_id: str) -> Plan[dict[str, Any]]:
    return (yield from answer(Send("DELETE", stream_path(run_id, stream_id))))


def ack(run_id: str, stream_id: str, consumer_id: str, sequence: int) -> Plan[dict[str, Any]]:
    return (yield from answer(Send(
        "POST", stream_path(run_id, stream_id, "consumers", consumer_id, "ack"),
        json={"sequence": sequence})))


def close_stream(run_id: str, stream_id: str) -> Plan[dict[str, Any]]:
    return (yield from answer(Send("POST", stream_path(run_id, stream_id, "close"))))


def publish_live(run_id: str, stream_id: str, chunks: list[Any], source: str | None,
                 attempt: int | None, index: int | None) -> Plan[dict[str, Any]]:
    body: dict[str, Any] = {"chunks": chunks}
    for name, value in (("source", source), ("attempt", attempt), ("index", index)):
        if value is not None:
            body[name] = value
    return (yield from answer(Send("POST", stream_path(run_id, stream_id, "live"), json=body)))


def subscribe_token(run_id: str, stream_id: str,
                    ttl_seconds: int | None) -> Plan[dict[str, Any]]:
    body = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
    return (yield from answer(Send(
        "POST", stream_path(run_id, stream_id, "subscribe-token"), json=body)))


def browser_token(base_url: httpx.URL, run_id: str, stream_id: str,
                  ttl_seconds: int | None) -> Plan[BrowserToken]:
    grant = yield from subscribe_token(run_id, stream_id, ttl_seconds)
    url = base_url.join(stream_path(run_id, stream_id, "subscribe"))
    return BrowserToken(grant["token"], grant["expires_at"],
                        str(url.copy_merge_params({"access_token": grant["token"]})))


def upload_object(run_id: str, stream_id: str, body: ObjectBody, content_type: str,
                  idempotency_key: str | None, schema: str | None) -> Plan[Record]:
    """Measure, prepare with the pins, upload unless the intent has its body already,
    commit, and read the committed record back."""
    measured = yield Measure(body)
    try:
        prepared = yield from answer(Send(
            "POST", stream_path(run_id, stream_id, "objects"),
            json=prepare_body(measured, content_type, idempotency_key, schema)))
        object_path = stream_path(run_id, stream_id, "objects", prepared["object_id"])
        if prepared.get("state") == "prepared":
            yield from answer(Send(
                "PUT", object_path + "/body", upload=measured,
                headers={"Content-Length": str(measured.size),
                         "Content-Type": "application/octet-stream"}))
        sequence = int((yield from answer(Send("POST", object_path + "/commit")))["sequence"])
    finally:
        measured.close()
    return (yield from read(run_id, stream_id, sequence - 1, 1)).records[0]


def download_object(run_id: str, stream_id: str, target: Record | str) -> Plan[None]:
    """Emits the body's chunks, then checks them against the answer's size and digest."""
    object_path = stream_path(run_id, stream_id, "objects", object_id_of(target))
    response: httpx.Response = yield Open(object_path + "/body", sse=False)
    if not response.is_success:
        raise problem_of(response)
    check = DownloadCheck.of(response.headers)
    while (chunk := (yield NEXT)) is not None:
        yield Emit(check.update(chunk))
    check.finish()
