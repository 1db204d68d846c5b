"""The server's bounds on definitions are settings, each at least its SPEC default."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from domain.credit_ceilings import CreditCeilings
from entrypoints.composition.settings import Settings


def test_the_ceilings_and_the_stream_cap_reach_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNEL_MAX_STREAMS_PER_RUN", "7")
    monkeypatch.setenv("RUNNEL_MAX_TOTAL_BYTES_CEILING", str(2 * 1024**3))
    node = Settings().node()
    assert node.max_streams_per_run == 7
    assert node.credit_ceilings == CreditCeilings(max_total_bytes=2 * 1024**3)


@pytest.mark.parametrize(("variable", "value"), [
    ("RUNNEL_MAX_UNREAD_ITEMS_CEILING", "999"),  # below the SPEC default of 1000
    ("RUNNEL_MAX_UNREAD_ITEMS_CEILING", str(2**63)),  # above the absolute maximum (a bigint)
    ("RUNNEL_MAX_UNREAD_BYTES_CEILING", str(8 * 1024**2 - 1)),
    ("RUNNEL_MAX_TOTAL_ITEMS_CEILING", "99999"),
    ("RUNNEL_MAX_TOTAL_BYTES_CEILING", str(1024**3 - 1)),
    ("RUNNEL_MAX_OPEN_OBJECTS_CEILING", "99"),
    ("RUNNEL_MAX_STREAMS_PER_RUN", "0"),
])
def test_a_bound_below_what_the_spec_defaults_need_is_refused(
        monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError):
        Settings()
