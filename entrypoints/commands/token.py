"""`runnel token`: mint a bearer token with the server's own secret, or refuse.

Rules (ADR 0036):
- the secret is the server's: `RUNNEL_JWT_SECRET`, else the `jwt-secret` file that
  `runnel serve` created under `RUNNEL_DATA_DIR`. This command never creates one: a
  token signed with a fresh secret would only be refused by the server, so a missing
  file is a refusal that names the path it looked at;
- a server that accepts no HS256 token (a JWKS without `HS256` in
  `RUNNEL_JWT_ALGORITHMS`) gets no token from here either;
- every claim is checked as the server will check it (scopes among the known ones,
  tenant and run ids in the id alphabet, `--ttl` within the lifetime bound), so what is
  printed is a token the server accepts;
- a refusal is one line on stderr and exit status 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from domain.errors import InvalidIdentifier
from domain.identifiers import validate_id
from domain.principal import Scope
from entrypoints.auth.tokens import ALGORITHM, MAX_RUNS, mint_token
from entrypoints.composition.settings import (
    JWT_SECRET_FILE,
    ConfigurationError,
    Settings,
    secret_problem,
)

MAX_SUBJECT_LENGTH = 256
KNOWN_SCOPES = tuple(scope.value for scope in Scope)


class TokenRefused(ValueError):
    """Why no token is printed (one line)."""


def server_secret(settings: Settings) -> str:
    """The secret `runnel serve` signs and verifies with, read without creating anything."""
    if settings.jwt_secret is not None:
        return settings.jwt_secret.get_secret_value()
    path = (settings.data_dir / JWT_SECRET_FILE).resolve()
    if not path.is_file():
        raise TokenRefused(
            f"no server secret found: RUNNEL_JWT_SECRET is unset and {path} does not exist. "
            "`runnel serve` creates that file on its first start under its RUNNEL_DATA_DIR "
            f"(default .runnel, in the directory it runs from): run this command there, or "
            "set RUNNEL_DATA_DIR or RUNNEL_JWT_SECRET as the server has them")
    secret = _read(path)
    problem = secret_problem(secret)
    if problem is not None:
        raise ConfigurationError(f"{path}: {problem}")
    return secret


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as error:
        raise TokenRefused(f"cannot read {path}: {error.strerror}") from None


def scopes_of(text: str) -> list[str]:
    """`--scopes`: a comma-separated list of known scopes, at least one, each once."""
    scopes = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [scope for scope in scopes if scope not in KNOWN_SCOPES]
    if unknown or not scopes:
        named = f"unknown scope {', '.join(map(repr, unknown))}" if unknown else "no scope"
        raise TokenRefused(f"--scopes: {named}; use a comma-separated list of "
                           f"{', '.join(KNOWN_SCOPES)}")
    if len(set(scopes)) != len(scopes):
        raise TokenRefused("--scopes: a scope is listed twice")
    return scopes


def runs_of(text: str | None) -> list[str] | None:
    if text is None:
        return None
    runs = [item.strip() for item in text.split(",") if item.strip()]
    if not runs:
        raise TokenRefused("--runs: name at least one run id (or leave --runs out)")
    if len(runs) > MAX_RUNS:
        raise TokenRefused(f"--runs: at most {MAX_RUNS} run ids")
    for run in runs:
        _id(run, "--runs")
    return runs


def _id(value: str, flag: str) -> None:
    try:
        validate_id(value, flag)
    except InvalidIdentifier as error:
        raise TokenRefused(str(error)) from None


def mint(settings: Settings, tenant: str, sub: str, scopes: str, runs: str | None,
         ttl: int) -> str:
    """The token, or `TokenRefused`/`ConfigurationError` saying why not."""
    if ALGORITHM not in settings.token_algorithms():
        raise TokenRefused(
            f"this server accepts only {', '.join(settings.token_algorithms())} tokens "
            "(RUNNEL_JWT_ALGORITHMS): mint them with the issuer of its JWKS")
    limit = settings.max_token_lifetime_seconds
    if not 0 < ttl <= limit:
        raise TokenRefused(f"--ttl must be 1 to {limit} seconds "
                           "(RUNNEL_MAX_TOKEN_LIFETIME_SECONDS)")
    _id(tenant, "--tenant")
    if not 0 < len(sub) <= MAX_SUBJECT_LENGTH:
        raise TokenRefused(f"--sub must be 1 to {MAX_SUBJECT_LENGTH} characters")
    claims_scopes, claims_runs = scopes_of(scopes), runs_of(runs)
    return mint_token(server_secret(settings), tenant=tenant, sub=sub, scopes=claims_scopes,
                      runs=claims_runs, ttl_seconds=ttl, issuer=settings.jwt_issuer,
                      audience=settings.jwt_audience)


def token_command(settings: Settings, tenant: str, sub: str, scopes: str, runs: str | None,
                  ttl: int) -> int:
    try:
        print(mint(settings, tenant, sub, scopes, runs, ttl))
    except TokenRefused as refused:
        print(f"runnel token: {refused}", file=sys.stderr)
        return 2
    return 0
