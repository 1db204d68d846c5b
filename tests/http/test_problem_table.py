"""The one error table: every domain refusal has a status, and its code is the class's own."""

from __future__ import annotations

import inspect

import pytest
from litestar.exceptions import NotFoundException, ValidationException

from domain import errors
from entrypoints.http.problems import DOMAIN_STATUSES, classify, problem_body, problem_headers

DOMAIN_ERRORS = [cls for _, cls in inspect.getmembers(errors, inspect.isclass)
                 if issubclass(cls, errors.DomainError)]

SPEC_STATUSES = {
    errors.InvalidIdentifier: 400, errors.InvalidCursor: 400, errors.FutureCursor: 400,
    errors.CursorPruned: 410, errors.Unauthenticated: 401, errors.Forbidden: 403,
    errors.NotFound: 404, errors.DefinitionConflict: 409, errors.StreamClosed: 409,
    errors.QuotaExhausted: 409, errors.Backpressure: 429, errors.AckRegression: 409,
    errors.AckBeyondHead: 400, errors.ConsumerScope: 403, errors.TooLarge: 413,
    errors.EgressDenied: 403, errors.WrongRegion: 421, errors.RunErased: 410,
    errors.ForbiddenContentClass: 422, errors.TooManySubscriptions: 429,
    errors.RegionFenced: 503,
}


@pytest.mark.parametrize("cls", DOMAIN_ERRORS, ids=lambda cls: cls.__name__)
def test_every_domain_error_is_in_the_table_and_answers_its_own_code(
        cls: type[errors.DomainError]) -> None:
    assert cls in DOMAIN_STATUSES
    refusal = cls.__new__(cls)  # classify reads only the class; some need extra arguments
    assert classify(refusal) == (DOMAIN_STATUSES[cls], cls.code)


@pytest.mark.parametrize(("cls", "status"), SPEC_STATUSES.items(),
                         ids=lambda value: getattr(value, "__name__", str(value)))
def test_statuses_are_the_contracts(cls: type, status: int) -> None:
    assert DOMAIN_STATUSES[cls] == status


def test_the_pruned_body_carries_the_resync_fields() -> None:
    body = problem_body(errors.CursorPruned(requested=3, earliest=10, latest=20))
    assert body == {"type": "urn:runnel:problem:cursor_pruned", "title": "Gone", "status": 410,
                    "detail": body["detail"], "code": "cursor_pruned", "requested": 3,
                    "earliest": 10, "latest": 20, "reason": "resync"}


def test_a_429_carries_retry_after_and_a_401_www_authenticate() -> None:
    pressure = errors.Backpressure("full", retry_after_seconds=7)
    assert problem_headers(pressure, 429)["Retry-After"] == "7"
    assert problem_headers(errors.TooManySubscriptions("many"), 429)["Retry-After"] == "1"
    assert "Bearer" in problem_headers(errors.Unauthenticated("no"), 401)["WWW-Authenticate"]


def test_extra_fields_never_override_the_standard_ones() -> None:
    body = problem_body(errors.InvalidRecord("bad", status=999, code="x", field="payload"))
    assert (body["status"], body["code"], body["field"]) == (422, "invalid_record", "payload")


def test_framework_and_unforeseen_errors_have_stable_codes() -> None:
    assert classify(ValidationException("bad")) == (400, "invalid_request")
    assert classify(NotFoundException()) == (404, "not_found")
    assert classify(RecursionError()) == (400, "invalid_request")
    assert classify(RuntimeError("boom")) == (500, "internal_error")
    assert "boom" not in problem_body(RuntimeError("boom"))["detail"]

    class NewRefusal(errors.DomainError):
        code = "new_refusal"

    assert classify(NewRefusal("x")) == (422, "new_refusal")
