"""Errors as RFC 9457 `application/problem+json`, from ONE table: exception class → status
(and, for other than domain refusals, which carry their own, code).

The body is `type`, `title`, `status`, `detail`, `code`, plus the error's own
`extra` fields (e.g. the 410 body's `requested`, `earliest`, `latest`,
`reason`). A 429 carries `Retry-After`, a 401 `WWW-Authenticate`. Framework
errors (validation, routing, body size) get the same shape with their own
stable codes; anything unforeseen is a 500 `internal_error` whose detail says
nothing about the cause (the log has it). A detail never carries a query string
(the framework's validation detail names the URL; a subscription URL carries a
credential), nor anything shaped like a token (ADR 0023). A 5xx body carries the
request's `request_id`, which every log line of that request carries too (ADR 0031).
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import (
    ClientException,
    HTTPException,
    MethodNotAllowedException,
    NotAuthorizedException,
    NotFoundException,
    PermissionDeniedException,
    SerializationException,
    TooManyRequestsException,
    ValidationException,
)
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.types import Send

from application.ports.errors import (
    NodeDraining,
    ObjectRegionUnavailable,
    ObjectStoreUnavailable,
    StoreFull,
    StoreUnavailable,
)
from domain import errors as e
from entrypoints.auth.token_redaction import redact_tokens
from entrypoints.observability.request_context import current_request

log = logging.getLogger("runnel.http")

PROBLEM_MEDIA_TYPE = "application/problem+json"
STANDARD_FIELDS = frozenset({"type", "title", "status", "detail", "code"})
STORE_RETRY_AFTER_SECONDS = 2
"""What a 503 `store_unavailable` asks a client to wait before retrying."""


class Problem(msgspec.Struct):
    """RFC 9457 problem details; refusals add their own fields (e.g. `field`, `requested`)."""

    type: str
    title: str
    status: int
    detail: str
    code: str


class HeadersTooLarge(Exception):
    """The request headers exceed the node's ceiling."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"request headers exceed {limit} bytes")
        self.limit = limit


class ClientDisconnected(Exception):
    """The client closed its connection while its request body was still arriving."""


CLIENT_CLOSED_REQUEST = 499
"""Not in RFC 9110: the status nginx logs for a request its client abandoned. Nobody reads
the answer; it keeps such requests out of the 5xx figures."""


class NotReady(Exception):
    """The node cannot serve: its store does not answer."""


DOMAIN_STATUSES: dict[type[e.DomainError], int] = {
    # Domain refusals; each answers with its class's own `code`.
    e.InvalidIdentifier: 400,
    e.InvalidCursor: 400,
    e.FutureCursor: 400,
    e.CursorTooLarge: 400,
    e.TooManyStreamsToFollow: 400,
    e.InvalidLimit: 400,
    e.InvalidWait: 400,
    e.AckBeyondHead: 400,
    e.InvalidDefinition: 422,
    e.ForbiddenContentClass: 422,
    e.InvalidRecord: 422,
    e.InvalidContentType: 422,
    e.RedactionUnenforceable: 422,
    e.DigestMismatch: 422,
    e.SizeMismatch: 422,
    e.Unauthenticated: 401,
    e.Forbidden: 403,
    e.NotIntentOwner: 403,
    e.ConsumerScope: 403,
    e.EgressDenied: 403,
    e.NotFound: 404,
    e.ConsumerNotFound: 404,
    e.DefinitionConflict: 409,
    e.StreamDeleted: 409,
    e.StreamClosed: 409,
    e.QuotaExhausted: 409,
    e.TooManyStreams: 409,
    e.AckRegression: 409,
    e.StreamHeld: 409,
    e.NotAnInputStream: 409,
    e.ObjectNotUploaded: 409,
    e.ObjectStateConflict: 409,
    e.ObjectIntentConflict: 409,
    e.CursorPruned: 410,
    e.RunErased: 410,
    e.TooLarge: 413,
    e.WrongRegion: 421,
    e.Backpressure: 429,
    e.TooManySubscriptions: 429,
    e.RegionFenced: 503,
    e.DomainError: 422,
}

PROBLEMS: dict[type[Exception], tuple[int, str]] = {
    # The node and the framework.
    HeadersTooLarge: (431, "headers_too_large"),
    ClientDisconnected: (CLIENT_CLOSED_REQUEST, "client_disconnected"),
    NotReady: (503, "not_ready"),
    # The stream pins its bodies to a region this node has no object store for.
    ObjectRegionUnavailable: (503, "object_region_unavailable"),
    # S3 (or the node's object store) unreachable or failing; the step is safe to retry.
    ObjectStoreUnavailable: (503, "object_store_unavailable"),
    # The database refused or did not answer in time; a write's outcome is unknown.
    StoreUnavailable: (503, "store_unavailable"),
    # The database's disk is full: nothing was stored; the same request works once it is not.
    StoreFull: (503, "insufficient_storage"),
    NodeDraining: (503, "shutting_down"),
    ValidationException: (400, "invalid_request"),
    SerializationException: (400, "invalid_body"),
    NotAuthorizedException: (401, "unauthenticated"),
    PermissionDeniedException: (403, "forbidden"),
    NotFoundException: (404, "not_found"),
    MethodNotAllowedException: (405, "method_not_allowed"),
    RequestEntityTooLarge: (413, "too_large"),
    TooManyRequestsException: (429, "too_many_requests"),
    ClientException: (400, "invalid_request"),
    HTTPException: (500, "http_error"),
    # Raised by the JSON decoder (or a rule walking the value) for input nested too deeply.
    RecursionError: (400, "invalid_request"),
    Exception: (500, "internal_error"),
}


def classify(exc: BaseException) -> tuple[int, str]:
    """The table entry of the closest class in the exception's MRO; a domain refusal's
    code is its own."""
    if isinstance(exc, e.DomainError):
        return next(DOMAIN_STATUSES[cls] for cls in type(exc).__mro__
                    if cls in DOMAIN_STATUSES), exc.code
    for cls in type(exc).__mro__:
        if cls in PROBLEMS:
            status, code = PROBLEMS[cls]
            if isinstance(exc, HTTPException):
                # The framework may raise a class with another status than its default.
                status = exc.status_code
            return status, code
    return 500, "internal_error"


def problem_body(exc: BaseException) -> dict[str, Any]:
    status, code = classify(exc)
    body: dict[str, Any] = {
        "type": f"urn:runnel:problem:{code}",
        "title": _title(status),
        "status": status,
        "detail": redact_tokens(_detail(exc, status)),
        "code": code,
    }
    if isinstance(exc, e.DomainError):
        body.update({k: v for k, v in exc.extra.items() if k not in STANDARD_FIELDS})
    elif isinstance(exc, ValidationException) and exc.extra:
        body["errors"] = exc.extra
    elif isinstance(exc, HeadersTooLarge):
        body["limit"] = exc.limit
    return body


def _title(status: int) -> str:
    if status == CLIENT_CLOSED_REQUEST:
        return "Client Closed Request"
    return HTTPStatus(status).phrase


def _detail(exc: BaseException, status: int) -> str:
    if isinstance(exc, e.DomainError):
        return exc.detail
    if isinstance(exc, ValidationException):
        return str(exc.detail).partition("?")[0]  # "Validation failed for GET /path"
    if isinstance(exc, HTTPException):
        return str(exc.detail)
    if isinstance(exc, HeadersTooLarge | NotReady | ObjectRegionUnavailable | ClientDisconnected
                  | NodeDraining):
        return str(exc)
    if isinstance(exc, StoreFull):
        return ("the database is out of disk space: nothing of this request was stored; "
                "retry it later")
    if isinstance(exc, StoreUnavailable):
        return ("the database did not answer in time; a write may or may not have been "
                "stored: retry it with the same idempotency keys")
    if isinstance(exc, ObjectStoreUnavailable):
        return ("the object store did not answer or failed; the step may or may not have "
                "taken effect: retry it")
    if isinstance(exc, RecursionError):
        return "the JSON is nested too deeply"
    return HTTPStatus(status).description or HTTPStatus(status).phrase


def problem_headers(exc: BaseException, status: int) -> dict[str, str]:
    headers: dict[str, str] = {}
    if status == 429:
        retry = exc.extra.get("retry_after_seconds", 1) if isinstance(exc, e.DomainError) else 1
        headers["Retry-After"] = str(max(1, int(retry)))
    if isinstance(exc, StoreUnavailable):
        headers["Retry-After"] = str(STORE_RETRY_AFTER_SECONDS)
    if isinstance(exc, NodeDraining | ObjectStoreUnavailable):
        headers["Retry-After"] = "1"
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="runnel"'
    if isinstance(exc, HTTPException) and exc.headers:
        headers.update(exc.headers)
    return headers


async def send_problem(send: Send, exc: Exception) -> None:
    """Answer a refusal made before the request reaches Litestar (pure ASGI): the same
    problem+json body and headers `problem_response` gives. Only for refusals that are
    neither logged nor 5xx (`HeadersTooLarge`)."""
    body = problem_body(exc)
    encoded = msgspec.json.encode(body)
    headers = [(b"content-type", PROBLEM_MEDIA_TYPE.encode()),
               (b"content-length", str(len(encoded)).encode()),
               *((name.lower().encode(), value.encode())
                 for name, value in problem_headers(exc, body["status"]).items())]
    await send({"type": "http.response.start", "status": body["status"], "headers": headers})
    await send({"type": "http.response.body", "body": encoded, "more_body": False})


def problem_response(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Litestar's exception handler for every exception class."""
    body = problem_body(exc)
    status = body["status"]
    handled = current_request()
    if status >= 500 and handled is not None:  # what an operator greps the log for
        body["request_id"] = handled.request_id
    if isinstance(exc, StoreUnavailable):  # expected, and the store's log says why
        log.warning("store unavailable on %s %s: %r", request.method,
                    request.scope.get("path_template", request.url.path), exc.__cause__)
    elif isinstance(exc, ObjectStoreUnavailable):  # an outage, said as such
        log.warning("object store unavailable on %s %s: %s", request.method,
                    request.scope.get("path_template", request.url.path), exc)
    elif status >= 500 and not isinstance(exc, NotReady | e.RegionFenced | NodeDraining):
        log.error("unhandled error on %s %s", request.method, request.scope.get("path_template",
                                                                                request.url.path),
                  exc_info=exc)
    return Response(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE,
                    headers=problem_headers(exc, status))
