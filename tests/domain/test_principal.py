"""Principals: token scopes, binding to runs, and the pinned readers and writers."""

from __future__ import annotations

import pytest

from domain.errors import Forbidden, NotFound
from domain.pins import AuthorizationPins
from domain.principal import Principal, Scope, ensure_reader, ensure_writer, may_read


def principal(sub: str = "alice", *scopes: str, runs: frozenset[str] | None = None) -> Principal:
    return Principal(sub, "tenant-a", frozenset(scopes), runs)


def test_a_token_with_the_scope_passes() -> None:
    principal("alice", "streams:read").require_scope(Scope.READ)


def test_a_token_without_the_scope_is_forbidden() -> None:
    with pytest.raises(Forbidden) as refused:
        principal("alice", "streams:read").require_scope(Scope.WRITE)
    assert refused.value.extra == {"scope": "streams:write"}


def test_admin_implies_every_scope() -> None:
    admin = principal("root", "streams:admin")
    for scope in Scope:
        admin.require_scope(scope)
    assert admin.is_admin
    assert not principal("alice", "streams:read", "streams:write").is_admin


def test_an_unbound_token_sees_every_run() -> None:
    principal("alice").require_run("any-run")


def test_a_token_bound_to_runs_sees_only_those_and_others_look_missing() -> None:
    bound = principal("alice", runs=frozenset({"run-1"}))
    bound.require_run("run-1")
    with pytest.raises(NotFound):
        bound.require_run("run-2")


def test_a_token_bound_to_no_run_sees_none() -> None:
    with pytest.raises(NotFound):
        principal("alice", runs=frozenset()).require_run("run-1")


def test_a_wildcard_lets_every_principal_read_and_write() -> None:
    pins = AuthorizationPins()
    ensure_reader(pins, principal("anyone"))
    ensure_writer(pins, principal("anyone"))


def test_listed_principals_only() -> None:
    pins = AuthorizationPins(readers=("bob",), writers=("alice",))
    assert may_read(pins, principal("bob"))
    assert not may_read(pins, principal("alice"))
    ensure_writer(pins, principal("alice"))
    with pytest.raises(Forbidden):
        ensure_writer(pins, principal("bob"))
    with pytest.raises(Forbidden):
        ensure_reader(pins, principal("alice"))


def test_an_empty_list_admits_no_one_but_an_admin() -> None:
    pins = AuthorizationPins(readers=(), writers=())
    with pytest.raises(Forbidden):
        ensure_reader(pins, principal("alice", "streams:read"))
    with pytest.raises(Forbidden):
        ensure_writer(pins, principal("alice", "streams:write"))
    ensure_reader(pins, principal("root", "streams:admin"))
    ensure_writer(pins, principal("root", "streams:admin"))


def test_the_subject_is_matched_exactly() -> None:
    pins = AuthorizationPins(readers=("bob",), writers=("bob",))
    assert not may_read(pins, principal("Bob"))
    assert not may_read(pins, principal("bo"))
