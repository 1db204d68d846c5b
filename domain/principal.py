"""Who is asking: the authenticated principal and what its token allows."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from domain.errors import Forbidden, NotFound
from domain.pins import AuthorizationPins


class Scope(StrEnum):
    READ = "streams:read"
    WRITE = "streams:write"
    ADMIN = "streams:admin"


@dataclass(frozen=True)
class Principal:
    """A verified token: subject, tenant, scopes and an optional binding to runs."""

    sub: str
    tenant: str
    scopes: frozenset[str]
    runs: frozenset[str] | None = None
    token_id: str | None = None
    expires_at: float | None = None
    """The token's `exp` (seconds since the epoch): a subscription ends there (ADR 0023)."""
    parent_token_id: str | None = None
    """For a subscribe token, the `jti` of the API token it was minted from: revoking
    either refuses it (ADR 0060)."""

    def require_scope(self, scope: Scope) -> None:
        if scope.value not in self.scopes and Scope.ADMIN.value not in self.scopes:
            raise Forbidden(f"token lacks scope {scope.value}", scope=scope.value)

    def require_run(self, run_id: str) -> None:
        """A token bound to runs sees no other run: it answers as if the run did not exist."""
        if self.runs is not None and run_id not in self.runs:
            raise NotFound("run not found")

    @property
    def is_admin(self) -> bool:
        return Scope.ADMIN.value in self.scopes


def _listed(principal: Principal, allowed: tuple[str, ...]) -> bool:
    return "*" in allowed or principal.sub in allowed or principal.is_admin


def names_reader(pins: AuthorizationPins, sub: str) -> bool:
    """Whether the readers pin names `sub`, or everyone (`*`)."""
    return "*" in pins.readers or sub in pins.readers


def may_read(pins: AuthorizationPins, principal: Principal, content: bool = False) -> bool:
    """An admin manages every stream (its definition and status) but reads record content
    only where the readers pin names it."""
    if content:
        return names_reader(pins, principal.sub)
    return _listed(principal, pins.readers)


def ensure_reader(pins: AuthorizationPins, principal: Principal, content: bool = False) -> None:
    if not may_read(pins, principal, content):
        raise Forbidden("principal is not among the stream's readers")


def ensure_writer(pins: AuthorizationPins, principal: Principal) -> None:
    if not _listed(principal, pins.writers):
        raise Forbidden("principal is not among the stream's writers")
