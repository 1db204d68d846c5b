"""Residency decisions: where a stream's metadata, content and objects may live or leave.

Compute can move; data does not follow it. These answer from the pins and the
region of the node that serves the request.
"""

from __future__ import annotations

from domain.definition import PlacementPins
from domain.errors import EgressDenied, WrongRegion


def ensure_may_write_here(placement: PlacementPins, node_region: str) -> None:
    """Writes are accepted only at the metadata home."""
    if node_region != placement.metadata_home:
        raise WrongRegion(
            f"writes for this stream are accepted only in {placement.metadata_home}",
            metadata_home=placement.metadata_home,
            region=node_region,
        )


def ensure_may_serve_content_here(placement: PlacementPins, node_region: str) -> None:
    """Record content leaves only through nodes in the client-egress regions."""
    if node_region not in placement.client_egress_regions:
        raise EgressDenied(
            f"content of this stream may not leave through {node_region}",
            region=node_region,
            allowed=list(placement.client_egress_regions),
        )


def object_region_for(placement: PlacementPins, node_region: str) -> str:
    """Where a body goes: the node's own region only if pinned, else the first pinned one."""
    if node_region in placement.object_regions:
        return node_region
    return placement.object_regions[0]
