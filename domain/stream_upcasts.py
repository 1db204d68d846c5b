"""Upcasting `Stream` snapshots of older class versions, in place (eventsourcing calls
`Stream.upcast_vN_vM` on the snapshot's state before it builds the aggregate).

Version 1 let any reader register a consumer by acking it; version 2 kept the sizes
of the unread records (the loader puts them back for both); version 3 keeps byte
offsets (docs/adr/0047).
"""

from __future__ import annotations

from typing import Any


def upcast_v1_v2(state: dict[str, Any]) -> None:
    """A version-1 snapshot let any reader register a consumer by acking it, to the
    first acker. Only declared consumers remain, owned by nobody, and the floor
    rises to what the declared ones (or, without any, the head) allow. Its open
    intents reserved nothing (their bodies are counted when they commit)."""
    state.setdefault("reservations", {})
    declared = state["definition"].consumer_ids
    acks = state["acks"]
    state["acks"] = {consumer: acks.get(consumer, 0) for consumer in declared}
    state.pop("owners", None)
    candidate = min(state["acks"].values()) if declared else state["head"]
    floor = state.get("unread_floor", 0)
    target = min(max(floor, candidate, state["earliest"] - 1), state["head"])
    sizes = state["unread_sizes"]
    state["unread_floor"], state["unread_sizes"] = target, sizes[max(target - floor, 0):]
    state["unread_bytes"] = sum(state["unread_sizes"])



def upcast_v2_v3(state: dict[str, Any]) -> None:
    """A version-2 snapshot kept the sizes of its unread records; its loader puts them
    back (`unread_sizes`, oldest first) with `head_offset`, the byte offset through the
    head as the stored records give it (docs/adr/0047). The window becomes counters,
    and each ack above the floor gets the offset through it from the sizes."""
    sizes: list[int] = state.pop("unread_sizes")
    head_offset: int = state["head_offset"]
    floor = state["unread_floor"]
    state["unread_bytes"] = sum(sizes)
    floor_offset = head_offset - state["unread_bytes"]
    through = [floor_offset]
    for size in sizes:
        through.append(through[-1] + size)
    state["ack_offsets"] = {consumer: through[acked - floor] if acked >= floor else None
                            for consumer, acked in state["acks"].items()}
