"""Residency decisions: where a stream's metadata, content and objects may live or leave.

Compute can move; data does not follow it. These answer from the pins and the
region of the node that serves the request.
"""

from __future__ import annotations

from collections.abc import Callable

from domain.errors import EgressDenied, WrongRegion
from domain.pins import PlacementPins


def ensure_may_write_here(placement: PlacementPins, node_region: str) -> None:
    """Every state change of a stream (append, ack, close, hold, erase, object steps, the
    workers' changes) happens only at its metadata home."""
    if node_region != placement.metadata_home:
        raise WrongRegion(
            f"writes for this stream are accepted only in {placement.metadata_home}",
            metadata_home=placement.metadata_home,
            region=node_region,
        )


def may_serve_metadata_here(placement: PlacementPins, node_region: str) -> bool:
    return node_region == placement.metadata_home or node_region in placement.metadata_replicas


def ensure_may_serve_metadata_here(placement: PlacementPins, node_region: str) -> None:
    """A stream's definition and status are served only at its home and its replicas."""
    if not may_serve_metadata_here(placement, node_region):
        raise WrongRegion(
            f"this stream's metadata is served only in {placement.metadata_home}"
            + "".join(f", {replica}" for replica in placement.metadata_replicas),
            metadata_home=placement.metadata_home,
            metadata_replicas=list(placement.metadata_replicas),
            region=node_region,
        )


def may_serve_content_here(placement: PlacementPins, node_region: str) -> bool:
    return node_region in placement.client_egress_regions


def ensure_may_serve_content_here(placement: PlacementPins, node_region: str) -> None:
    """Record content leaves only through nodes in the client-egress regions."""
    if not may_serve_content_here(placement, node_region):
        raise EgressDenied(
            f"content of this stream may not leave through {node_region}",
            region=node_region,
            allowed=list(placement.client_egress_regions),
        )


def object_region_for(placement: PlacementPins, node_region: str,
                      served_here: Callable[[str], bool]) -> str | None:
    """Where a body goes: a pinned region this node has a store for, its own region first,
    else the first such in pin order; None when it has a store for none of them."""
    candidates = [region for region in placement.object_regions if served_here(region)]
    if node_region in candidates:
        return node_region
    return candidates[0] if candidates else None
