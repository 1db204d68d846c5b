"""The revoked-token contract: what every RevokedTokens adapter must do, written once.

Subclasses provide a fixture `revoked` and a fixture `other_node`, a second adapter on the
same storage (another process's view of it, where the storage can be shared), and
`wait_for_ring(rings)`, which returns once `rings` (a list a watcher appends to) is not
empty. Every test uses its own token ids, so a shared database need not be emptied.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from application.ports.access import Revocation, RevokedTokens

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def later(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def token_id() -> str:
    return f"jti-{uuid4().hex[:12]}"


def ids(active: object) -> set[tuple[str, str | None]]:
    assert isinstance(active, list)
    return {(item.token_id, item.tenant) for item in active}


class RevokedTokensContract:
    async def test_a_revocation_is_active_until_it_expires(
            self, revoked: RevokedTokens, other_node: RevokedTokens) -> None:
        jti = token_id()
        await revoked.revoke(Revocation(jti, "t1", later(60)), NOW)
        assert (jti, "t1") in ids(list(await other_node.active(NOW)))
        assert (jti, "t1") in ids(list(await other_node.active(later(59))))
        assert (jti, "t1") not in ids(list(await other_node.active(later(60))))

    async def test_a_revocation_without_tenant_is_kept_apart_from_one_with(
            self, revoked: RevokedTokens) -> None:
        jti = token_id()
        await revoked.revoke(Revocation(jti, None, later(60)), NOW)
        await revoked.revoke(Revocation(jti, "t2", later(30)), NOW)
        mine = {item for item in ids(list(await revoked.active(NOW))) if item[0] == jti}
        assert mine == {(jti, None), (jti, "t2")}

    async def test_revoking_again_keeps_the_later_expiry(self, revoked: RevokedTokens) -> None:
        jti = token_id()
        await revoked.revoke(Revocation(jti, "t1", later(120)), NOW)
        await revoked.revoke(Revocation(jti, "t1", later(10)), NOW)
        assert (jti, "t1") in ids(list(await revoked.active(later(60))))
        await revoked.revoke(Revocation(jti, "t1", later(300)), NOW)
        [kept] = [item for item in await revoked.active(later(200)) if item.token_id == jti]
        assert kept.expires_at == later(300)

    async def test_a_revocation_forgets_the_expired_ones(
            self, revoked: RevokedTokens, other_node: RevokedTokens) -> None:
        gone, kept, fresh = token_id(), token_id(), token_id()
        await revoked.revoke(Revocation(gone, None, later(10)), NOW)
        await revoked.revoke(Revocation(kept, None, later(100)), NOW)
        await other_node.revoke(Revocation(fresh, None, later(200)), later(50))
        # Asked about a time before `gone` expired, it is no longer there: it was pruned.
        assert ids(list(await revoked.active(NOW))) >= {(kept, None), (fresh, None)}
        assert (gone, None) not in ids(list(await revoked.active(NOW)))

    async def test_watchers_are_rung_after_a_revocation_on_any_node(
            self, revoked: RevokedTokens, other_node: RevokedTokens) -> None:
        rings: list[None] = []
        revoked.watch(lambda: rings.append(None))
        await other_node.revoke(Revocation(token_id(), "t1", later(60)), NOW)
        await self.wait_for_ring(rings)  # type: ignore[attr-defined]
        assert rings
