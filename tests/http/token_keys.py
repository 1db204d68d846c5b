"""Key pairs and a JWKS for the token-verification tests: RS256 and EdDSA, as an issuer has."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from jwt.algorithms import OKPAlgorithm, RSAAlgorithm


@dataclass(frozen=True)
class SigningKey:
    kid: str
    algorithm: str
    private: Any
    public_jwk: dict[str, Any]

    @property
    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(  # type: ignore[no-any-return]
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def sign(self, claims: dict[str, Any], kid: str | None = "own",
             algorithm: str | None = None) -> str:
        headers = {} if kid is None else {"kid": self.kid if kid == "own" else kid}
        return jwt.encode(claims, self.private, algorithm=algorithm or self.algorithm,
                          headers=headers)


def rsa_key(kid: str = "rsa-1") -> SigningKey:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    return SigningKey(kid, "RS256", private, {**jwk, "kid": kid, "use": "sig", "alg": "RS256"})


def ed25519_key(kid: str = "ed-1") -> SigningKey:
    private = ed25519.Ed25519PrivateKey.generate()
    jwk: dict[str, Any] = json.loads(OKPAlgorithm.to_jwk(private.public_key()))
    return SigningKey(kid, "EdDSA", private, {**jwk, "kid": kid})  # alg inferred from kty


def jwks(*keys: SigningKey, extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"keys": [key.public_jwk for key in keys] + list(extra or [])}


def write_jwks(path: Path, *keys: SigningKey) -> Path:
    path.write_text(json.dumps(jwks(*keys)))
    return path


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"sub": "alice", "tenant": "t1", "scopes": ["streams:read", "streams:write"],
            "iat": now, "exp": now + 600, "jti": f"jti-{time.monotonic_ns()}", **overrides}
