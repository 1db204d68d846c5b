"""Key pairs, a JWKS and an issuer serving it over HTTP, for the token-verification tests."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


def hmac_signed(payload: dict[str, object], key: bytes, header: dict[str, str]) -> str:
    """A JWS signed by hand: PyJWT itself refuses a PEM as an HMAC secret."""
    def part(value: dict[str, object]) -> str:
        return jwt.utils.base64url_encode(json.dumps(value).encode()).decode()

    signing_input = f"{part(header)}.{part(payload)}"
    digest = hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{jwt.utils.base64url_encode(digest).decode()}"


class Issuer:
    """Serves `document` at /jwks.json and counts the GETs."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.fetches += 1
                body = json.dumps(issuer.document).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}/jwks.json"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
