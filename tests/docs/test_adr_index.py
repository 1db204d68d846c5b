"""The decision records find each other: every record opens with its title and a status
line, and `docs/adr/README.md` lists every record with that title and that status."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ADR = Path(__file__).parents[2] / "docs" / "adr"
RECORDS = sorted(ADR.glob("[0-9][0-9][0-9][0-9]-*.md"))
STATUS = re.compile(r"^Status: (current|(amended|superseded) by \d{4}(, \d{4})*)$")
ROW = re.compile(r"^\| (?:\[(\d{4})\]\(([^)]+)\)|(\d{4})) \| (.*?) \| (.*?) \| (.*?) \|$")


def status_of(record: Path) -> str:
    """The record's status line: the first line after its title that is not blank."""
    return next(line for line in record.read_text().splitlines()[1:] if line.strip())


def index() -> dict[str, tuple[str | None, str, str]]:
    """Number → (the file it links to, title, status)."""
    rows = {}
    for line in (ADR / "README.md").read_text().splitlines():
        match = ROW.match(line)
        if match is not None:
            number = match.group(1) or match.group(3)
            assert number not in rows, f"{number} is listed twice"
            rows[number] = (match.group(2), match.group(4), match.group(5))
    return rows


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.name[:4])
def test_a_record_opens_with_its_title_and_status(record: Path) -> None:
    assert record.read_text().startswith(f"# {record.name[:4]} — ")
    status = status_of(record)
    assert STATUS.match(status), f"{record.name}: {status!r} under the title, not a status"


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.name[:4])
def test_the_index_lists_the_record_as_it_is(record: Path) -> None:
    title = record.read_text().splitlines()[0].split(" — ", 1)[1]
    listed = index().get(record.name[:4])
    assert listed is not None, f"{record.name} is not in docs/adr/README.md"
    assert listed == (record.name, title, status_of(record).removeprefix("Status: "))


def test_every_status_names_a_listed_record() -> None:
    rows = index()
    assert list(rows) == sorted(rows)
    for number, (_, _, status) in rows.items():
        for named in re.findall(r"\d{4}", status):
            assert named in rows and named > number, f"{number}: {status}"
