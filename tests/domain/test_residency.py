"""Residency: writes only at the metadata home, content out only via egress regions,
bodies only into pinned object regions this node has a store for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.errors import EgressDenied, WrongRegion
from domain.pins import PlacementPins
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
    assert object_region_for(PLACEMENT, node, lambda region: True) == target


def test_bodies_skip_a_pinned_region_this_node_has_no_store_for() -> None:
    assert object_region_for(PLACEMENT, "eu-1", {"eu-2"}.__contains__) == "eu-2"
    assert object_region_for(PLACEMENT, "us-1", {"eu-1"}.__contains__) == "eu-1"


def test_no_store_here_for_any_pinned_region_is_no_region() -> None:
    assert object_region_for(PLACEMENT, "eu-1", {"eu-1-backup", "us-1"}.__contains__) is None


REGION = st.sampled_from(["a", "b", "c", "d"])


@given(pinned=st.lists(REGION, min_size=1, max_size=4, unique=True), node=REGION,
       served=st.frozensets(REGION))
def test_a_body_goes_only_to_a_pinned_region_served_here_preferring_the_nodes_own(
        pinned: list[str], node: str, served: frozenset[str]) -> None:
    placement = PlacementPins(metadata_home=node, object_regions=tuple(pinned),
                              client_egress_regions=(node,), log_region=node)
    target = object_region_for(placement, node, served.__contains__)
    candidates = [region for region in pinned if region in served]
    if not candidates:
        assert target is None
    elif node in candidates:
        assert target == node
    else:
        assert target == candidates[0]
