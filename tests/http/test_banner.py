"""What `runnel serve` prints: a ready-made admin token only on a local default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import SecretStr

from entrypoints.cli import _banner
from entrypoints.settings import Settings
from entrypoints.tokens import verify_token

SECRET = "banner-secret-0123456789abcdef0123456789abcdef"
TOKEN_LINE = re.compile(r"export RUNNEL_TOKEN=(eyJ\S+)")


def banner(tmp_path: Path, **fields: object) -> str:
    settings = Settings(jwt_secret=SecretStr(SECRET), data_dir=tmp_path, **fields)
    return _banner(settings, "127.0.0.1", 8080)


def test_a_configured_database_gets_no_token_but_how_to_mint_one(tmp_path: Path) -> None:
    printed = banner(tmp_path, database_url="postgresql://db.example/runnel")
    assert TOKEN_LINE.search(printed) is None, printed
    assert "eyJ" not in printed  # no JWT anywhere
    assert "runnel token --tenant" in printed
    assert printed.splitlines()[-1].startswith("  curl ")  # the banner's last line


@pytest.mark.parametrize("fields", [{}, {"storage": "memory"},
                                    {"storage": "memory", "database_url": "postgresql://x/y"}])
def test_the_local_defaults_print_a_working_dev_token(tmp_path: Path,
                                                      fields: dict[str, object]) -> None:
    match = TOKEN_LINE.search(banner(tmp_path, **fields))
    assert match is not None
    assert verify_token(match.group(1), SECRET).sub == "developer"


def test_the_banner_points_at_the_openapi_document(tmp_path: Path) -> None:
    assert "http://127.0.0.1:8080/schema/openapi.json" in banner(tmp_path, storage="memory")
