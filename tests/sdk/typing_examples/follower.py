"""A resuming follower in ten lines: checked with `mypy --strict` by test_typing_examples."""
from runnel_client import AsyncRunnelClient, Record


async def show_answer(url: str, token: str, run_id: str) -> list[str]:
    lines: list[str] = []
    async with AsyncRunnelClient(url, token) as rn:
        async for record in rn.stream(run_id, "answer").follow(consumer="ui", ack_every=10):
            assert isinstance(record, Record)  # live=False: nothing else comes
            lines.append(f"{record.sequence}: {record.payload}")
    return lines
