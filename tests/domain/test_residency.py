"""Residency: writes only at the metadata home, content out only via egress regions,
bodies only into pinned object regions."""

from __future__ import annotations

import pytest

from domain.definition import PlacementPins
from domain.errors import EgressDenied, WrongRegion
from domain.residency import (
    ensure_may_serve_content_here,
    ensure_may_write_here,
    object_region_for,
)

PLACEMENT = PlacementPins(metadata_home="eu-1", metadata_replicas=("eu-2",),
                          object_regions=("eu-2", "eu-1"), client_egress_regions=("eu-1", "us-1"),
                          log_region="eu-3")


def test_writes_are_accepted_at_the_metadata_home() -> None:
    ensure_may_write_here(PLACEMENT, "eu-1")


@pytest.mark.parametrize("region", ["eu-2", "us-1", "eu-3"])
def test_writes_anywhere_else_are_wrong_region_even_at_a_replica(region: str) -> None:
    with pytest.raises(WrongRegion) as refused:
        ensure_may_write_here(PLACEMENT, region)
    assert refused.value.extra == {"metadata_home": "eu-1", "region": region}


@pytest.mark.parametrize("region", ["eu-1", "us-1"])
def test_content_is_served_through_egress_regions(region: str) -> None:
    ensure_may_serve_content_here(PLACEMENT, region)


@pytest.mark.parametrize("region", ["eu-2", "eu-3", "ap-1"])
def test_content_is_refused_elsewhere_even_where_the_metadata_lives(region: str) -> None:
    with pytest.raises(EgressDenied) as refused:
        ensure_may_serve_content_here(PLACEMENT, region)
    assert refused.value.extra["allowed"] == ["eu-1", "us-1"]


@pytest.mark.parametrize(("node", "target"), [("eu-1", "eu-1"), ("eu-2", "eu-2"),
                                              ("us-1", "eu-2"), ("ap-1", "eu-2")])
def test_bodies_go_to_the_local_region_only_if_pinned_else_the_first_pinned(
        node: str, target: str) -> None:
    assert object_region_for(PLACEMENT, node) == target
