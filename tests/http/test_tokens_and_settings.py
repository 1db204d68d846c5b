"""Token verification refuses every malformed claim; the local JWT secret is made once, in
a data directory that nobody else lists or writes (ADR 0053)."""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jwt
import pytest
from pydantic import ValidationError

from domain.errors import Unauthenticated
from entrypoints.auth.tokens import mint_token, verify_token
from entrypoints.composition.settings import ConfigurationError, Settings, local_jwt_secret

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


def test_a_new_data_directory_is_private_whatever_the_umask(tmp_path: Path) -> None:
    data_dir = tmp_path / "parent" / ".runnel"
    previous = os.umask(0o000)
    try:
        local_jwt_secret(data_dir)
    finally:
        os.umask(previous)
    assert data_dir.stat().st_mode & 0o777 == 0o700
    assert (data_dir / "jwt-secret").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(("before", "after"), [(0o755, 0o711), (0o777, 0o711),
                                               (0o750, 0o710), (0o704, 0o700)])
def test_an_existing_data_directory_others_could_list_is_tightened_and_said(
        tmp_path: Path, before: int, after: int, caplog: pytest.LogCaptureFixture) -> None:
    data_dir = tmp_path / ".runnel"
    data_dir.mkdir()
    os.chmod(data_dir, before)
    with caplog.at_level(logging.WARNING):
        Settings(data_dir=data_dir).resolved_jwt_secret()
    assert data_dir.stat().st_mode & 0o777 == after
    assert f"was mode {before:04o}" in caplog.text and str(data_dir) in caplog.text


def test_a_private_data_directory_is_left_as_it_is(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    data_dir = tmp_path / ".runnel"
    data_dir.mkdir()
    for mode in (0o700, 0o711):  # execute-only lists nothing (the embedded server's, as root)
        os.chmod(data_dir, mode)
        with caplog.at_level(logging.WARNING):
            Settings(data_dir=data_dir).resolved_jwt_secret()
        assert data_dir.stat().st_mode & 0o777 == mode
    assert "was mode" not in caplog.text


def test_a_data_directory_of_another_user_is_refused_and_left_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its owner could have put a secret of their own in it (and mint admin tokens)."""
    data_dir = tmp_path / ".runnel"
    data_dir.mkdir()
    os.chmod(data_dir, 0o777)
    monkeypatch.setattr(os, "geteuid", lambda: data_dir.stat().st_uid + 1)
    with pytest.raises(ConfigurationError, match=r"belongs to uid .*RUNNEL_DATA_DIR"):
        Settings(data_dir=data_dir).resolved_jwt_secret()
    assert data_dir.stat().st_mode & 0o777 == 0o777
    assert list(data_dir.iterdir()) == []


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
