"""What `runnel serve` prints (ADR 0053): a ready-made dev token only on a local default
(the embedded Postgres or memory), bound to loopback, signed with the secret the server
generated itself; read and write, never admin, for 8 hours at most. Anywhere else, the
`runnel token` command to run instead."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from pydantic import SecretStr

from entrypoints.auth.tokens import verify_token
from entrypoints.commands.banner import _banner
from entrypoints.composition.settings import Settings

SECRET = "banner-secret-0123456789abcdef0123456789abcdef"
TOKEN_LINE = re.compile(r"export RUNNEL_TOKEN=(eyJ\S+)")


def banner(tmp_path: Path, host: str = "127.0.0.1", **fields: object) -> str:
    """The banner of a server with its own generated secret, unless `fields` set one."""
    settings = Settings(data_dir=tmp_path, **fields)
    return _banner(settings, host, 8080)


def generated_secret(tmp_path: Path) -> str:
    return (tmp_path / "jwt-secret").read_text().strip()


def assert_no_token_but_how_to_mint_one(printed: str) -> None:
    assert TOKEN_LINE.search(printed) is None, printed
    assert "eyJ" not in printed  # no JWT anywhere
    assert "token --tenant dev --sub " in printed
    assert printed.splitlines()[-1].startswith("  curl ")  # the banner's last line


@pytest.mark.parametrize("fields", [
    {"database_url": "postgresql://db.example/runnel"},
    {"jwt_secret": SecretStr(SECRET)},
    {"storage": "memory", "jwt_secret": SecretStr(SECRET)},
])
def test_a_configured_database_or_secret_gets_no_token_but_how_to_mint_one(
        tmp_path: Path, fields: dict[str, object]) -> None:
    assert_no_token_but_how_to_mint_one(banner(tmp_path, **fields))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "runnel.example"])
def test_a_server_reachable_off_this_machine_prints_no_token(tmp_path: Path,
                                                             host: str) -> None:
    assert_no_token_but_how_to_mint_one(banner(tmp_path, host=host))


def test_a_server_that_takes_no_hs256_token_prints_none_and_no_command(
        tmp_path: Path) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": []}))
    printed = banner(tmp_path, jwt_jwks_file=jwks, jwt_algorithms=("RS256",))
    assert "eyJ" not in printed and "token --tenant" not in printed
    assert "issuer of its JWKS" in printed


@pytest.mark.parametrize(("host", "fields"), [
    ("127.0.0.1", {}), ("::1", {}), ("localhost", {}), ("127.0.0.1", {"storage": "memory"}),
    ("127.0.0.1", {"storage": "memory", "database_url": "postgresql://x/y"}),
])
def test_the_local_defaults_print_a_dev_token_that_cannot_administer(
        tmp_path: Path, host: str, fields: dict[str, object]) -> None:
    match = TOKEN_LINE.search(banner(tmp_path, host=host, **fields))
    assert match is not None
    principal = verify_token(match.group(1), generated_secret(tmp_path))
    assert principal.sub == "developer" and principal.tenant == "dev"
    assert principal.scopes == frozenset({"streams:read", "streams:write"})
    assert principal.expires_at is not None
    assert 8 * 3600 - 60 < principal.expires_at - time.time() <= 8 * 3600


def test_the_dev_token_lives_no_longer_than_the_servers_lifetime_bound(
        tmp_path: Path) -> None:
    match = TOKEN_LINE.search(banner(tmp_path, max_token_lifetime_seconds=600))
    assert match is not None
    expires_at = verify_token(match.group(1), generated_secret(tmp_path)).expires_at
    assert expires_at is not None and 540 < expires_at - time.time() <= 600


def test_the_banner_points_at_the_openapi_document(tmp_path: Path) -> None:
    assert "http://127.0.0.1:8080/schema/openapi.json" in banner(tmp_path, storage="memory")
