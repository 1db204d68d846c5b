"""The content class: one normalised spelling, a small alphabet, and no disguise that lets
a forbidden class through (ADR 0025)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from domain.content_class import CONTENT_CLASS_PATTERN, is_forbidden
from domain.definition import build_definition
from domain.errors import ForbiddenContentClass, InvalidDefinition
from tests.domain.factories import NODE_REGION

RAW = "model.reasoning.raw"
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e"]
SPACES = [" ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2003"]


def build(content_class: object) -> str:
    return build_definition({"stream_id": "s", "content_class": content_class},
                            NODE_REGION).content_class


def full_width(char: str) -> str:
    """The full-width form of an ASCII letter, digit or dot (NFKC maps it back)."""
    return chr(ord(char) - 0x21 + 0xFF01) if "!" <= char <= "~" else char


@st.composite
def disguised(draw: st.DrawFn, name: str) -> str:
    """`name` with any mix of case changes, full-width letters, invisible characters
    between letters and whitespace around it."""
    chars = []
    for char in name:
        char = draw(st.sampled_from([char, char.upper()]))
        if draw(st.booleans()):
            char = full_width(char)
        chars.append(char)
        if draw(st.integers(0, 5)) == 0:
            chars.append(draw(st.sampled_from(INVISIBLE)))
    around = st.lists(st.sampled_from(SPACES + INVISIBLE), max_size=3).map("".join)
    return draw(around) + "".join(chars) + draw(around)


@pytest.mark.parametrize("spelling", [
    RAW + " ", RAW + "\n", " \t" + RAW, "model.reasoning.raw\u200b", "model.\u200breasoning.raw",
    "ｍｏｄｅｌ.ｒｅａｓｏｎｉｎｇ.ｒａｗ", "Model.Reasoning.RAW\r\n", "\ufeff" + RAW,
])
def test_the_reported_disguises_of_raw_reasoning_are_refused_as_forbidden(spelling: str) -> None:
    with pytest.raises(ForbiddenContentClass) as refused:
        build(spelling)
    assert refused.value.extra["field"] == "content_class"


@given(disguised(RAW))
def test_raw_reasoning_is_refused_through_any_disguise(spelling: str) -> None:
    with pytest.raises(ForbiddenContentClass):
        build(spelling)


@given(st.text(max_size=140))
def test_an_accepted_class_is_normalised_in_the_alphabet_and_never_forbidden(
        requested: str) -> None:
    try:
        pinned = build(requested)
    except (ForbiddenContentClass, InvalidDefinition):
        return
    assert CONTENT_CLASS_PATTERN.fullmatch(pinned)
    assert pinned == unicodedata.normalize("NFKC", requested).casefold().strip()
    assert not is_forbidden(pinned)
    assert build(pinned) == pinned  # normalising twice changes nothing


@pytest.mark.parametrize(("requested", "pinned"), [
    ("Output.Text", "output.text"), ("  output.text\n", "output.text"),
    ("ｏｕｔｐｕｔ.text", "output.text"), ("model.reasoning.summary", "model.reasoning.summary"),
])
def test_a_class_is_pinned_in_its_normalised_spelling(requested: str, pinned: str) -> None:
    assert build(requested) == pinned


@pytest.mark.parametrize("requested", [
    "output text", "output\ntext", "output.text\u200b", "ausgabe.größe", "-output", ".x",
    "a/b", "x" * 129, "", "   ",
])
def test_a_class_outside_the_alphabet_is_an_invalid_definition(requested: str) -> None:
    with pytest.raises(InvalidDefinition) as refused:
        build(requested)
    assert refused.value.extra["field"] == "content_class"


SEPARATORS = [".", ":", "-", "_"]
FAMILY = ["model.reasoning.raw.v2", "model.reasoning.raw:x", "model.reasoning.raw-2",
          "model.reasoning.raw_v2", "model.reasoning.raw2", "model.reasoning.raw.summary",
          "model.reasoning.raw.", "model.reasoning.raw::", "acme:model.reasoning.raw",
          "vendor.model.reasoning.raw.v1", "model_reasoning_raw", "model:reasoning-raw.v3",
          "x-model.reasoning.raw-y", "Model.Reasoning.RAW.V2", "model.reasoning.raw\u200b.v2",
          "ｍｏｄｅｌ.ｒｅａｓｏｎｉｎｇ.ｒａｗ．ｖ２"]
OTHERS = ["model.reasoning.rawhide", "model.reasoning.raws", "model.reasoning.summary",
          "xmodel.reasoning.raw", "model.reasoningraw", "modelreasoningraw",
          "model.reasoning.rawdata.v2", "2model.reasoning.raw"]


@pytest.mark.parametrize("spelling", FAMILY)
def test_every_class_of_the_raw_reasoning_family_is_refused_as_forbidden(spelling: str) -> None:
    with pytest.raises(ForbiddenContentClass) as refused:
        build(spelling)
    assert refused.value.extra["field"] == "content_class"
    assert is_forbidden(spelling)


@pytest.mark.parametrize("spelling", OTHERS)
def test_a_letter_beside_the_forbidden_class_makes_another_class(spelling: str) -> None:
    assert build(spelling) == spelling
    assert not is_forbidden(spelling)


SUFFIX = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._:-", max_size=20)


@given(st.sampled_from(["", "acme:", "vendor.", "x-", "a_"]), disguised(RAW),
       st.sampled_from(SEPARATORS) | st.integers(0, 9).map(str), SUFFIX)
def test_a_sub_class_version_or_namespaced_copy_of_raw_reasoning_is_refused(
        prefix: str, root: str, separator: str, suffix: str) -> None:
    with pytest.raises(ForbiddenContentClass):
        build(prefix + root.strip() + separator + suffix)


@given(st.sampled_from(SEPARATORS), st.sampled_from(SEPARATORS))
def test_the_forbidden_class_is_found_whatever_separators_spell_it(first: str,
                                                                   second: str) -> None:
    with pytest.raises(ForbiddenContentClass):
        build(f"model{first}reasoning{second}raw")


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=3), SUFFIX)
def test_a_word_that_only_starts_like_the_forbidden_class_is_another_class(
        letters: str, suffix: str) -> None:
    requested = RAW + letters + suffix
    assume(not is_forbidden(letters + suffix))
    assert build(requested) == requested
