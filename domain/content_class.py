"""The content-class rule: one spelling per class, and no disguise for a forbidden one.

Rules:

- **Normalised before anything looks at it.** A requested class is NFKC-normalised,
  case-folded (and NFKC-normalised again, as Unicode's NFKC_Casefold does) and
  stripped of surrounding whitespace; the normalised form is what the definition pins.
  `Ｍodel.Reasoning.RAW ` therefore names `model.reasoning.raw`.
- **A small alphabet.** The normalised class is 1-128 characters of `[a-z0-9._:-]`
  starting with a letter or digit; anything else (an inner space or newline, a
  zero-width or other invisible character, any non-ASCII letter left after NFKC) is
  refused, so no two spellings the eye cannot tell apart pin different classes.
- **Forbidden classes are found through any disguise.** The check reads the class's
  skeleton (normalised, with every whitespace and format character such as U+200B
  removed), so a rule keyed on `model.reasoning.raw` cannot be dodged by a trailing
  space, a newline, a zero-width character or full-width letters; such a class is
  refused as forbidden (`invalid_content_class`), not merely as malformed.
- **A forbidden class is a family** (ADR 0055). A skeleton is forbidden when it holds a
  forbidden class that starts the skeleton or follows a separator (`.`, `:`, `-`, `_`,
  or anything else that is not a letter or digit), and that ends it or is followed by a
  separator or a digit: a sub-class (`model.reasoning.raw.summary`), a version
  (`model.reasoning.raw.v2`, `…raw:2`, `…raw-2`, `…raw_v2`, `…raw2`) or a namespaced
  copy (`acme:model.reasoning.raw`); the forbidden class's own dots may be any
  separator (`model_reasoning_raw`). A letter on either side makes another word:
  `model.reasoning.rawhide` and `model.reasoning.summary` are other classes.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from domain.errors import ForbiddenContentClass, InvalidDefinition

FORBIDDEN_CONTENT_CLASSES = frozenset({"model.reasoning.raw"})
"""Raw hidden model reasoning: no stream may carry it."""
_SEPARATOR = r"[\W_]"
"""Anything but a letter or a digit."""
_FORBIDDEN_FAMILY = re.compile("|".join(
    # Not after a letter or digit; its dots any separator; not before a letter.
    r"(?<![^\W_])" + _SEPARATOR.join(map(re.escape, name.split("."))) + r"(?![^\W\d_])"
    for name in sorted(FORBIDDEN_CONTENT_CLASSES)))
CONTENT_CLASS_MAX_CHARS = 128
CONTENT_CLASS_PATTERN = re.compile(r"[a-z0-9][a-z0-9._:-]{0,127}")
_FIELD = "content_class"


def _fold(value: str) -> str:
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", value).casefold())


def skeleton(value: str) -> str:
    """What the class reads as: folded, with whitespace and invisible format characters
    (Unicode category Cf: zero-width spaces and joiners, bidi marks, …) removed."""
    return "".join(char for char in _fold(value)
                   if not char.isspace() and unicodedata.category(char) != "Cf")


def is_forbidden(value: str) -> bool:
    """Whether a class belongs to a forbidden family, in any disguise (module rules)."""
    return _FORBIDDEN_FAMILY.search(skeleton(value)) is not None


def refuse_forbidden(value: Any) -> None:
    """Raise `ForbiddenContentClass` when `value` belongs to a forbidden family in any
    disguise. Anything but a string is left to the type checks."""
    if isinstance(value, str) and is_forbidden(value):
        raise ForbiddenContentClass(f"content_class {value!r} may not be streamed",
                                    field=_FIELD)


def normalize_content_class(value: Any) -> Any:
    """The pinned spelling of a requested class (see the module rules).

    Raises `ForbiddenContentClass` for a forbidden class and `InvalidDefinition` for a
    string outside the alphabet; a non-string is returned as is, for the type checks."""
    if not isinstance(value, str):
        return value
    refuse_forbidden(value)
    normalized = _fold(value).strip()
    if CONTENT_CLASS_PATTERN.fullmatch(normalized) is None:
        raise InvalidDefinition(
            f"{_FIELD}: 1-{CONTENT_CLASS_MAX_CHARS} characters of a-z, 0-9, '.', '_', ':' "
            "and '-', starting with a letter or digit (after NFKC, case folding and "
            "stripping)", field=_FIELD)
    return normalized
