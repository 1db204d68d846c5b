"""The token settings from the command line: secrets too short to sign, lifetimes above the
maximum, issuer and audience in minted tokens, and a JWKS file that cannot serve, each
refused with one line and exit status 2 before anything starts (ADR 0024)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from entrypoints.auth.tokens import TokenPolicy, verify_token

REPO = Path(__file__).parents[2]
SECRET = "cli-token-secret-0123456789abcdef0123456789"
TOKEN_ARGS = ("token", "--tenant", "acme", "--sub", "ci", "--scopes", "streams:read")


def runnel(*args: str, env: dict[str, str], data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "entrypoints.commands", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "RUNNEL_DATA_DIR": str(data_dir), **env})


def assert_one_line_refusal(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("secret", ["", "x", "s" * 31], ids=["empty", "1-byte", "31-bytes"])
@pytest.mark.parametrize("command", [TOKEN_ARGS, ("serve", "--port", "0"), ("worker",)],
                         ids=["token", "serve", "worker"])
def test_a_secret_under_32_bytes_is_refused_with_one_line(
        tmp_path: Path, secret: str, command: tuple[str, ...]) -> None:
    result = runnel(*command, env={"RUNNEL_JWT_SECRET": secret, "RUNNEL_STORAGE": "postgres"},
                    data_dir=tmp_path)
    assert_one_line_refusal(result, f"runnel {command[0]}: invalid configuration: "
                            "RUNNEL_JWT_SECRET: must be at least 32 bytes")
    assert list(tmp_path.iterdir()) == []  # refused before anything started


def test_a_short_local_secret_file_is_refused_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "jwt-secret").write_text("short")
    env = {key: value for key, value in os.environ.items() if key != "RUNNEL_JWT_SECRET"}
    result = subprocess.run([sys.executable, "-m", "entrypoints.commands", *TOKEN_ARGS],
                            capture_output=True, text=True, cwd=REPO, timeout=120,
                            env={**env, "RUNNEL_DATA_DIR": str(tmp_path)})
    assert_one_line_refusal(result, "jwt-secret: must be at least 32 bytes, not 5")


def test_token_refuses_a_ttl_above_the_maximum_lifetime(tmp_path: Path) -> None:
    env = {"RUNNEL_JWT_SECRET": SECRET}
    century = str(100 * 365 * 86400)
    assert_one_line_refusal(runnel(*TOKEN_ARGS, "--ttl", century, env=env, data_dir=tmp_path),
                            "--ttl must be 1 to 86400 seconds")
    assert_one_line_refusal(runnel(*TOKEN_ARGS, "--ttl", "86401", env=env, data_dir=tmp_path),
                            "RUNNEL_MAX_TOKEN_LIFETIME_SECONDS")
    longer = {**env, "RUNNEL_MAX_TOKEN_LIFETIME_SECONDS": "172800"}
    minted = runnel(*TOKEN_ARGS, "--ttl", "172800", env=longer, data_dir=tmp_path)
    assert minted.returncode == 0, minted.stderr
    verify_token(minted.stdout.strip(), SECRET, TokenPolicy(max_lifetime_seconds=172800))


def test_token_sets_the_configured_issuer_and_audience(tmp_path: Path) -> None:
    env = {"RUNNEL_JWT_SECRET": SECRET, "RUNNEL_JWT_ISSUER": "https://runnel.example",
           "RUNNEL_JWT_AUDIENCE": "streams"}
    minted = runnel(*TOKEN_ARGS, "--ttl", "60", env=env, data_dir=tmp_path)
    assert minted.returncode == 0, minted.stderr
    policy = TokenPolicy(issuer="https://runnel.example", audience="streams")
    assert verify_token(minted.stdout.strip(), SECRET, policy).tenant == "acme"


def test_serve_refuses_a_jwks_file_that_cannot_serve_with_one_line(tmp_path: Path) -> None:
    result = runnel("serve", "--port", "0", data_dir=tmp_path / "data",
                    env={"RUNNEL_JWT_SECRET": SECRET, "RUNNEL_STORAGE": "memory",
                         "RUNNEL_JWT_JWKS_FILE": str(tmp_path / "missing.json")})
    assert_one_line_refusal(result, "RUNNEL_JWT_JWKS_FILE", "missing.json")
    both = runnel("serve", "--port", "0", data_dir=tmp_path / "data",
                  env={"RUNNEL_JWT_SECRET": SECRET, "RUNNEL_STORAGE": "memory",
                       "RUNNEL_JWT_JWKS_FILE": "a.json",
                       "RUNNEL_JWT_JWKS_URL": "https://idp.example/jwks"})
    assert_one_line_refusal(both, "not both")
