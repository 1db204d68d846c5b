"""Token verification refuses every malformed claim; the local JWT secret is made once."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jwt
import pytest
from pydantic import ValidationError

from domain.errors import Unauthenticated
from entrypoints.settings import Settings, local_jwt_secret
from entrypoints.tokens import mint_token, verify_token

SECRET = "unit-secret-0123456789abcdef0123456789abcdef"


def signed(**claims: Any) -> str:
    base = {"sub": "alice", "tenant": "t1", "scopes": ["streams:read"],
            "exp": int(time.time()) + 60}
    return jwt.encode({**base, **claims}, SECRET, algorithm="HS256")


def test_a_minted_token_verifies_to_its_principal() -> None:
    principal = verify_token(mint_token(SECRET, tenant="t1", sub="alice",
                                        scopes=["streams:read"], runs=["r1"]), SECRET)
    assert (principal.sub, principal.tenant, principal.scopes, principal.runs) == (
        "alice", "t1", frozenset({"streams:read"}), frozenset({"r1"}))
    assert principal.token_id


@pytest.mark.parametrize("token", [
    signed(exp=int(time.time()) - 3600),
    signed(tenant="a/b"),
    signed(tenant=""),
    signed(scopes="streams:read"),
    signed(scopes=[1]),
    signed(runs="r1"),
    signed(sub=""),
    jwt.encode({"sub": "a", "tenant": "t", "scopes": []}, SECRET, algorithm="HS256"),
    jwt.encode({"sub": "a", "tenant": "t", "scopes": [], "exp": int(time.time()) + 60},
               SECRET * 2, algorithm="HS512"),
    jwt.encode({"sub": "a", "tenant": "t", "scopes": [], "exp": int(time.time()) + 60},
               "another-secret-0123456789abcdef0123456789", algorithm="HS256"),
], ids=["expired", "tenant-slash", "tenant-empty", "scopes-string", "scopes-ints",
        "runs-string", "sub-empty", "no-exp", "other-algorithm", "other-secret"])
def test_malformed_tokens_are_unauthenticated(token: str) -> None:
    with pytest.raises(Unauthenticated):
        verify_token(token, SECRET)


def test_the_local_secret_is_created_once_even_by_racing_processes(tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        secrets = set(pool.map(lambda _: local_jwt_secret(tmp_path), range(16)))
    assert len(secrets) == 1
    assert (tmp_path / "jwt-secret").stat().st_mode & 0o777 == 0o600
    assert list(tmp_path.iterdir()) == [tmp_path / "jwt-secret"]
    assert local_jwt_secret(tmp_path) in secrets


def test_settings_come_from_runnel_variables(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    for name in ("RUNNEL_DATABASE_URL", "RUNNEL_STORAGE", "RUNNEL_JWT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RUNNEL_REGION", "eu-1")
    monkeypatch.setenv("RUNNEL_KEEPALIVE_SECONDS", "2.5")
    monkeypatch.setenv("RUNNEL_DATA_DIR", str(tmp_path))
    settings = Settings()
    assert (settings.region, settings.keepalive_seconds, settings.storage) == ("eu-1", 2.5,
                                                                              "postgres")
    assert settings.database_url is None
    assert settings.node().region == "eu-1"
    assert settings.resolved_jwt_secret() == (tmp_path / "jwt-secret").read_text()
    monkeypatch.setenv("RUNNEL_JWT_SECRET", "configured-0123456789abcdef0123456789")
    assert Settings().resolved_jwt_secret() == "configured-0123456789abcdef0123456789"


def test_the_wait_service_defaults_to_none_with_postgres_and_memory_in_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RUNNEL_WAIT_SERVICE", "RUNNEL_WEBHOOK_URL", "RUNNEL_STORAGE"):
        monkeypatch.delenv(name, raising=False)
    assert Settings().wait_service_kind() == "none"
    assert Settings(storage="memory").wait_service_kind() == "memory"
    monkeypatch.setenv("RUNNEL_WAIT_SERVICE", "")  # set but empty: unset
    assert Settings().wait_service_kind() == "none"
    monkeypatch.setenv("RUNNEL_WAIT_SERVICE", "none")
    assert Settings(storage="memory").wait_service_kind() == "none"
    monkeypatch.setenv("RUNNEL_WAIT_SERVICE", "webhook")
    monkeypatch.setenv("RUNNEL_WEBHOOK_URL", "http://127.0.0.1:9/hook")
    monkeypatch.setenv("RUNNEL_WEBHOOK_SECRET", "s" * 32)
    assert Settings().wait_service_kind() == "webhook"


@pytest.mark.parametrize(("pins", "complaint"), [
    ({"wait_service": "memory"}, "RUNNEL_WAIT_SERVICE=memory needs RUNNEL_STORAGE=memory"),
    ({"wait_service": "webhook"}, "needs RUNNEL_WEBHOOK_URL"),
    ({"wait_service": "notify", "storage": "memory"}, "needs RUNNEL_STORAGE=postgres"),
    ({"wait_service": "kafka"}, "wait_service"),
], ids=["memory-on-postgres", "webhook-without-url", "notify-in-memory", "unknown"])
def test_a_wait_service_that_cannot_work_is_refused_at_startup(
        monkeypatch: pytest.MonkeyPatch, pins: dict[str, Any], complaint: str) -> None:
    for name in ("RUNNEL_WAIT_SERVICE", "RUNNEL_WEBHOOK_URL", "RUNNEL_STORAGE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValidationError, match=complaint):
        Settings(**pins)
