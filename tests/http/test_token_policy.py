"""Token verification beyond the signature: bounded lifetimes, issuer and audience, and
RS256/EdDSA against a JWKS with no algorithm confusion (ADR 0024)."""

from __future__ import annotations

import time
from pathlib import Path

import jwt
import pytest

from domain.errors import Unauthenticated
from entrypoints.auth.jwks import StaticKeys, parse_jwks
from entrypoints.auth.tokens import TokenPolicy, TokenVerifier, mint_token, verify_token
from entrypoints.composition.settings import ConfigurationError
from tests.http.token_keys import (
    claims,
    ed25519_key,
    hmac_signed,
    jwks,
    rsa_key,
    write_jwks,
)

SECRET = "policy-secret-0123456789abcdef0123456789"
RSA = rsa_key()
ED = ed25519_key()
OTHER_RSA = rsa_key("rsa-1")  # same kid as RSA, another key
ASYMMETRIC = TokenPolicy(algorithms=("RS256", "EdDSA"))


def hs256(**overrides: object) -> str:
    return jwt.encode(claims(**overrides), SECRET, algorithm="HS256")


def refusal(verifier: TokenVerifier, token: str) -> str:
    with pytest.raises(Unauthenticated) as refused:
        verifier.verify(token)
    return str(refused.value)


@pytest.fixture
def keys() -> StaticKeys:
    return StaticKeys(parse_jwks(jwks(RSA, ED)))


# -- bounded lifetimes --------------------------------------------------------------------

@pytest.mark.parametrize("token", [
    hs256(exp=1e30),
    hs256(exp=10**30),
    jwt.encode({k: v for k, v in claims(exp=1e30).items() if k != "iat"}, SECRET,
               algorithm="HS256"),
], ids=["float-with-iat", "int-with-iat", "without-iat"])
def test_an_exp_of_1e30_is_refused(token: str) -> None:
    with pytest.raises(Unauthenticated, match="lifetime exceeds the maximum of 86400"):
        verify_token(token, SECRET)


def test_a_lifetime_over_the_maximum_is_refused_and_at_the_maximum_accepted() -> None:
    now = int(time.time())
    policy = TokenPolicy(max_lifetime_seconds=3600)
    verify_token(hs256(iat=now, exp=now + 3600), SECRET, policy)
    with pytest.raises(Unauthenticated, match="lifetime exceeds the maximum of 3600 seconds"):
        verify_token(hs256(iat=now, exp=now + 3601), SECRET, policy)
    # A 100-year token issued long ago is still far too long, although its iat is old.
    with pytest.raises(Unauthenticated, match="lifetime exceeds"):
        verify_token(hs256(iat=now - 3600, exp=now + 100 * 365 * 86400), SECRET)


def test_without_iat_the_lifetime_is_counted_from_now() -> None:
    policy = TokenPolicy(max_lifetime_seconds=3600)
    base = {k: v for k, v in claims().items() if k != "iat"}
    verify_token(jwt.encode({**base, "exp": int(time.time()) + 3000}, SECRET), SECRET, policy)
    with pytest.raises(Unauthenticated, match="lifetime exceeds"):
        verify_token(jwt.encode({**base, "exp": int(time.time()) + 7200}, SECRET), SECRET,
                     policy)


def test_an_iat_in_the_future_is_refused() -> None:
    with pytest.raises(Unauthenticated, match="not valid yet"):
        verify_token(hs256(iat=int(time.time()) + 3600, exp=int(time.time()) + 4000), SECRET)


@pytest.mark.parametrize("exp", ["99999999999", True, [1]], ids=["string", "bool", "list"])
def test_an_exp_of_another_type_is_refused_not_a_crash(exp: object) -> None:
    with pytest.raises(Unauthenticated):
        verify_token(hs256(exp=exp), SECRET)


# -- issuer and audience --------------------------------------------------------------------

BOUND = TokenPolicy(issuer="https://idp.example", audience="runnel")


@pytest.mark.parametrize(("extra", "reason"), [
    ({"iss": "https://evil.example", "aud": "runnel"}, "issuer"),
    ({"aud": "runnel"}, "lacks the iss claim"),
    ({"iss": "https://idp.example", "aud": "other"}, "audience"),
    ({"iss": "https://idp.example"}, "lacks the aud claim"),
], ids=["wrong-iss", "no-iss", "wrong-aud", "no-aud"])
def test_iss_and_aud_are_checked_when_configured(extra: dict[str, str], reason: str) -> None:
    with pytest.raises(Unauthenticated, match=reason):
        verify_token(hs256(**extra), SECRET, BOUND)


def test_matching_iss_and_aud_are_accepted_and_minted_tokens_carry_them() -> None:
    principal = verify_token(hs256(iss="https://idp.example", aud=["x", "runnel"]), SECRET,
                             BOUND)
    assert principal.tenant == "t1"
    minted = mint_token(SECRET, tenant="t1", sub="s", scopes=[], issuer="https://idp.example",
                        audience="runnel")
    assert verify_token(minted, SECRET, BOUND).sub == "s"
    with pytest.raises(Unauthenticated):
        verify_token(mint_token(SECRET, tenant="t1", sub="s", scopes=[]), SECRET, BOUND)


# -- JWKS -------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", [RSA, ED], ids=["RS256", "EdDSA"])
def test_rs256_and_eddsa_tokens_verify_against_a_jwks_file(tmp_path: Path, key: object) -> None:
    assert key is RSA or key is ED
    verifier = TokenVerifier(ASYMMETRIC, keys=StaticKeys.from_file(
        write_jwks(tmp_path / "jwks.json", RSA, ED)))
    principal = verifier.verify(key.sign(claims(jti="j1")))
    assert (principal.sub, principal.tenant, principal.token_id) == ("alice", "t1", "j1")


def test_a_token_signed_by_another_key_is_refused(keys: StaticKeys) -> None:
    verifier = TokenVerifier(ASYMMETRIC, keys=keys)
    assert "signature does not match" in refusal(verifier, OTHER_RSA.sign(claims()))
    assert "signature does not match" in refusal(verifier, ed25519_key("ed-1").sign(claims()))


def test_a_kid_naming_another_algorithms_key_is_refused(keys: StaticKeys) -> None:
    """An EdDSA token that names the RSA key's kid never reaches a signature check."""
    verifier = TokenVerifier(ASYMMETRIC, keys=keys)
    assert "does not match its key" in refusal(verifier, ED.sign(claims(), kid=RSA.kid))


def test_tokens_without_kid_or_with_an_unknown_kid_are_refused(keys: StaticKeys) -> None:
    verifier = TokenVerifier(ASYMMETRIC, keys=keys)
    assert "no key id" in refusal(verifier, RSA.sign(claims(), kid=None))
    assert "not in the issuer's key set" in refusal(verifier, RSA.sign(claims(), kid="nope"))


def test_hs256_signed_with_the_public_key_as_secret_is_refused(keys: StaticKeys) -> None:
    """Algorithm confusion: the attacker knows the public key and signs HS256 with it."""
    token = hmac_signed(claims(), RSA.public_pem, {"alg": "HS256", "kid": RSA.kid})
    # Default JWKS policy: HS256 is not accepted at all.
    assert "algorithm is not accepted" in refusal(TokenVerifier(ASYMMETRIC, keys=keys), token)
    # Even with HS256 also accepted, HS256 is checked with the secret only, never a JWKS key.
    both = TokenVerifier(TokenPolicy(algorithms=("RS256", "HS256")), SECRET, keys)
    assert "signature does not match" in refusal(both, token)
    assert both.verify(hs256()).sub == "alice"
    assert both.verify(RSA.sign(claims())).sub == "alice"


@pytest.mark.parametrize("alg", ["none", "HS512", "RS512", "ES256"])
def test_algorithms_outside_the_list_are_refused(keys: StaticKeys, alg: str) -> None:
    token = hmac_signed(claims(), b"x", {"alg": alg, "kid": RSA.kid})
    assert "algorithm is not accepted" in refusal(TokenVerifier(ASYMMETRIC, keys=keys), token)


def test_a_jwks_keeps_only_asymmetric_keys_with_a_kid() -> None:
    oct_key = {"kty": "oct", "kid": "shared", "k": jwt.utils.base64url_encode(
        SECRET.encode()).decode()}
    no_kid = {k: v for k, v in RSA.public_jwk.items() if k != "kid"}
    lying = {**ED.public_jwk, "kid": "ed-as-hs", "alg": "HS256"}
    encryption = {**RSA.public_jwk, "kid": "enc", "use": "enc"}
    keys = parse_jwks(jwks(RSA, extra=[oct_key, no_kid, lying, encryption]))
    assert set(keys) == {RSA.kid}
    verifier = TokenVerifier(TokenPolicy(algorithms=("RS256", "HS256")), SECRET,
                             StaticKeys(keys))
    shared = jwt.encode(claims(), SECRET + "-other-0123456789", algorithm="HS256",
                        headers={"kid": "shared"})
    assert "signature does not match" in refusal(verifier, shared)


def test_a_jwks_file_that_cannot_serve_is_a_configuration_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    empty = tmp_path / "empty.json"
    empty.write_text('{"keys": []}')
    for path, reason in ((tmp_path / "missing.json", "No such file"), (broken, "Expecting"),
                         (empty, "no RS256 or EdDSA key")):
        with pytest.raises(ConfigurationError, match=reason):
            StaticKeys.from_file(path)
