"""Redaction: JSON pointers (RFC 6901) masked before a record is stored."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.redaction import MASK, parse_pointer, redact

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=3),
    max_leaves=10,
)
POINTERS = st.lists(st.text(max_size=3).map(lambda token: token.replace("~", "~0")),
                    min_size=1, max_size=3).map(lambda tokens: "/" + "/".join(tokens))


@pytest.mark.parametrize(("pointer", "tokens"), [
    ("/user/email", ("user", "email")),
    ("/", ("",)),
    ("/a~1b", ("a/b",)),
    ("/m~0n", ("m~n",)),
    ("/~01", ("~1",)),  # ~0 then 1, not ~1: unescape ~1 before ~0
    ("/items/0", ("items", "0")),
])
def test_pointers_split_into_unescaped_tokens(pointer: str, tokens: tuple[str, ...]) -> None:
    assert parse_pointer(pointer) == tokens


@pytest.mark.parametrize("pointer", ["", "a", "/a~", "/a~2b", "/~"])
def test_malformed_pointers_are_refused(pointer: str) -> None:
    with pytest.raises(ValueError):
        parse_pointer(pointer)


@pytest.mark.parametrize(("payload", "pointers", "expected"), [
    ({"user": {"email": "a@b", "name": "A"}}, ("/user/email",),
     {"user": {"email": MASK, "name": "A"}}),
    ({"a/b": 1, "m~n": 2, "c": 3}, ("/a~1b", "/m~0n"), {"a/b": MASK, "m~n": MASK, "c": 3}),
    ({"items": [{"s": 1}, {"s": 2}]}, ("/items/1/s",), {"items": [{"s": 1}, {"s": MASK}]}),
    ([1, 2, 3], ("/0",), [MASK, 2, 3]),
    ({"a": {"b": 1}}, ("/a",), {"a": MASK}),  # a whole subtree is masked
    ({"": 1}, ("/",), {"": MASK}),
    ({"n": None}, ("/n",), {"n": MASK}),  # present-but-null is still present
])
def test_existing_paths_are_masked(payload: Any, pointers: tuple[str, ...], expected: Any) -> None:
    assert redact(payload, pointers) == expected


@pytest.mark.parametrize(("payload", "pointer"), [
    ({"user": {}}, "/user/email"),
    ({"user": "text"}, "/user/email"),
    ({"items": [1]}, "/items/1"),
    ({"items": [1]}, "/items/-"),
    ({"items": [1]}, "/items/x"),
    ({"items": [[1, 2]]}, "/items/²"),  # a unicode digit is not an array index
    ({"items": [[1, 2]]}, "/items/0/²"),
    ({"items": [1, 2]}, "/items/١"),
    ("scalar", "/a"),
    (None, "/a"),
    ({"a": None}, "/a/b"),
])
def test_paths_that_do_not_resolve_are_ignored(payload: Any, pointer: str) -> None:
    assert redact(payload, (pointer,)) == payload


def test_no_pointers_returns_the_payload_unchanged() -> None:
    payload = {"a": 1}
    assert redact(payload, ()) == {"a": 1}


@given(JSON, st.lists(POINTERS, max_size=4))
def test_the_input_is_never_modified_and_only_masks_are_introduced(
        payload: Any, pointers: list[str]) -> None:
    before = copy.deepcopy(payload)
    result = redact(payload, tuple(pointers))
    assert payload == before
    assert_only_masks_differ(before, result)


@given(JSON, st.lists(POINTERS, max_size=4))
def test_redaction_is_idempotent(payload: Any, pointers: list[str]) -> None:
    once = redact(payload, tuple(pointers))
    assert redact(once, tuple(pointers)) == once


def assert_only_masks_differ(original: Any, redacted: Any) -> None:
    """`redacted` has the shape of `original`, except subtrees replaced by the mask."""
    if redacted == MASK:
        return
    if isinstance(original, dict):
        assert isinstance(redacted, dict) and redacted.keys() == original.keys()
        for key in original:
            assert_only_masks_differ(original[key], redacted[key])
    elif isinstance(original, list):
        assert isinstance(redacted, list) and len(redacted) == len(original)
        for left, right in zip(original, redacted, strict=True):
            assert_only_masks_differ(left, right)
    else:
        assert redacted == original
