"""Docs that find things: every path the README and `docs/` name, and every relative link,
leads to something in the checkout.

A path is a code span that starts with one of the checkout's top folders (`domain/`,
`tests/`, `deploy/`, …) and names a file (its last part has a suffix) or a folder (it
ends in `/`): `adapters/postgres/store.py`, `entrypoints/http/sse/`, never a media type
such as `application/json`. A span
holding a placeholder (`{`, `<`, `…`, `*`) names no one file and is not checked, nor is a
folder that `make` creates (`node_modules`). A link is a Markdown link to a relative
address, resolved from the document's own folder; an `#anchor` must be a heading there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
DOCUMENTS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
             REPO / "docs" / "adr" / "README.md", REPO / "sdk" / "python" / "README.md")
TOP_FOLDERS = ("domain/", "application/", "adapters/", "entrypoints/", "tests/", "deploy/",
               "docs/", "sdk/", "bench/", "examples/")
PLACEHOLDERS = ("{", "<", "…", "*", "node_modules")
CODE_SPAN = re.compile(r"`([^`\s]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def name(document: Path) -> str:
    return str(document.relative_to(REPO))


def is_path(span: str) -> bool:
    return (span.startswith(TOP_FOLDERS) and not any(mark in span for mark in PLACEHOLDERS)
            and (span.endswith("/") or "." in span.rsplit("/", 1)[-1]))


def anchors(document: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", FENCE.sub("", document.read_text()), re.MULTILINE):
        text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower())
        found.add(text.replace(" ", "-"))
    return found


@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_every_named_path_exists(document: Path) -> None:
    prose = FENCE.sub("", document.read_text())
    missing = [span for span in CODE_SPAN.findall(prose) if is_path(span)
               and not (REPO / span).exists()]
    assert missing == [], f"{name(document)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_every_relative_link_leads_somewhere(document: Path) -> None:
    broken = []
    for link in LINK.findall(FENCE.sub("", document.read_text())):
        if re.match(r"^[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (document.parent / path).resolve() if path else document
        unknown_anchor = bool(anchor) and target.suffix == ".md" and (
            not target.exists() or anchor not in anchors(target))
        if not target.exists() or unknown_anchor:
            broken.append(link)
    assert broken == [], f"{name(document)} links to nothing: {broken}"
