"""Mistakes `mypy --strict` must catch (test_typing_examples expects exactly these)."""
from runnel_client import AsyncRunnelClient, LiveEvent


async def mistakes(rn: AsyncRunnelClient) -> None:
    async for record in rn.follow("r", "s"):
        print(record.chunk)  # a Record has no chunk: live=False yields records only
    async for item in rn.follow("r", "s", live=True):
        print(item.sequence)  # a LiveEvent has no sequence: check the type first
    page = await rn.read("r", "s")
    print(page.records[0].sequence + "1")  # an int, not a str
    event: LiveEvent = page.records[0]  # a page holds records
    print(event)
